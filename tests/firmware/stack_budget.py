#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Worst-case stack of emha's public entry points on a Cortex-M build, from the call down.

emha's own functions: the call graphs gcc writes with -fcallgraph-info=su (one <object>.ci per
object of libemha.a: every function's frame in bytes and its direct calls), plus what an asm
inside one pushes (EMHA_ASM_STACK's records in the objects' .emha_asm_stack sections). The C and runtime
library functions emha calls (expf, memset, __aeabi_uldivmod, ...) have no .ci: their frames are
read off the linked firmware's disassembly (push/stmdb/vpush/sub sp/str..[sp, #-N]!) and their
calls followed the same way. A frame the compiler calls dynamic, a recursion, an indirect call or
a function found nowhere is an error: the bound would not be a bound. (The one indirect call
lib/ makes, port::parallel_for's call of a task, is bound to the task invokers: see
bind_parallel_for.) (A .ci names the library
calls gcc planned, which can differ from what it emitted, e.g. __aeabi_ldivmod for an unsigned
division that became __aeabi_uldivmod: a library call that no relocation of libemha.a's objects
names is left out.)

  stack_budget.py --elf firmware.elf [--objdump arm-none-eabi-objdump] [--limit BYTES]
                  [--measured-log LOG --probe REGEX] CI_DIR

