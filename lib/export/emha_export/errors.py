# SPDX-License-Identifier: Apache-2.0
"""The exporter's one kind of error: ExportError (fail), a message naming the tensor, flag or
config key and both shapes or values; the command prints it and exits with 1. And the small
helpers every module words its messages with."""


class ExportError(Exception):
    pass


def fail(message):
    raise ExportError(message)


def shape_str(shape):
    return "[" + ", ".join(str(int(s)) for s in shape) + "]"


def join(prefix, name):
    return f"{prefix}.{name}" if prefix else name


def agree(flag, value, where):
    """A flag's value when given, else the module attribute's; an error when both differ."""
    if flag is not None and value is not None and flag != value:
        fail(f"{where[0]} {flag} disagrees with {where[1]} = {value}")
    return flag if flag is not None else value
