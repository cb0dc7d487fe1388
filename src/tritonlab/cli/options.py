"""What the subcommands share: the parser class, the error for bad input, the common options.

A user error (a bad flag value, a missing module, a device this machine lacks) is one line on
stderr and exit code 2, never a traceback: argparse's own errors go through `Parser.error`, the
handlers' through `UserError`, which `main` prints.
"""
from __future__ import annotations

import argparse

from ..errors import UserError  # noqa: F401 - the handlers raise it from here
from ..hardware import get as gpu_spec

DTYPES = ("float32", "float16", "bfloat16")
SHORT_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "tf32": "tfloat32"}


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (the usage is one `--help` away) and options that can be
    added when the parser is first used: a subcommand whose choices come from a module that
    imports torch (seconds) adds them then, so `tritonlab --help` and `tritonlab waves` stay fast.
    The subparsers are of this class too."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._pending = []

    def on_first_use(self, add_options):
        """Call add_options(self) before this parser first parses or formats its help."""
        self._pending.append(add_options)

    def _complete(self):
        while self._pending:
            self._pending.pop(0)(self)

    def parse_known_args(self, args=None, namespace=None):
        self._complete()
        return super().parse_known_args(args, namespace)

    def format_usage(self):
        self._complete()
        return super().format_usage()

    def format_help(self):
        self._complete()
        return super().format_help()

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def dtype_name(text):
    """The canonical name of a dtype given by it or its short form, in any case (BF16 ->
    bfloat16); anything else comes back lower-cased, for `choices` to reject."""
    text = text.strip().lower()
    return SHORT_DTYPES.get(text, text)


def add_dtype(parser, names=DTYPES, note=""):
    """--dtype, one of `names` (canonical; the first is the default), short forms accepted."""
    short = ", ".join(s for s, name in SHORT_DTYPES.items() if name in names)
    parser.add_argument("--dtype", type=dtype_name, choices=names, default=names[0],
                        help=f"{', '.join(names)} (default {names[0]}); or {short}{note}")


def add_device(parser, devices="cuda, mps or cpu", default="the best available"):
    parser.add_argument("--device", help=f"{devices} (default: {default})")


def gpu_name(text):
    """A GPU of the hardware tables, by name in any case (or an alias)."""
    try:
        gpu_spec(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def add_gpu(parser):
    parser.add_argument("--gpu", type=gpu_name, default="H100")


def positive_int(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


def parse_shape(text):
    """'8x16' -> (8, 16)."""
    try:
        shape = tuple(int(d) for d in text.lower().split("x"))
    except ValueError:
        shape = ()
    if not shape or min(shape) < 0:
        raise UserError(f"bad shape {text!r}; write it like 8x16")
    return shape


def resolve_device(requested, default):
    """The device named by --device, checked against this machine; `default()` without one."""
    import torch
    if requested is None:
        return default()
    try:
        device = torch.device(requested)
    except RuntimeError:
        raise UserError(f"unknown device {requested!r}; use cuda, mps or cpu") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise UserError(f"--device {requested}: CUDA is not available here "
                            "(torch.cuda.is_available() is False); use --device cpu")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise UserError(f"--device {requested}: this machine has "
                            f"{torch.cuda.device_count()} CUDA device(s)")
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise UserError(f"--device {requested}: MPS is not available here; use --device cpu")
    return requested