With --measured-log, the bound is also checked against a measurement: the test firmware paints
its stack (tests/firmware/stack_probe.cpp), calls forward() through trampolines (the shared layer
tests' run_parity and run_decode, over tests/support/stack_use.hpp) and prints
"stack: forward used at most N bytes"; N must not exceed the same analysis, over the linked
image's disassembly, of the trampolines (symbols whose demangled name matches --probe) down.

Prints each public entry point's bound and its deepest chain; exits 1 when one is over --limit.
The public entry points are emha's functions with external linkage; MultiHeadAttention's
forward(), forward_reference() and set_weights() are inline wrappers over
detail::mha_forward_staged<its Config's stage set>, mha_forward_ref and (mha_check_weights, then
mha_pack_weights), reported under those names. detail::mha_forward, the whole pass that x86's
run-time dispatch runs for every stage set, is reported but not gated: on the builds of one
variant this script sees, no public function reaches it.
forward() with a KvCache wraps the same mha_forward_staged (a non-null cache view adds the
append stage to its plan), so that bound covers it; the script checks that append_stage is on
mha_forward's call graph and prints the deepest chain through it.
"""

import argparse
import pathlib
import re
import subprocess
import sys

NODE = re.compile(r'node: \{ title: "([^"]+)" label: "([^"]*)"')
EDGE = re.compile(r'edge: \{ sourcename: "([^"]+)" targetname: "([^"]+)"')
FRAME = re.compile(r'\\n(\d+) bytes \(([a-z,]+)\)')


def read_callgraphs(ci_dir):
    """title -> (frame bytes or None for a declaration, readable name); title -> callees."""
    frames, names, calls = {}, {}, {}
    files = sorted(pathlib.Path(ci_dir).rglob("*.ci"))
    if not files:
        sys.exit(f"stack_budget: no .ci files under {ci_dir} (built with -fcallgraph-info=su?)")
    for path in files:
        text = path.read_text()
        for title, label in NODE.findall(text):
            names.setdefault(title, label.split("\\n")[0])
            m = FRAME.search(label)
            if m:
                if m.group(2) != "static":
                    sys.exit(f"stack_budget: {label.split(chr(92))[0]}: {m.group(2)} frame")
                frames[title] = int(m.group(1))
            else:
                frames.setdefault(title, None)
        for src, dst in EDGE.findall(text):
            calls.setdefault(src, set()).add(dst)
    return frames, names, calls


def bind_parallel_for(frames, names, calls):
    """emha::port::parallel_for calls its task through a pointer: the static invokers (_FUN) of
    the task lambdas in lib/src/attention/parallel.hpp's for_items are the only tasks lib/ hands
    it, so its indirect call becomes a call to each of them (the deepest counts)."""
    tasks = {t for t, n in names.items() if "for_items<" in n and "_FUN" in n and frames.get(t) is not None}
    for t, n in names.items():
        if "emha::port::parallel_for" in n and frames.get(t) is not None:
            callers = [src for src, dst in calls.items() if t in dst]
            if not tasks and callers:
                sys.exit("stack_budget: parallel_for is called but no for_items task invoker found")
            # Without threads (cortex_m, none) lib/ never calls it: its task call is nobody's.
            calls[t] = (calls.get(t, set()) - {"__indirect_call"}) | tasks


FUNC = re.compile(r"^[0-9a-f]+ <([^>]+)>:$")
INSN = re.compile(r"^\s*[0-9a-f]+:\s+(\S+)\s*(.*)$")
CALL = re.compile(r"^(bl|blx|b|b\.w|b\.n)$")
TARGET = re.compile(r"<([^+>]+)>")


def regs_bytes(reglist):
    """Bytes a push/stmdb/vpush register list takes: r*/lr/ip 4, s* 4, d* 8 (ranges allowed)."""
    total = 0
    for item in reglist.split(","):
        item = item.strip()
        if "-" in item:
            lo, hi = item.split("-")
            count = int(hi[1:]) - int(lo[1:]) + 1
            total += count * (8 if lo.startswith("d") else 4)
        elif item:
            total += 8 if item.startswith("d") else 4
    return total


# An instruction that leaves a function: a branch, a return, a pop or load of pc.
ENDS = re.compile(r"^(b|b\.w|b\.n|bx|pop|pop\.w|ldmia\.w|ldmia|ldr|ldr\.w)$")


def read_library_frames(elf, objdump):
    """name -> (frame bytes, callees) for every function of the linked image. A symbol that
    objdump does not label (an alias at the same address, as libgcc's __aeabi_dadd of __adddf3)
    is the labelled function's; a function with no instruction that leaves it falls through into
    the next (libgcc's __aeabi_dsub into __adddf3), which it counts as a call."""
    dis = subprocess.run([objdump, "-d", "--no-show-raw-insn", elf], check=True,
                         capture_output=True, text=True).stdout
    funcs, current, order, leaves, address = {}, None, [], set(), {}
    for line in dis.splitlines():
        m = FUNC.match(line)
        if m:
            current = m.group(1)
            funcs[current] = [0, set()]
            order.append(current)
            address[line.split()[0].lstrip("0") or "0"] = current
            continue
        m = INSN.match(line)
        if not (current and m):
            continue
        op, args = m.group(1), m.group(2)
        if ENDS.match(op) and (not op.startswith(("pop", "ldm", "ldr")) or "pc" in args.split(",")[0] + args[args.find("{"):]):
            leaves.add(current)
        f = funcs[current]
        if op in ("push", "push.w", "vpush", "stmdb", "stmdb.w") and (op.startswith(("push", "vpush")) or args.startswith("sp!")):
            f[0] += regs_bytes(args[args.index("{") + 1:args.index("}")])
        elif op in ("sub", "sub.w", "subw") and re.match(r"sp, (sp, )?#\d+", args):
            f[0] += int(args.split("#")[1].split()[0])
        elif re.match(r"^(str|strd|vstr|str\.w)", op) and re.search(r"\[sp, #-(\d+)\]!", args):
            f[0] += int(re.search(r"\[sp, #-(\d+)\]!", args).group(1))
        elif CALL.match(op):
            t = TARGET.search(args)
            if t and t.group(1) != current:
                f[1].add(t.group(1))
    for here, following in zip(order, order[1:]):
        if here not in leaves:
            funcs[here][1].add(following)
    nm = subprocess.run([objdump.replace("objdump", "nm"), elf], check=True, capture_output=True,
                        text=True).stdout
    for line in nm.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "Tt" and parts[2] not in funcs:
            labelled = address.get(parts[0].lstrip("0") or "0")
            if labelled:
                funcs[parts[2]] = funcs[labelled]
    return funcs


def read_asm_stack(ci_dir, objdump):
    """Mangled function -> the most bytes an asm inside it pushes, from the (address, bytes) pairs
    EMHA_ASM_STACK records in the section .emha_asm_stack of emha's objects (lib/src/simd_arch.hpp;
    not allocated, so the link drops it): each address is relocated against its function's own
    section (-ffunction-sections). The compiler's frame sizes (.ci) do not count an asm's pushes.
    Asm blocks run one after another, so the largest counts, not their sum."""
    objs = [str(p) for p in pathlib.Path(ci_dir).rglob("*.o*") if p.suffix in (".o", ".obj")]
    rel = subprocess.run([objdump, "-r", "-j", ".emha_asm_stack", *objs], capture_output=True, text=True).stdout
    dump = subprocess.run([objdump, "-s", "-j", ".emha_asm_stack", *objs], capture_output=True, text=True).stdout
    relocs, data, current = {}, {}, None
    for line in rel.splitlines():
        f = line.split()
        if "file format" in line:
            current = line.split(":")[0]
        elif current and len(f) == 3 and f[1].startswith("R_ARM_"):
            relocs.setdefault(current, []).append((int(f[0], 16), f[2]))
    for line in dump.splitlines():
        f = line.split()
        if "file format" in line:
            current = line.split(":")[0]
        elif current and len(f) >= 2 and re.fullmatch(r"[0-9a-f]{4,8}", f[0]):
            for word in f[1:5]:
                if not re.fullmatch(r"[0-9a-f]{2,8}", word):
                    break
                data.setdefault(current, bytearray()).extend(bytes.fromhex(word))
    extra = {}
    for obj, entries in relocs.items():
        for offset, section in entries:
            if not section.startswith(".text."):
                sys.exit(f"stack_budget: {obj}: an asm's pushes recorded against {section}, not a function's "
                         "own section (-ffunction-sections?)")
            fn = section[len(".text."):]
            extra[fn] = max(extra.get(fn, 0), int.from_bytes(data[obj][offset + 4:offset + 8], "little"))
    return extra


def library_depth(library, sym, memo, elf, tails):
    """(bytes, chain) of the deepest path from `sym` down, on the image's disassembly alone."""
    if sym in memo:
        return memo[sym]
    if sym not in library:
        sys.exit(f"stack_budget: {sym} not found in {elf}")
    memo[sym] = (0, [])  # a cycle in library code counts its frames once
    own, children = library[sym]
    # A tail call (tails: emha's objects' relocations) runs after the frame is popped: the larger of
    # the two, not their sum.
    best_total, best, best_tail = own, [], False
    for c in sorted(children):
        b = library_depth(library, c, memo, elf, tails)
        tail = c in tails.get(sym, ())
        total = max(own, b[0]) if tail else own + b[0]
        if total > best_total:
            best_total, best, best_tail = total, b[1], tail
    memo[sym] = (best_total, [f"{sym} (library): {own}" + (" (then a tail call)" if best_tail else "")] + best)
    return memo[sym]


def tail_calls(ci_dir, objdump):
    """Mangled function -> the functions it only ever branches to (a sibling call: b.w, relocation
    R_ARM_THM_JUMP24 or R_ARM_JUMP24, its own frame popped first), never calls (bl)."""
    objs = [str(p) for p in pathlib.Path(ci_dir).rglob("*.o*") if p.suffix in (".o", ".obj")]
    out = subprocess.run([objdump, "-dr", *objs], check=True, capture_output=True, text=True).stdout
    branched, called, current = {}, {}, None
    for line in out.splitlines():
        m = FUNC.match(line)
        if m:
            current = m.group(1)
            continue
        f = line.split()
        if current and len(f) == 3 and f[1].startswith("R_ARM_") and f[1].endswith(("JUMP24", "CALL")):
            (branched if f[1].endswith("JUMP24") else called).setdefault(current, set()).add(f[2])
    return {fn: targets - called.get(fn, set()) for fn, targets in branched.items()}


def referenced_symbols(ci_dir, objdump):
    """Symbols named by relocations of emha's objects: the functions the code really calls."""
    objs = [str(p) for p in pathlib.Path(ci_dir).rglob("*.o*") if p.suffix in (".o", ".obj")]
    out = subprocess.run([objdump, "-r", *objs], check=True, capture_output=True, text=True).stdout
    return {f[2] for f in (line.split() for line in out.splitlines()) if len(f) == 3 and f[1].startswith("R_")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("ci_dir")
    ap.add_argument("--elf", required=True, help="a firmware linked with this libemha.a")
    ap.add_argument("--objdump", default="arm-none-eabi-objdump")
    ap.add_argument("--limit", type=int, default=1024)
    ap.add_argument("--measured-log", help="output of the test firmware (its 'stack:' line)")
    ap.add_argument("--probe", default=r"run_(parity|decode)<.*_FUN", help="trampolines the firmware measured")
    args = ap.parse_args()

    frames, names, calls = read_callgraphs(args.ci_dir)
    bind_parallel_for(frames, names, calls)
    library = read_library_frames(args.elf, args.objdump)
    asm_stack = read_asm_stack(args.ci_dir, args.objdump)
    referenced = referenced_symbols(args.ci_dir, args.objdump)
    tails = tail_calls(args.ci_dir, args.objdump)
    builtin_alias = {"__builtin_memset": "memset", "__builtin_memcpy": "memcpy"}

    memo, active, lib_memo = {}, set(), {}

    def worst(title):
        """(bytes, chain) of the deepest path from `title` down."""
        if title in memo:
            return memo[title]
        if title in active:
            sys.exit(f"stack_budget: recursion through {names.get(title, title)}")
        active.add(title)
        if frames.get(title) is not None:
            own, children, name = frames[title], calls.get(title, ()), names[title]
            own += asm_stack.get(title.rsplit(":", 1)[-1], 0)
            resolve = worst
        else:
            sym = builtin_alias.get(title, title)
            if sym == "__indirect_call":
                sys.exit("stack_budget: an indirect call: no bound")
            if sym not in library:
                sys.exit(f"stack_budget: {names.get(title, title)} is neither in a .ci file nor in {args.elf}")
            own, children, name = library[sym][0], library[sym][1], sym + " (library)"
            resolve = lambda s: library_depth(library, s, lib_memo, args.elf, tails)  # noqa: E731
        # A tail call runs after the caller's frame is popped: the caller counts as the larger of
        # its frame and the callee's depth, not their sum.
        tail_of = tails.get(title.rsplit(":", 1)[-1], set())
        best, best_total, best_tail = (0, []), own, False
        for c in sorted(children):
            if resolve is worst and frames.get(c) is None and builtin_alias.get(c, c) not in referenced \
                    and builtin_alias.get(c, c) not in library:
                continue  # planned in the .ci, not emitted (see the docstring)
            b = resolve(c)
            tail = c.rsplit(":", 1)[-1] in tail_of
            total = max(own, b[0]) if tail else own + b[0]
            if total > best_total:
                best, best_total, best_tail = b, total, tail
        result = (best_total, [f"{name}: {own}" + (" (then a tail call)" if best_tail else "")] + best[1])
        active.discard(title)
        memo[title] = result
        return result

    # Public entry points: defined with external linkage (no file prefix in the title), the
    # instances of detail::mha_forward_staged (a Config's forward() on one variant: templates,
    # titled with their file), of detail::mha_s16x8_forward (the 16x8 layer's forward() and
    # forward_reference(), explicit instances) and of detail::mha_s8_general (the s8 layer's, with
    # detail::mha_s8_forward_core, a function: its forward() with double rounding).
    entry_templates = ("detail::mha_forward_staged(", "detail::mha_s16x8_forward(", "detail::mha_s8_general(")
    public = sorted(t for t, f in frames.items()
                    if f is not None and (":" not in t or any(e in names.get(t, "") for e in entry_templates)))
    rows = []
    for t in public:
        b, chain = worst(t)
        rows.append((names[t], b, chain))
    set_weights = max((r for r in rows if re.search(r"detail::mha_(check|pack)_weights", r[0])), key=lambda r: r[1])
    whole_pass = re.compile(r"detail::(isa_build::)?mha_forward\(")
    over = [r for r in rows if r[1] > args.limit and not whole_pass.search(r[0])]
    width = max(len(r[0].split("(")[0]) for r in rows)
    print(f"worst-case stack from the call down (bytes; limit {args.limit}):")
    for name, b, _ in sorted(rows, key=lambda r: -r[1]):
        stages = re.search(r"\[with unsigned int Stages = (\d+)\]", name)
        print(f"  {b:5d}  {name.split('(')[0] + (f'<{stages.group(1)}>' if stages else ''):<{width}}")
    fwd = max((r for r in rows if "detail::mha_forward_staged(" in r[0]), key=lambda r: r[1])
    s8 = [r for r in rows if re.search(r"detail::(isa_\w+::)?mha_s8_(forward_core|general)\(", r[0])]
    s16x8 = [r for r in rows if "detail::mha_s16x8_forward(" in r[0]]
    if not s8 or not s16x8:
        sys.exit("stack_budget: no detail::mha_s8_forward_core, mha_s8_general or mha_s16x8_forward instance "
                 "(the integer layers' forward) found")
    print(f"MultiHeadAttention::forward: {fwd[1]} bytes; set_weights: {set_weights[1]} bytes; "
          f"full-integer forward: {max(r[1] for r in s8)} bytes; 16x8 forward: {max(r[1] for r in s16x8)} bytes; "
          "deepest chain of forward:")
    for step in fwd[2]:
        print("    " + step.split("(")[0] + ":" + step.rsplit(":", 1)[1])
    staged = [t for t in public if "detail::mha_forward_staged(" in names[t]]
    appends = [a for a in (deepest_through(t, lambda t: "::append_stage(" in names.get(t, ""), frames, names, calls,
                                           worst) for t in staged) if a is not None]
    if not appends:
        sys.exit("stack_budget: append_stage (forward with a KvCache) is not under mha_forward_staged: no bound")
    append = max(appends, key=lambda a: a[0])
    print(f"MultiHeadAttention::forward with a KvCache: within forward's {fwd[1]} bytes; "
          f"its append stage at most {append[0]} bytes deep:")
    for step in append[1]:
        print("    " + step.split("(")[0] + ":" + step.rsplit(":", 1)[1])
    status = 0
    if args.measured_log:
        status = check_measurement(args, library)
    if over:
        for name, b, chain in over:
            print(f"stack_budget: {name.split('(')[0]} needs {b} bytes, over the {args.limit}-byte budget:", file=sys.stderr)
            for step in chain:
                print("    " + step, file=sys.stderr)
        return 1
    return status


def deepest_through(root, is_target, frames, names, calls, worst):
    """(bytes, chain) of the deepest path from `root` down that passes through a function for
    which is_target(title) holds (its worst path below it counted), or None when none is reached.
    emha's own functions only: a library function calls none of emha's."""
    memo = {}

    def go(t):
        if t not in memo:
            if is_target(t):
                memo[t] = worst(t)
            elif frames.get(t) is None:
                memo[t] = None
            else:
                below = [b for b in (go(c) for c in sorted(calls.get(t, ()))) if b is not None]
                best = max(below, key=lambda b: b[0], default=None)
                memo[t] = None if best is None else (frames[t] + best[0], [f"{names[t]}: {frames[t]}"] + best[1])
        return memo[t]

    return go(root)


def check_measurement(args, library):
    text = pathlib.Path(args.measured_log).read_text()
    m = re.findall(r"stack: forward used at most (\d+) bytes", text)
    if not m:
        sys.exit(f"stack_budget: no 'stack: forward used at most N bytes' line in {args.measured_log}")
    measured = max(int(x) for x in m)
    cxxfilt = args.objdump.replace("objdump", "c++filt")
    syms = list(library)
    demangled = subprocess.run([cxxfilt], input="\n".join(syms), capture_output=True, text=True,
                               check=True).stdout.split("\n")
    probes = [s for s, d in zip(syms, demangled) if re.search(args.probe, d)]
    if not probes:
        sys.exit(f"stack_budget: no symbol of {args.elf} matches --probe {args.probe!r}")
    memo = {}
    tails = tail_calls(args.ci_dir, args.objdump)
    predicted = max(library_depth(library, s, memo, args.elf, tails)[0] for s in probes)
    verdict = "within" if measured <= predicted else "ABOVE"
    print(f"measured: forward through the firmware's probe took {measured} bytes, {verdict} the "
          f"{predicted} bytes this analysis gives that call (probe trampoline included)")
    return 0 if measured <= predicted else 1


if __name__ == "__main__":
    sys.exit(main())
