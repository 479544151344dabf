#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Source hygiene checks of the emha tree (tests/run.sh runs them before any build).

  check_sources.py [PATH...]            check PATHs (files or folders, from the current folder or
                                        the checkout's root; default: the whole project)
  check_sources.py --fix-spdx PATH...   insert the SPDX line into the source files among PATHs
                                        (folders are walked) that lack it; idempotent

The checks, one output line per problem ("path:line: what"), then a summary; exit status 1 when
any problem was found:
  spdx   a source file (.cpp .hpp .h .c .cmake .cmake.in .py .sh .ld, CMakeLists.txt, any file
         under .ci/) without "SPDX-License-Identifier: Apache-2.0" in its first 3 lines.
         Generated data is not looked at: folders named fixtures, seed_fixtures,
         feature_fixtures, w8_fixtures or corpus.
  note   in lib/ and README.md, a lab note: "session N", "this machine" or "no board here"
         (any case), which mean nothing to a reader of the released tree.
  issue  in any file of the checkout (git ls-files, tracked or untracked but not ignored; the
         files under PATHs when PATHs are given), in a comment, a string or a document alike, a
         reference to an issue of a tracker: "issue #N" or "issues #N" (any case, "issue#N",
         "issue: #N" too), "issue N" ("issue no. N", "issue number N") and a bare "(#N)". Not
         flagged: an instruction issue rate ("issue 2 FMAs per cycle", "issues 4 x ..."), "#if",
         "#include", assembler immediates ("lsl #16"), headings, "$#"; the bare "(#N)" is not
         looked for in style sheets and HTML/SVG (a colour). Binary files (a NUL byte) and the
         fuzz corpus are skipped. Say what was meant instead: the feature, not its ticket.
  path   in lib/, a comment (or a Python docstring) naming a file of the tree (a token ending in
         .cpp .hpp .h .py .sh .cmake or .md) that does not exist: a path with a folder must be
         some file's path or the end of one ("src/isa.hpp" is lib/src/isa.hpp), or lead to a
         file from the commenting file's folder; a bare name must be some file's name. Not
         checked: an option's argument in a usage text ("--header OUT.hpp") and the names of
         other projects' files listed in EXTERNAL.
"""
import io
import os
import re
import subprocess
import sys
import tokenize

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_PATHS = ["CMakeLists.txt", ".ci", "bench", "lib", "ports", "tests", "toolchains",
                 "README.md"]

SPDX = "SPDX-License-Identifier: Apache-2.0"
SPDX_LINES = 3
# Folders of generated data (fixture headers and blobs, fuzz corpus): never source.
GENERATED_DIRS = {"fixtures", "seed_fixtures", "feature_fixtures", "w8_fixtures", "corpus"}
# Never part of the tree: build outputs and caches.
SKIP_DIRS = {".git", "build", "__pycache__"}

C_STYLE = (".cpp", ".hpp", ".h", ".c")
HASH_STYLE = (".cmake", ".cmake.in", ".py", ".sh")
BLOCK_STYLE = (".ld",)

# A public header's #if on an instruction-set feature macro: a size or layout the user's compiler
# flags could change against the library's (architecture macros, __x86_64__ or __arm__, are fine).
FLAG_IF_RE = re.compile(r"^\s*#\s*(?:el)?if.*\b(__ARM_FEATURE_\w+|__ARM_NEON\w*|__AVX\w*|__SSE\w*|__FMA__|__F16C__)")
NOTE_RE = re.compile(r"session [0-9]+|this machine|no board here", re.IGNORECASE)
# A reference to a tracker's issue: "issue #N"/"issues #N", "issue N" (but not an issue rate:
# "issue 2 FMAs per cycle", "issues 4 x 128 bits", "issue 2 loads"), or a bare "(#N)".
ISSUE_WORD_RE = re.compile(
    r"\bissues?[ \t]*:?[ \t]*#[ \t]*[0-9]+"
    r"|\bissues?[ \t]+(?:no\.?[ \t]*|number[ \t]+)?[0-9]+(?![0-9]|[.,][0-9])"
    r"(?![ \t]*(?:x\b|\*|\u00d7|/)"  # 2 x, 2/cycle
    r"|(?:[ \t]+[\w-]+){0,3}[ \t]+(?:per|each|every|a)[ \t]+(?:cycle|clock|clk)"
    r"|[ \t]+(?:instructions?|loads?|stores?|fmas?|macs?|[uµ]?ops|multiplies|adds)\b)",
    re.IGNORECASE)
ISSUE_BARE_RE = re.compile(r"\(#[0-9]+\)")
# Where "(#N)" may be a colour.
COLOUR_FILES = (".css", ".scss", ".svg", ".html", ".htm")
# Fuzzer inputs: data, not text anyone reads.
ISSUE_SKIP_DIRS = {"corpus"}
# A file name or path with one of the extensions, not part of a longer word, path, URL, glob
# (gemm_*.cpp) or placeholder (readme_<NAME>.cpp, ${name}.hpp).
PATH_RE = re.compile(r"(?<![\w./\-+*<>{}$%@:])((?:\.\.?/)*\w[\w.+\-]*(?:/[\w.+\-]+)*"
                     r"\.(?:cpp|hpp|h|py|sh|cmake|md))(?![\w/*<>{}$%])")
# What a usage text passes a command-line option ("--header OUT.hpp"): a user's file.
OPTION_RE = re.compile(r"--[\w-]+[ =]$")
# Names of files in other projects, which comments in lib/ cite.
EXTERNAL = {
    "llama.cpp",                             # the llama.cpp project
    "component/xpos_relative_position.py",  # torchscale's xPos
    "modeling_rope_utils.py",               # transformers' RoPE scalings
    "tensorflow/lite/kernels/internal/reference/softmax.h",  # TFLite's int16 softmax
    "tensorflow/lite/kernels/internal/common.h",             # TFLite's LUTPopulate, LUTLookup
}


def resolve(path):
    """path as given (from the current folder), or else from the checkout's root."""
    return path if os.path.exists(path) else os.path.join(ROOT, path)


def rel(path):
    return os.path.relpath(os.path.abspath(path), ROOT).replace(os.sep, "/")


def comment_style(relpath, first_line=""):
    """'//', '#', '/*' or None for a file that is not source."""
    name = relpath.rsplit("/", 1)[-1]
    if name.endswith(C_STYLE):
        return "//"
    if name.endswith(BLOCK_STYLE):
        return "/*"
    if name == "CMakeLists.txt" or name.endswith(HASH_STYLE) or relpath.startswith(".ci/"):
        return "#"
    if first_line.startswith("#!"):
        return "#"
    return None


def generated(relpath):
    return any(part in GENERATED_DIRS for part in relpath.split("/")[:-1])


def walk(path):
    """Files under path (a file or a folder), relative to the root, build outputs skipped."""
    if os.path.isfile(path):
        yield rel(path)
        return
    for folder, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for f in sorted(files):
            yield rel(os.path.join(folder, f))


def read_lines(relpath):
    with open(os.path.join(ROOT, relpath), encoding="utf-8", errors="replace", newline="") as f:
        return f.read().splitlines()


def has_spdx(lines):
    return any(SPDX in line for line in lines[:SPDX_LINES])


# ---- comments ----------------------------------------------------------------------------------

def c_comments(text):
    """(line, text) of each // and /* */ comment of C/C++ (or linker script) source."""
    out = []
    i, n, line = 0, len(text), 1

    def word(k):  # text[k] is part of an identifier or number
        return 0 <= k < n and (text[k].isalnum() or text[k] == "_")

    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append((line, text[i + 2:end]))
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end
            for k, part in enumerate(text[i + 2:end].split("\n")):
                out.append((line + k, part))
            line += text.count("\n", i, end)
            i = end + 2
        elif text.startswith('R"', i) and not word(i - 1):
            m = re.match(r'R"([^()\\ ]{0,16})\(', text[i:])
            if not m:
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i)
            end = n if end < 0 else end + len(m.group(1)) + 2
            line += text.count("\n", i, end)
            i = end
        elif c == '"' or (c == "'" and not (word(i - 1) and word(i + 1))):
            j = i + 1  # a string or character literal (a digit separator 1'000 is neither)
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            i += 1
    return out


