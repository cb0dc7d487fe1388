"""How tritonlab prints sizes, FLOP counts and times: one helper for each, used by every
command and lecture.

Both pick the unit that puts the number between 1 and 1000 and print three significant digits,
so that 96 bytes read "96 B", not "0.0 MB", and 29 ps read "0.029 ns", not "0.0 us". Byte units
are decimal (1 KB = 1000 B), like the bandwidths they are divided by (3.35 TB/s).
"""
from __future__ import annotations

_BYTES = (("B", 1), ("KB", 1e3), ("MB", 1e6), ("GB", 1e9), ("TB", 1e12))
_FLOPS = (("FLOP", 1), ("kFLOP", 1e3), ("MFLOP", 1e6), ("GFLOP", 1e9), ("TFLOP", 1e12))
_TIMES = (("ns", 1e-9), ("µs", 1e-6), ("ms", 1e-3), ("s", 1))


def _three_digits(value):
    """`value` to three significant digits, without an exponent or trailing zeros' noise."""
    if value == 0:
        return "0"
    text = f"{value:.3g}"
    if "e" in text:  # .3g switches to an exponent from 1000 up and below 1e-4
        text = f"{value:.0f}" if abs(value) >= 1 else f"{value:.3f}".rstrip("0").rstrip(".")
    return text


def _scaled(value, units):
    name, size = units[0]
    for unit, scale in units:
        if abs(value) >= scale * (1 - 5e-4):  # 999.96 B rounds up to 1.00 KB, not "1e+03 B"
            name, size = unit, scale
    return f"{_three_digits(value / size)} {name}"


def format_bytes(n):
    """96 -> '96 B'; 6291456 -> '6.29 MB'; 69206016 -> '69.2 MB'."""
    if abs(n) < 1000:
        return f"{n:,.0f} B" if float(n).is_integer() else f"{_three_digits(n)} B"
    return _scaled(n, _BYTES)


def format_flops(n):
    """2147483648 -> '2.15 GFLOP'; 524288 -> '524 kFLOP'."""
    return _scaled(n, _FLOPS)


def format_time(seconds):
    """2.17e-6 -> '2.17 µs'; 3e-11 -> '0.03 ns'; 0.0123 -> '12.3 ms'; 75 -> '75 s'."""
    return _scaled(seconds, _TIMES)
