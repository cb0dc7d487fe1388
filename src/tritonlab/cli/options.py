"""What the subcommands share: the parser class, the error for bad input, the common options.

A user error (a bad flag value, a missing module, a device this machine lacks) is one line on
stderr and exit code 2, never a traceback: argparse's own errors go through `Parser.error`, the
handlers' through `UserError`, which `main` prints.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
from pathlib import Path

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


def _int_at_least(text, least, what):
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < least:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
    return value


def positive_int(text):
    return _int_at_least(text, 1, "a positive integer")


def non_negative_int(text):
    return _int_at_least(text, 0, "an integer of 0 or more")


def picture_formats():
    """The file suffixes matplotlib can save a figure as (png, pdf, svg...)."""
    from matplotlib.backend_bases import FigureCanvasBase
    return sorted(FigureCanvasBase.get_supported_filetypes())


def output_file(formats=None):
    """An argparse type for a file the command will write, checked before anything runs (a
    benchmark can take minutes, and its results are lost if the file cannot be written at the
    end): its folder exists and is writable, it is not itself a folder, and, with `formats` (a
    callable giving the suffixes allowed), its suffix is one of them."""
    def check(text):
        path = Path(text)
        folder = path.parent
        if path.is_dir():
            raise argparse.ArgumentTypeError(f"{text} is a folder; name a file in it")
        if not folder.is_dir():
            raise argparse.ArgumentTypeError(f"{text}: there is no folder {folder}; make it "
                                             "first or name a file in an existing folder")
        if not os.access(folder, os.W_OK):
            raise argparse.ArgumentTypeError(f"{text}: the folder {folder} is not writable")
        if formats is not None:
            allowed = formats()
            suffix = path.suffix.lower().lstrip(".")
            if suffix not in allowed:
                what = (f"'.{suffix}' is not a format the picture can be saved in" if suffix
                        else "the name has no suffix to say the picture's format")
                raise argparse.ArgumentTypeError(
                    f"{text}: {what}; end the name with .png or another of "
                    f"{', '.join('.' + s for s in allowed)}")
        return text
    return check


def parse_shape(text, least=0):
    """'8x16' -> (8, 16); every dimension at least `least`."""
    try:
        shape = tuple(int(d) for d in text.lower().split("x"))
    except ValueError:
        shape = ()
    if not shape or min(shape) < 0:
        raise UserError(f"bad shape {text!r}; write it like 8x16")
    if min(shape) < least:
        raise UserError(f"shape {text!r}: every dimension must be at least {least} (a tensor "
                        "with no elements launches no kernel)")
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


def backend_problem():
    """Why the backend that TRITONLAB_BACKEND asks for cannot run here, as one line (None when
    it can, or when the variable is unset, 'sim', or a name that backend.py itself rejects).
    Asked without importing tritonlab.backend, whose import fails with a traceback then."""
    name = os.environ.get("TRITONLAB_BACKEND", "").strip().lower()
    if name not in ("triton", "interpret"):
        return None
    asked = (f"TRITONLAB_BACKEND={name} asks for " +
             ("real Triton on a CUDA GPU" if name == "triton" else
              "Triton's interpreter (TRITON_INTERPRET=1) on the CPU"))
    instead = "unset it (or set it to sim) to run the kernels on minitriton, the simulator"
    if importlib.util.find_spec("triton") is None:
        return f"{asked}, but triton is not installed here; {instead}, or install triton"
    if name == "triton":
        import torch
        if not torch.cuda.is_available():
            return (f"{asked}, but CUDA is not available here (torch.cuda.is_available() is "
                    f"False); TRITONLAB_BACKEND=interpret runs Triton's interpreter on the CPU, "
                    f"or {instead}")
    return None