def hash_comments(text, quotes):
    """(line, text) of each # comment of CMake or shell source: a # at a line's start or after
    a blank, outside quotes (a quoted CMake argument spanning lines is followed)."""
    out = []
    quote = None
    for number, line in enumerate(text.split("\n"), 1):
        i = 0
        while i < len(line):
            c = line[i]
            if quote:
                if c == "\\" and quote == '"':
                    i += 1
                elif c == quote:
                    quote = None
            elif c in quotes:
                quote = c
            elif c == "#" and (i == 0 or line[i - 1] in " \t(;"):
                out.append((number, line[i + 1:]))
                break
            i += 1
        if quote == "'":  # an apostrophe in a heredoc or an echo: never past the line
            quote = None
    return out


def python_comments(relpath, text):
    """(line, text) of each # comment and docstring of Python source."""
    out = []
    previous = tokenize.NEWLINE
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                out.append((tok.start[0], tok.string[1:]))
            elif tok.type == tokenize.STRING and previous in (tokenize.NEWLINE, tokenize.INDENT,
                                                               tokenize.DEDENT):
                for k, part in enumerate(tok.string.split("\n")):
                    out.append((tok.start[0] + k, part))
            if tok.type not in (tokenize.NL, tokenize.COMMENT):
                previous = tok.type
    except (tokenize.TokenError, SyntaxError) as error:
        print(f"warning: {relpath}: not tokenized, comments unchecked: {error}", file=sys.stderr)
    return out


