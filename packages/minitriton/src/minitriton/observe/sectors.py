"""Memory insight per kernel line (`Settings(sectors=True)`): for every load, store and atomic
line of a kernel, how well its accesses use the memory system of a GPU.

Global memory moves in 32-byte sectors: a warp's request fetches every sector its active threads
touch, wasted bytes included. Addresses are the real byte addresses a GPU would see, with every
argument's storage 256-byte aligned at its start (as CUDA's allocators give): element offset in
the storage times the item size. Per line (and argument: two loads on one line are two rows),
over the whole launch:

  elements, bytes   elements requested by the active lanes (masked lanes move nothing), and
                    their bytes: the useful bytes (= total_bytes).
  sectors           the block model: for each program's access, the distinct 32-byte sectors of
                    its active lanes, summed over the programs and the times they ran the line.
                    It does not depend on how the compiler lays threads out: it is what the best
                    layout gets, and what Triton gets when its coalescing pass sees a contiguous
                    axis (its thread order follows the axis of greatest contiguity).
  efficiency        bytes / (sectors * 32): 1.0 when every fetched byte is used; a column of a
                    row-major fp32 matrix uses 4 bytes of each sector, 0.125.
  requests, request_sectors, request_efficiency, sectors_per_request
                    the lane-order warp model: threads follow the block's lanes in C order (the
                    last axis fastest), each taking a vector of v consecutive lanes, v the
                    widest the addresses allow (up to 16 bytes, aligned, all lanes of a vector
                    active or none) and at most the block's elements per thread (block size /
                    (32 * num_warps), num_warps 4 unless the launch says); one warp request
                    (an instruction of one warp) covers 32 * v consecutive lanes, and
                    fetches the distinct sectors of its active lanes. This is Triton's blocked
                    layout when the last axis is the contiguous one (or none is), and a CUDA
                    kernel with threadIdx.x along the last index: a transposed A (contiguous
                    along M, strided along K) is poor here and fine in the block model.
                    Nsight Compute's `l1tex__t_sectors_pipe_lsu_mem_global_op_ld` per
                    `..._requests_...` is the measured counterpart (benchmarks/sectors_ncu.py).
  unique_bytes, total_bytes, reuse
                    distinct elements of the line across all programs (bytes) against all bytes
                    requested, and total / unique: how often an L2 could serve a byte again.
  unique_sectors    distinct sectors across all programs: DRAM traffic with a perfect L2 / 32.
  programs, accesses, sectors_per_program, sectors_per_access
                    programs that ran the line with an active lane, program accesses (a program
                    running the line once, with an active lane), and the block sectors per
                    program and per program access.

The rows go to `LaunchRecord.lines` (a list of dicts, in kernel line order); the record's text
shows them as a table. Costs a sort of each access's addresses and a bitmap per line.
"""
from __future__ import annotations

import linecache

import numpy as np

from ..context import Observer
from ..source import kernel_site
from .journal import Journal

SECTOR = 32  # bytes
VECTOR = 16  # bytes: the widest load or store one thread issues (128 bits)
WARP = 32  # threads
DEFAULT_WARPS = 4  # Triton's num_warps when the launch does not say
KINDS = ("load", "store", "atomic")
_COUNTS = ("elements", "sectors", "requests", "request_sectors", "accesses")


def _pair_counts(major, minor):
    """Distinct (major, minor) pairs, and the distinct majors: via one sort, no key overflow."""
    if major.size == 0:
        return 0, 0
    order = np.lexsort((minor, major))
    major, minor = major[order], minor[order]
    new_major = np.empty(major.size, bool)
    new_major[0] = True
    new_major[1:] = major[1:] != major[:-1]
    new_pair = new_major.copy()
    new_pair[1:] |= minor[1:] != minor[:-1]
    return int(new_pair.sum()), int(new_major.sum())


def vector_width(addr, active, itemsize, per_thread):
    """Elements per thread vector (lane-order model): the widest power of two up to 16 bytes
    and up to `per_thread` (the block's elements per thread) that divides the block's last
    axis, such that every group of that many lanes along it is all inactive, or all active with
    consecutive, vector-aligned element addresses.
    `addr`, `active`: (programs, *block) element addresses (in the storage) and active lanes."""
    last = addr.shape[-1] if addr.ndim > 1 else 1
    v = VECTOR // itemsize
    while v > per_thread:
        v //= 2
    while v > 1:
        if last % v == 0:
            a = addr.reshape(-1, v)
            on = active.reshape(-1, v)
            full = on.all(axis=1)
            ok = (full | ~on.any(axis=1))
            if ok.all():
                a = a[full]
                if ((a[:, 0] * itemsize) % (v * itemsize) == 0).all() and \
                        (np.diff(a, axis=1) == 1).all():
                    return v
        v //= 2
    return 1


