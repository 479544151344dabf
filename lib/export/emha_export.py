#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""emha-export: one attention layer of a PyTorch checkpoint -> emha's weight blob and/or C++ header.

The command of the emha_export package beside this file (installed as <prefix>/share/emha/emha-export
with the package beside it); its flags: emha_export.py --help (emha_export/cli.py).
"""
import pathlib
import sys


def main():
    # The package is imported from this file's directory, without writing __pycache__ into the
    # source tree or the install.
    sys.dont_write_bytecode = True
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    from emha_export.cli import run
    return run(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