def comments(relpath, text):
    name = relpath.rsplit("/", 1)[-1]
    if name.endswith(C_STYLE + BLOCK_STYLE):
        return c_comments(text)
    if name.endswith(".py"):
        return python_comments(relpath, text)
    if name.endswith(".sh") or relpath.startswith(".ci/"):
        return hash_comments(text, "\"'")
    if name == "CMakeLists.txt" or name.endswith((".cmake", ".cmake.in")):
        return hash_comments(text, '"')
    return []


# ---- the tree's files --------------------------------------------------------------------------

class Tree:
    def __init__(self):
        self.paths = set()
        self.names = set()
        for folder, dirs, files in os.walk(ROOT):
            dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
            for f in files:
                p = rel(os.path.join(folder, f))
                self.paths.add(p)
                self.names.add(f)

    def has(self, token, relpath):
        if "/" not in token:
            return token in self.names
        here = os.path.dirname(relpath)
        if os.path.normpath(os.path.join(here, token)).replace(os.sep, "/") in self.paths:
            return True
        token = re.sub(r"^(\.\.?/)+", "", token)
        return token in self.paths or any(p.endswith("/" + token) for p in self.paths)


# ---- issue references --------------------------------------------------------------------------

def checkout_files():
    """The checkout's files (tracked, or untracked and not ignored) relative to the root, or None
    when git cannot list them (not a checkout, no git)."""
    try:
        out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return sorted({p for p in out.decode("utf-8", "replace").split("\0")
                   if p and os.path.isfile(os.path.join(ROOT, p))})


def issue_files(paths, everything):
    """The files the issue check reads: the checkout's files under paths (all of them when
    everything), files named explicitly, or, without git, the files walked under paths."""
    listed = checkout_files()
    if listed is None:
        chosen = [relpath for path in paths for relpath in walk(path)]
    elif everything:
        chosen = listed
    else:
        chosen = []
        for path in paths:
            top = rel(path)
            if os.path.isfile(path):
                chosen.append(top)
            elif top == ".":
                chosen += listed
            else:
                chosen += [p for p in listed if p.startswith(top + "/")]
    seen = set()
    for relpath in chosen:
        parts = relpath.split("/")
        if relpath in seen or any(d in ISSUE_SKIP_DIRS or d in SKIP_DIRS for d in parts[:-1]):
            continue
        seen.add(relpath)
        yield relpath


def issue_references(relpath):
    """(line, reference) of each issue reference in the file (none in a binary file)."""
    with open(os.path.join(ROOT, relpath), "rb") as f:
        data = f.read()
    if b"\0" in data:
        return []
    bare = not relpath.lower().endswith(COLOUR_FILES)
    out = []
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        found = [m.group(0) for m in ISSUE_WORD_RE.finditer(line)]
        if bare:
            found += [m.group(0) for m in ISSUE_BARE_RE.finditer(line)]
        out += [(number, ref) for ref in found]
    return out


# ---- checks ------------------------------------------------------------------------------------