class Sectors(Journal, Observer):
    setting = "sectors"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.counts = {}  # (file, line, kind, argument) -> [elements, sectors, ...] (_COUNTS)
        self.bitmaps = {}  # same key -> (elements, sectors, programs) bool bitmaps
        self.itemsize = {}  # same key -> item size of the argument
        self.warps = int(ctx.record.options.get("num_warps") or DEFAULT_WARPS)

    def on_load(self, access):
        self._count(access, "load")

    def on_store(self, access):
        self._count(access, "store")

    def on_atomic(self, access):
        self._count(access, "atomic")

    def _count(self, access, kind):
        buf, ctx = access.buf, self.ctx
        file, line = kernel_site()
        key = (file, line, kind, buf.name)
        itemsize = buf.flat.itemsize
        rows_total = access.shape[0]
        block = access.shape[1:]
        numel = int(np.prod(block, dtype=np.int64)) if block else 1
        offs = access.offsets().astype(np.int64, copy=False)
        if offs.size == 0:
            return
        if access.lanes is None:
            rows = np.repeat(np.arange(rows_total), numel)
            lane = np.tile(np.arange(numel), rows_total)
            active = np.ones((rows_total, numel), bool)
        else:
            active = access.lanes.reshape(rows_total, numel)
            rows, lane = np.nonzero(active)
        sector = offs * itemsize // SECTOR
        sectors, _ = _pair_counts(rows, sector)
        shape = (rows_total, *block) if block else (rows_total, 1)
        addr = np.zeros((rows_total, numel), np.int64)
        addr[rows, lane] = offs
        v = vector_width(addr.reshape(shape), active.reshape(shape), itemsize,
                         max(1, numel // (WARP * self.warps)))
        per_request = WARP * v
        requests_per_row = -(-numel // per_request)
        request = rows * requests_per_row + lane // per_request
        request_sectors, requests = _pair_counts(request, sector)
        accessed_rows = np.unique(rows)
        repeat = access.repeat
        if repeat > 1:  # one access stands for every program running together
            pids = ctx.pids
        else:
            pids = ctx.pids[accessed_rows]
        gx, gy, _ = ctx.grid
        linear = pids[:, 0].astype(np.int64) + gx * (pids[:, 1] + gy * pids[:, 2])
        counts = self.counts.get(key)
        if counts is None:
            counts = self.counts[key] = [0] * len(_COUNTS)
            size = buf.size
            self.bitmaps[key] = (np.zeros(size, bool),
                                 np.zeros(size * itemsize // SECTOR + 1, bool),
                                 np.zeros(int(np.prod(ctx.grid)), bool))
            self.itemsize[key] = itemsize
        added = (offs.size, sectors, requests, request_sectors, accessed_rows.size)
        for i, n in enumerate(added):
            counts[i] += n * repeat
        elements, sectors_seen, programs = self.bitmaps[key]
        self.set(elements, offs, True)
        self.set(sectors_seen, sector, True)
        self.set(programs, linear, True)

    def mark(self):
        return super().mark(), {k: list(v) for k, v in self.counts.items()}

    def undo(self, token):
        journal, counts = token
        super().undo(journal)
        self.counts = counts

    def commit(self, token):
        super().commit(token[0])

    def finish(self, rerun):
        self.ctx.record.lines = self.rows()

    def rows(self):
        rows = []
        order = {k: i for i, k in enumerate(KINDS)}
        for key in sorted(self.counts, key=lambda k: (k[0], k[1], order[k[2]], k[3])):
            file, line, kind, arg = key
            elements, sectors, requests, request_sectors, accesses = self.counts[key]
            itemsize = self.itemsize[key]
            seen, seen_sectors, programs = self.bitmaps[key]
            nbytes = elements * itemsize
            unique = int(seen.sum()) * itemsize
            nprograms = int(programs.sum())
            rows.append({
                "line": line, "file": file, "source": linecache.getline(file, line).strip(),
                "kind": kind, "arg": arg, "itemsize": itemsize, "elements": elements,
                "bytes": nbytes, "sectors": sectors,
                "efficiency": nbytes / (sectors * SECTOR) if sectors else 0.0,
                "unique_bytes": unique, "total_bytes": nbytes,
                "reuse": nbytes / unique if unique else 0.0,
                "unique_sectors": int(seen_sectors.sum()),
                "programs": nprograms, "accesses": accesses,
                "sectors_per_program": sectors / nprograms if nprograms else 0.0,
                "sectors_per_access": sectors / accesses if accesses else 0.0,
                "requests": requests, "request_sectors": request_sectors,
                "request_efficiency": nbytes / (request_sectors * SECTOR) if request_sectors
                else 0.0,
                "sectors_per_request": request_sectors / requests if requests else 0.0})
        return rows
