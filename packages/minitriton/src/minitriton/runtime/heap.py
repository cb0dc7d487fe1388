"""Keep the simulator's freed memory in the process's heap (Settings.keep_heap).

A lockstep launch allocates its blocks (offsets, masks, loaded values, the snapshot a store
takes) and frees them again, launch after launch. glibc's malloc serves blocks above its
mmap threshold (128 KiB at first, raised only by the frees it sees) with fresh pages from the
OS and gives the top of the heap back above its trim threshold, so a simulated launch pays
a page fault and the kernel's zeroing for every 4 KiB of its blocks, again at each launch:
more than its NumPy work costs (the 2^20-element add: 6.7 ms a launch, 3.5-4 ms with freed
memory kept). On the first launch with `keep_heap` set, minitriton raises both thresholds
once for the process: blocks up to 32 MiB come from the heap, and up to 256 MiB of freed
heap stays mapped for the next launch. The process's peak memory does not grow (the same
blocks were live during the launch); its memory between launches does, by at most that much.

Linux with glibc only (mallopt); elsewhere, or with `MINITRITON_KEEP_HEAP=0`, malloc is left
as it is. Once set, the process keeps it: malloc has no way back to its dynamic thresholds.
"""
import ctypes
import sys

MMAP_THRESHOLD = 32 << 20  # glibc's largest on 64-bit (HEAP_MAX_SIZE / 2)
TRIM_THRESHOLD = 256 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # malloc.h
_DONE = []


def keep_heap():
    """Raise malloc's thresholds once per process (see the module's docstring); True where
    it was done (now or before)."""
    if _DONE:
        return _DONE[0]
    ok = False
    if sys.platform.startswith("linux"):
        try:
            mallopt = ctypes.CDLL(None).mallopt  # glibc's; musl has none
            mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
            ok = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and \
                bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
        except (OSError, AttributeError):
            ok = False
    _DONE.append(ok)
    return ok