def check(paths, everything=False):
    problems = []
    counts = {"spdx": 0, "note": 0, "path": 0, "issue": 0, "flag": 0}
    tree = Tree()
    checked = set()
    sources = 0

    def report(kind, where, message):
        counts[kind] += 1
        problems.append(f"{where}: {message}")

    for path in paths:
        if not os.path.exists(path):
            print(f"check_sources: {path}: no such file or folder", file=sys.stderr)
            return 2
        for relpath in walk(path):
            if relpath in checked:
                continue
            checked.add(relpath)
            in_lib = relpath.startswith("lib/")
            lines = None
            if not generated(relpath):
                lines = read_lines(relpath)
                style = comment_style(relpath, lines[0] if lines else "")
                sources += 1 if style else 0
                if style and not has_spdx(lines):
                    report("spdx", f"{relpath}:1", f"no '{SPDX}' in the first {SPDX_LINES} lines")
            if in_lib or relpath == "README.md":
                lines = lines if lines is not None else read_lines(relpath)
                for number, line in enumerate(lines, 1):
                    for m in NOTE_RE.finditer(line):
                        report("note", f"{relpath}:{number}", f"lab note '{m.group(0)}'")
            if relpath.startswith("lib/include/"):
                for number, line in enumerate(lines or read_lines(relpath), 1):
                    m = FLAG_IF_RE.search(line)
                    if m:
                        report("flag", f"{relpath}:{number}", f"public header depends on {m.group(1)}"
                               " (the user's flags): decide by the architecture, the same for every flag set")
            if in_lib and not generated(relpath):
                text = "\n".join(lines)
                for number, comment in comments(relpath, text):
                    comment = re.sub(r"\w+://\S+", " ", comment)  # URLs name other trees' files
                    for m in PATH_RE.finditer(comment):
                        if m.group(1) in EXTERNAL or OPTION_RE.search(comment[:m.start()]):
                            continue
                        if not tree.has(m.group(1), relpath):
                            report("path", f"{relpath}:{number}",
                                   f"comment names '{m.group(1)}', no such file in the tree")

    issue_checked = 0
    for relpath in issue_files(paths, everything):
        issue_checked += 1
        for number, ref in issue_references(relpath):
            report("issue", f"{relpath}:{number}",
                   f"issue reference '{ref}': say what it is about, not its ticket")

    for p in problems:
        print(p)
    total = sum(counts.values())
    if total:
        print(f"check_sources: {total} problem(s), {sources} source files: {counts['spdx']} without"
              f" the SPDX line, {counts['note']} lab notes, {counts['path']} comments naming a"
              f" missing file, {counts['issue']} issue references, {counts['flag']} public headers on"
              f" a target flag. Insert SPDX lines with:"
              f" {rel(__file__)} --fix-spdx PATH...")
        return 1
    print(f"check_sources: ok, {sources} source files (generated fixtures and corpus skipped) under"
          f" {' '.join(rel(p) for p in paths)}; no issue reference in {issue_checked} file(s)"
          + (" of the checkout" if everything else ""))
    return 0


# ---- --fix-spdx --------------------------------------------------------------------------------

def fix_spdx(paths):
    added, present, failed = [], 0, 0
    for path in paths:
        if not os.path.exists(path):
            print(f"{path}: no such file or folder")
            failed += 1
            continue
        explicit = os.path.isfile(path)
        for relpath in walk(path):
            if generated(relpath) and not explicit:
                continue
            full = os.path.join(ROOT, relpath)
            with open(full, "rb") as f:
                data = f.read()
            text = data.decode("utf-8")
            lines = text.splitlines(keepends=True)
            style = comment_style(relpath, lines[0] if lines else "")
            if style is None:
                if explicit:
                    print(f"{relpath}: not a source file this script knows the comment syntax of")
                    failed += 1
                continue
            if has_spdx([l.rstrip("\r\n") for l in lines]):
                present += 1
                continue
            newline = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
            spdx = {"//": f"// {SPDX}", "#": f"# {SPDX}", "/*": f"/* {SPDX} */"}[style] + newline
            at = 0
            if lines and lines[0].startswith("#!"):
                at = 1
            # A Python encoding declaration must stay on line 1 or 2.
            if (relpath.endswith(".py") and len(lines) > at
                    and re.match(r"^[ \t\f]*#.*?coding[:=]", lines[at]) and at < 2):
                at += 1
            if lines and not lines[-1].endswith("\n") and at == len(lines):
                lines[-1] += newline
            lines.insert(at, spdx)
            with open(full, "wb") as f:  # in place: the file keeps its mode
                f.write("".join(lines).encode("utf-8"))
            added.append(relpath)
            print(f"{relpath}: SPDX line added (line {at + 1})")
    print(f"fix-spdx: {len(added)} file(s) changed, {present} already had the line"
          + (f", {failed} path(s) refused" if failed else ""))
    return 1 if failed else 0


def main(argv):
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    if argv and argv[0] == "--fix-spdx":
        if len(argv) < 2:
            print("usage: check_sources.py --fix-spdx PATH...", file=sys.stderr)
            return 2
        return fix_spdx([resolve(p) for p in argv[1:]])
    return check([resolve(p) for p in argv or DEFAULT_PATHS], everything=not argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
