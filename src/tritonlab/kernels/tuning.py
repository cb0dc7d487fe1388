"""Tuning decisions of the kernels' launch functions, as small frozen configs per op and GPU
architecture (quack's style): tiles, warps, programs per SM and the sizes at which a launch
function switches kernels. Why each value is what it is, with the measurements behind it:
docs/decisions.md.

`tuning_for(kind, device)` is the config of one op ("rmsnorm", "matmul", "softmax", "rowsum",
"attention") for a device, looked up once per device (it is on the launch path). The tables are keyed by
compute capability major: 9 (Hopper, sm_90) holds what was measured on the H200. Other GPUs and
the CPU (the simulator, Triton's interpreter) take DEFAULTS, Hopper's values until they are
measured elsewhere. Rules that turn a config into a launch's numbers are its methods, on a
small `Device` record (`device_of`).
"""
from __future__ import annotations

import dataclasses
import functools

import torch


@dataclasses.dataclass(frozen=True)
class Device:
    """What the tuning rules need of where a launch runs: the CUDA device index (None: the CPU,
    the simulator or Triton's interpreter) and its streaming multiprocessors (0 on the CPU)."""

    index: int | None
    sms: int = 0

    @property
    def on_gpu(self):
        return self.index is not None


@functools.lru_cache(maxsize=None)
def device_of(index):
    """The Device of `tensor.get_device()` (-1 or None: the CPU), looked up once per device."""
    if index is None or index < 0:
        return Device(None)
    return Device(index, torch.cuda.get_device_properties(index).multi_processor_count)


def _cdiv(a, b):
    return -(-a // b)


# Shared memory a pipelined loop's buffers may take: the H100's and H200's 227 KiB per block,
# less room for the reductions' scratch
STAGE_BUDGET = 192 << 10


def fit_stages(stages, bytes_per_stage, budget=STAGE_BUDGET):
    """`stages` of a loop software-pipelined by Triton, fewer where `stages` buffers of
    `bytes_per_stage` (each step's loads) would not fit in `budget` bytes of shared memory;
    None (the loop as written) where not even two fit or none were asked for."""
    if not stages:
        return None
    fit = min(stages, budget // max(1, bytes_per_stage))
    return fit if fit >= 2 else None


def stages_kw(stages, bytes_per_stage):
    """A launch's STAGES keyword for `fit_stages(stages, bytes_per_stage)`, or none at all
    where the loop runs as written (so that its launch key stays today's)."""
    fit = fit_stages(stages, bytes_per_stage)
    return {"STAGES": fit} if fit else {}


def l2_rows_ahead(per_sm, pieces, device):
    """Rows ahead of an exchange forward's one-row form whose pieces a program asks of L2:
    about `per_sm` programs per SM's worth (a later wave's rows), at least one; 0 (no hint)
    off a GPU or where per_sm is 0."""
    if not per_sm or not device.on_gpu:
        return 0
    return max(1, per_sm * device.sms // pieces)


def persistent_programs(per_sm, simulator, n_rows, device):
    """Programs of a persistent kernel stepping through rows: `per_sm` per SM on a GPU,
    `simulator` where there are no SMs, never more than rows."""
    return max(1, min(n_rows, per_sm * device.sms if device.on_gpu else simulator))


def takes_row(pairs, element_size, n_cols):
    """Whether a row of n_cols elements of element_size bytes is one of `pairs`' rows:
    (element size, narrowest row) pairs."""
    return any(size == element_size and n_cols >= narrowest for size, narrowest in pairs)


def exchange_groups(per_sm, simulator, pieces, n_rows, device):
    """Groups of an exchange kernel whose groups of `pieces` programs (one per piece of a row)
    walk rows (RMSNorm's exchange backward, the pipelined exchange forwards): about `per_sm`
    programs per SM in all on a GPU, `simulator` groups where there are no SMs, at least one
    and never more than rows."""
    return max(1, min(n_rows, per_sm * device.sms // pieces if device.on_gpu else simulator))


@dataclasses.dataclass(frozen=True)
class RMSNormTuning:
    """Which RMSNorm kernels a row width takes, with their blocks, warps and programs
    (docs/decisions.md#rmsnorm-register-limits)."""

    fwd_register_max: int  # widest row the whole-row forward keeps in registers
    bwd_register_max: int  # the same for the backward; wider rows take the wide-row kernels
    # The wide-row kernels' chunk along a row and its warps (forward, backward step 1)
    # (docs/decisions.md#rmsnorm-wide-forward); the forward's own chunk
    # (docs/decisions.md#softmax-online-hints)
    wide_chunk: int
    wide_fwd_chunk: int
    wide_warps: int
    # The wide-row backward's 2-D tiles, their warps, and programs per SM = tiled_bytes_per_sm
    # / element size (docs/decisions.md#rmsnorm-wide-backward-tiles)
    tile_m: int
    tile_n: int
    tile_warps: int
    tiled_bytes_per_sm: int
    # Whole-row backward: bwd_cols_per_sm // row width programs per SM, 1 to bwd_max_per_sm
    # (docs/decisions.md#rmsnorm-backward-programs)
    bwd_cols_per_sm: int
    bwd_max_per_sm: int
    # and one warp per bwd_bytes_per_warp of input row, bwd_min_warps to bwd_max_warps
    # (docs/decisions.md#rmsnorm-backward-warps)
    bwd_bytes_per_warp: int
    bwd_min_warps: int
    bwd_max_warps: int
    # rows of at most this many bytes load the next row before reducing this one, with twice
    # the warps (docs/decisions.md#rmsnorm-backward-prefetch)
    bwd_prefetch_bytes: int
    simulator_programs: int  # programs of either backward where there are no SMs
    # Row loops software-pipelined by Triton (`tl.range(..., num_stages=)`: the next rows' or
    # chunks' loads in flight in shared memory) and a persistent whole-row forward; None and
    # off by default, the Hopper table sets what was measured to win
    # (docs/decisions.md#row-loop-stages): the whole-row backward's stages (in place of
    # PREFETCH where set), the wide-row kernels' stages, and whether whole rows take the
    # persistent forward, with its programs per SM and stages
    bwd_stages: int | None = None
    wide_stages: int | None = None
    fwd_loop: bool = False
    fwd_loop_per_sm: int = 2
    fwd_loop_stages: int | None = 3
    # Wide rows that take the exchange forward instead of the chunked one (read once, in
    # pieces of exchange_block columns, exchange_warps each, meeting in memory as softmax's
    # exchange does): (element size in bytes, narrowest such row) pairs (same entry)
    fwd_exchange: tuple = ()
    exchange_block: int = 8192
    exchange_warps: int = 8
    # the exchange forward's groups walking rows in a loop software-pipelined over
    # fwd_exchange_stages rows (the meeting in inline PTX on a GPU), about fwd_exchange_per_sm
    # programs per SM; None: a row per group (docs/decisions.md#exchange-pipelined; off until
    # benchmarks/probes/exchange_pipelined.py measures it)
    fwd_exchange_stages: int | None = None
    fwd_exchange_per_sm: int = 2
    # the exchange forward's one-row form: each program, once its piece is loaded, asks L2
    # for the same piece of the row about this many programs per SM on (`l2_rows_ahead`), the
    # one a program of a later wave will read, so that DRAM works while the resident ones
    # meet; GPU only, 0: off until benchmarks/probes/exchange_l2.py measures it
    # (docs/decisions.md#rmsnorm-backward-prefetch-depth)
    fwd_exchange_l2_next: int = 0
    # The same for the backward's wide rows (x and dy read once, in pieces of `block` columns
    # that meet in memory every `rows` rows): (element size, block, rows, widest such row)
    # entries, the first that fits taking the row, bwd_exchange_warps per program, about
    # bwd_exchange_per_sm programs per SM in all (groups of rows, a program per piece each);
    # an entry's optional fifth item says whether its meetings split around the next step's
    # loads (SPLIT), in place of bwd_exchange_split, its sixth its stages, in place of
    # bwd_exchange_stages
    bwd_exchange: tuple = ()
    bwd_exchange_warps: int = 4
    bwd_exchange_per_sm: int = 2
    bwd_exchange_split: bool = False
    # entries without split meetings and stages of their own: their step loop software-
    # pipelined over this many stages, the meeting in inline PTX on a GPU (None: off)
    # (docs/decisions.md#exchange-pipelined)
    bwd_exchange_stages: int | None = None
    # on a GPU, each step of the exchange backward first asks L2 for its piece of the rows
    # this many steps on (prefetch.global.L2): DRAM busy while the pieces meet, no registers
    # or shared memory held; 0: off until benchmarks/probes/rms_bwd_depth.py measures it
    # (docs/decisions.md#rmsnorm-backward-prefetch-depth)
    bwd_exchange_l2_ahead: int = 0
    # the whole-row backward's bwd_stages apply to rows of at most this many bytes
    bwd_stages_bytes: int = 1 << 30
    # The whole-row backward with dg's sum in the same launch (rmsnorm_bwd_fused_kernel): the
    # last `bwd_fuse_dg` programs (at most half the SMs) to finish their rows sum dg's
    # columns, in place of rmsnorm_dg_sum_kernel's launch (2.9-4.5 us of graph time alone on
    # an H100 at 8192x4096 and 32768x1024, docs/results/row-stages-h100-2026-12-05.json); 0:
    # off, until
    # benchmarks/probes/rms_bwd_fused_dg.py measures it
    # (docs/decisions.md#rmsnorm-backward-fused-dg)
    bwd_fuse_dg: int = 0
    # how many rows ahead that prefetch loads: 1 (the next row, two in flight a program), or
    # 2 (the next two, three in flight, 2 ** 2 times the warps); 1 until
    # benchmarks/probes/rms_bwd_depth.py measures 2 (docs/decisions.md#rmsnorm-backward-
    # prefetch-depth)
    bwd_prefetch_rows: int = 1
    # and, on a GPU, each of its steps asks L2 for the x and dy of the row this many rows on
    # (prefetch.global.L2, no registers held); 0: off until rms_bwd_depth.py measures it
    bwd_l2_ahead: int = 0
    # Programmatic dependent launch (Hopper): every RMSNorm kernel launched with Triton's
    # launch_pdl, waiting (griddepcontrol.wait) before it touches memory and releasing its
    # dependents as it starts, so that a training step's next kernel (the backward after the
    # forward, dg's sum after the backward) is launched and its programs placed while the
    # one before drains; off: benchmarks/probes/rms_pdl.py found no gain on an H100
    # (docs/decisions.md#rmsnorm-pdl)
    pdl: bool = False

    def fwd_exchanges(self, element_size, n_cols):
        """Whether wide rows of n_cols elements of this size take the exchange forward."""
        return takes_row(self.fwd_exchange, element_size, n_cols)

    def bwd_exchange_tile(self, element_size, n_cols):
        """(block, rows per step, split, stages) of the exchange backward for wide rows of
        n_cols elements of this size, or None where they take the tiled backward; stages (the
        step loop pipelined) None where meetings split."""
        for size, block, rows, widest, *extra in self.bwd_exchange:
            if size == element_size and n_cols <= widest:
                split = extra[0] if extra else self.bwd_exchange_split
                stages = extra[1] if len(extra) > 1 else self.bwd_exchange_stages
                return block, rows, split, None if split else stages
        return None

    def fwd_loop_programs(self, n_rows, device):
        """Programs of the persistent whole-row forward: fwd_loop_per_sm per SM, a handful on
        the simulator, never more than rows."""
        return persistent_programs(self.fwd_loop_per_sm, self.simulator_programs, n_rows,
                                   device)

    def bwd_programs(self, n_rows, n_cols, device):
        """Programs of the whole-row backward: more per SM for short rows, whose programs are
        latency-bound; a handful on the simulator."""
        if device.on_gpu:
            per_sm = min(self.bwd_max_per_sm, max(1, self.bwd_cols_per_sm // max(1, n_cols)))
            return max(1, min(n_rows, per_sm * device.sms))
        return max(1, min(n_rows, self.simulator_programs))

    def bwd_warps(self, block, element_size, prefetch=False):
        """Warps of the whole-row backward, which keeps x, dy, g and the dg accumulator of a row
        in registers: enough that they do not spill, no more (more warps cost time); twice as
        many where it holds the next row's x and dy too (`bwd_prefetch_rows` 2: four times)."""
        warps = block * element_size // self.bwd_bytes_per_warp
        ahead = 2 ** self.bwd_prefetch_rows if prefetch else 1
        return min(self.bwd_max_warps, max(self.bwd_min_warps, warps) * ahead)

    def tiled_rows(self, n_rows, n_cols, block_m, block_n, element_size, device):
        """Rows per program of the tiled backward (a multiple of block_m): enough programs for
        tiled_bytes_per_sm (more in 16 bits than in fp32), a handful on the simulator."""
        col_blocks = _cdiv(n_cols, block_n)
        target = (max(1, self.tiled_bytes_per_sm // element_size) * device.sms
                  if device.on_gpu else self.simulator_programs)
        row_blocks = max(1, target // col_blocks)
        return _cdiv(_cdiv(n_rows, row_blocks), block_m) * block_m


@dataclasses.dataclass(frozen=True)
class MatmulTuning:
    """The tiles the matmul kernels run and are tuned over, and the sizes that choose tuning
    and the TMA kernel (docs/decisions.md#matmul-configs)."""

    # (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages) the autotuner tries. The first is the
    # fixed tile of products up to tune_above and the one the simulator runs: the smallest
    # (docs/decisions.md#matmul-pointer-configs)
    configs: tuple
    # The same for the persistent TMA kernel (docs/decisions.md#matmul-tma-configs)
    tma_configs: tuple
    group_m: int  # GROUP_M row tiles sweep N together, so that they share B in L2
    # M*N*K up to which the first config runs: tuning buys nothing there
    # (docs/decisions.md#matmul-tune-above)
    tune_above: int
    # M*N*K from which 16-bit products take the TMA kernel on Hopper or newer: below it,
    # building the descriptors costs the host more (docs/decisions.md#matmul-tma-threshold)
    tma_above: int
    simulator_tma_programs: int  # programs of the persistent TMA kernel where there are no SMs


@dataclasses.dataclass(frozen=True)
class SoftmaxTuning:
    """Which softmax kernel a row length takes, with its rows per program, block and warps
    (docs/decisions.md#softmax-variants)."""

    # longest row block of the one-row kernels; longer rows go online, or for fp32 forwards
    # to the exchange (docs/decisions.md#softmax-exchange)
    max_row_block: int
    max_bwd_row_block: int  # the same for the backward (not measured past 16384)
    wide_row_block: int  # one-row blocks from this wide run wide_row_warps (else num_warps_for)
    wide_row_warps: int
    rows_below: int  # row blocks shorter than this put several rows in one program:
    rows_elements: int  # rows_elements // block of them,
    max_rows: int  # at most max_rows
    online_block: int  # the online kernel's block along a row (16- and 64-bit rows)
    online_block_fp32: int  # the same for float32 rows (docs/decisions.md#softmax-online-hints)
    online_warps: int
    online_bwd_block: int  # the same for the online backward (docs/decisions.md#softmax-split)
    online_bwd_warps: int
    # variant="split" (asked for only: it loses to the online kernel): rows cut into chunks,
    # about split_programs_per_sm programs per SM in all (docs/decisions.md#softmax-split)
    split_block: int
    split_warps: int
    split_programs_per_sm: int
    # variant="exchange": long rows read once, programs of exchange_block columns meeting in
    # memory (docs/decisions.md#softmax-exchange)
    exchange_block: int
    exchange_warps: int
    # the rows past max_row_block that take the exchange: (element size, narrowest row) pairs
    # (in no more pieces than may wait for each other); others go online
    exchange_rows: tuple = ((4, 0),)
    # the exchange's groups walking rows in a loop software-pipelined over exchange_stages
    # rows (the next rows' pieces in flight while a row's meet; the meeting in inline PTX on a
    # GPU), about exchange_per_sm programs per SM; None: a row per group, as before
    # (benchmarks/probes/exchange_pipelined.py)
    exchange_stages: int | None = None
    exchange_per_sm: int = 2
    # the exchange's one-row form asks L2 for later rows' pieces, as RMSNormTuning's
    # fwd_exchange_l2_next (0: off)
    exchange_l2_next: int = 0
    # variant="loop": persistent programs, loop_per_sm per SM (simulator_loop_programs where
    # there are none), stepping through whole rows in a loop software-pipelined over
    # loop_stages rows; `loop` makes it the default of the rows that take the one-row kernel.
    # online_stages pipelines the online kernels' loops. Off until measured on the GPU
    # (docs/decisions.md#row-loop-stages)
    loop: bool = False
    loop_per_sm: int = 2
    loop_stages: int | None = 3
    simulator_loop_programs: int = 4
    online_stages: int | None = None
    # the one-row and several-rows forward kernels store with .cs (streaming, evict first from
    # L2), as Liger's softmax does, which was 1.02-1.04x ours at 32768x1024 bf16 on the H200
    # (2026-12-06); off until benchmarks/probes/softmax_stream.py measures it
    row_stream: bool = False

    def loop_programs(self, n_rows, device):
        """Programs of variant="loop": loop_per_sm per SM, a few on the simulator."""
        return persistent_programs(self.loop_per_sm, self.simulator_loop_programs, n_rows,
                                   device)


@dataclasses.dataclass(frozen=True)
class RowSumTuning:
    """The default row-sum kernel's rows per program, block and warps
    (docs/decisions.md#rowsum-tiles)."""

    block: int  # columns per step along a row (fewer for shorter rows)
    short_cols: int  # rows of up to this many columns (next power of two)
    short_rows: int  # go this many to a program
    bytes_per_warp: int  # one warp per this many bytes of a step's block,
    short_bytes_per_warp: int  # of short rows' blocks,
    min_warps: int  # within these bounds
    max_warps: int


@dataclasses.dataclass(frozen=True)
class AttentionTuning:
    """Configs (BLOCK_M, BLOCK_N, num_warps, num_stages) of FlashAttention's tiled kernels
    (kernels/attention.py). The forward and dQ kernels own BLOCK_M queries and step BLOCK_N
    keys (BLOCK_M a multiple of BLOCK_N); the dK/dV kernels own BLOCK_N keys and step BLOCK_M
    queries (BLOCK_N a multiple of BLOCK_M): the causal loop bounds rely on it. `small` serves
    head dims up to 64, `large` up to 128 (more registers per row: smaller tiles or more
    warps). The autotuner picks among them per shape, dtype and causality. Each
    implementation has its own sets: `fwd` the pointer forward, `fwd_tma` the TMA forward
    (all three of its variants: in-kernel descriptors, the same with warp specialization,
    host descriptors), `dkdv` + `dq` the two-kernel backward, `dkdv_atomic` the one-pass
    backward (dQ by atomics inside the dK/dV kernel)."""

    fwd_small: tuple
    fwd_large: tuple
    dkdv_small: tuple
    dkdv_large: tuple
    dq_small: tuple
    dq_large: tuple
    fwd_tma_small: tuple = ()
    fwd_tma_large: tuple = ()
    dkdv_atomic_small: tuple = ()
    dkdv_atomic_large: tuple = ()
    # the Gluon forward's one tile per head dim (kernels/attention_gluon.py): no autotuning
    gluon_small: tuple = ()
    gluon_large: tuple = ()
    # the warp-specialized Gluon forward's ("gluon-ws": FlashAttention-3's consumer loop; 128
    # queries a program on two consumer warp groups of 4 warps)
    gluon_ws_small: tuple = ()
    gluon_ws_large: tuple = ()
    # the Gluon backward's (dK/dV: BLOCK_M queries a step, BLOCK_N keys a program; dQ:
    # BLOCK_M queries a program, BLOCK_N keys a step)
    gluon_dkdv_small: tuple = ()
    gluon_dkdv_large: tuple = ()
    gluon_dq_small: tuple = ()
    gluon_dq_large: tuple = ()
    # ... and its warp-specialized kernels' ("gluon-ws": dK/dV 128 keys a program, dQ 128
    # queries, each on two consumer warp groups of 4 warps and a loader)
    gluon_ws_dkdv_small: tuple = ()
    gluon_ws_dkdv_large: tuple = ()
    gluon_ws_dq_small: tuple = ()
    gluon_ws_dq_large: tuple = ()
    # the Gluon one-pass backward's (BLOCK_M queries a step: 64, one warp group's wgmma of
    # dQ's share; BLOCK_N keys a program)
    gluon_one_pass_small: tuple = ()
    gluon_one_pass_large: tuple = ()
    # ... and its warp-specialized form's ("gluon-ws-atomic": 64 queries a step, 128 keys a
    # program on two consumer warp groups of 4 warps and a loader)
    gluon_ws_one_pass_small: tuple = ()
    gluon_ws_one_pass_large: tuple = ()
    # ... and the forward the default only where it runs at least this many programs per SM (fewer, and
    # its loop's MMA latency shows: the TMA forward then)
    gluon_min_waves: int = 3
    # What flash_attention runs when no implementation is asked for: forward "pointers",
    # "tma", "tma-ws", "tma-host" (a TMA one only for inputs TMA can read, else "pointers")
    # or "gluon"/"gluon-ws" (where it can take the inputs, else "tma"); backward "two-kernel" or
    # "atomic" (or their "-tma" forms). To be set by measurement on the GPU
    # (benchmarks/attention.py --quick times them side by side; docs/attention.md)
    fwd_impl: str = "pointers"
    # ... and for head dims above 64, where set
    fwd_impl_large: str = ""
    bwd_impl: str = "two-kernel"
    # ... and for head dims up to 64, where set (problems small enough to be the host's take
    # the pointer counterpart of bwd_impl, or of bwd_fallback for a Gluon one, whatever the
    # head dim: the native path's)
    bwd_impl_small: str = ""
    # The tl backward a Gluon default gives way to where Gluon cannot take the inputs (fp32,
    # head dims not a power of two), for head dims above 64 and up to 64; "": the tl backward
    # of the Gluon one's plan (attention.py's _GLUON_BWD)
    bwd_fallback: str = ""
    bwd_fallback_small: str = ""
    # The TMA forward runs causal programs longest query rows first across groups of heads
    # whose K and V together take at most this many bytes (so that they stay in L2 while
    # every query tile of the group reads them): about half an H100's/H200's 50 MB L2
    causal_group_bytes: int = 24 << 20
    # The simulator's one config per kernel: small tiles (tests use sequences of 16 to 80)
    # with BLOCK_M != BLOCK_N, so that the causal bounds' multiple-of rule is exercised
    simulator_fwd: tuple = (32, 16, 4, 1)
    simulator_dkdv: tuple = (16, 32, 4, 1)
    simulator_dq: tuple = (32, 16, 4, 1)
    simulator_fwd_tma: tuple = (32, 16, 4, 1)
    simulator_dkdv_atomic: tuple = (16, 32, 4, 1)
    simulator_gluon: tuple = (64, 32, 4, 2)
    simulator_gluon_ws: tuple = (128, 32, 4, 2)
    simulator_gluon_dkdv: tuple = (32, 64, 4, 2)
    simulator_gluon_dq: tuple = (64, 32, 4, 2)
    simulator_gluon_ws_dkdv: tuple = (64, 128, 4, 2)
    simulator_gluon_ws_dq: tuple = (128, 64, 4, 2)
    simulator_gluon_one_pass: tuple = (64, 64, 4, 2)
    simulator_gluon_ws_one_pass: tuple = (64, 128, 4, 2)
    preprocess_block: int = 128  # rows per program of D = rowsum(dO * O)
    simulator_preprocess_block: int = 16
    # batch*heads*Nq*Nk up to which the first config runs untuned: tuning small problems costs
    # more compiles and timings than it can save (as matmul's tune_above)
    tune_above: int = 1 << 22
    # batch*heads*Nq*Nk*BLOCK_D*element size up to which a problem is the host's on a GPU
    # (attention.py's _host_bound): the pointer kernels through the native path. The
    # assignment's table on an H200 (2026-12-06, main at 26c9f9a): batch 1, one head, the
    # Python path of the TMA and Gluon kernels took 0.25 ms a forward and 1 ms a
    # forward+backward of host time, against 0.04-0.3 ms and 0.1-0.8 ms of the GPU's, up to
    # 16384 keys at d <= 64 and 32768 at d = 16 in bf16 (2^35 here) and half as many
    # multiply-adds in fp32; 1x1x16384x128 bf16's GPU time (about 0.8 ms) is near the host's
    host_bound_upto: int = 1 << 35
    # Host-bound problems (above) of head dims up to this take the one-pass pointer backward
    # ("atomic": P and dS computed once, dQ added with atomics into fp32, cast at the end)
    # instead of the two kernels; 0: never. Its kernels' GPU time against the two kernels'
    # (benchmarks/probes/attention_kernels.py, batch 1, one head, causal, H100, 2026-12-07,
    # backward us): bf16 d = 16 56 / 82 at 4096 keys, 232 / 315 at 16384, 582 / 812 at 32768;
    # d = 32 71 / 88, 309 / 356; d = 64 102 / 113, 482 / 494; fp32 d = 16 541 / 694 at 16384,
    # d = 32 644 / 910, d = 64 587 / 763 at 8192; but bf16 d = 128 at 8192 393 / 323
    host_one_pass_d: int = 0
    # fp32 problems of head dims up to `fp32_pointers_d` whose default forward is the TMA one
    # take the pointer forward instead, up to batch*heads*Nq*Nk*BLOCK_D*4 = `fp32_pointers_upto`
    # (0: never). The TMA forward's fp32 tiles at d = 16 and 32 are the slower:
    # benchmarks/attention.py --impls ours-pointers,ours-tma --dtypes fp32 --dims 16,32, batch
    # 1, one head, causal (H100, 2026-12-07, ms): d = 16 0.173 / 0.211 at 16384 keys, 0.369 /
    # 0.438 at 32768, 1.256 / 1.299 at 65536 (2^38); d = 32 0.267 / 0.268, 0.512 / 0.562
    # (2^37), and 1.865 / 1.762 at 65536 (2^39: TMA's). The H200 the same way on 2026-12-06:
    # pointers (2026-12-02) 0.390 / 0.490 ms at 32768 keys, d = 16 / 32, TMA 0.449 / 0.569
    fp32_pointers_d: int = 0
    fp32_pointers_upto: int = 0
    # fp32 head dims (as BLOCK_D) whose pointer and split forwards keep the scale unfolded: the
    # scores scaled as a pass of their own, as before session 23 (FOLD off: _softmax_step).
    # At d = 32 the folded kernel's 128x128x8x3 tiles, the fastest in a CUDA graph (242
    # against 249 us unfolded), lose in do_bench's L2-flushed timing (261 against 252), the
    # autotuner's and the table's measure, which then picks 64x64x4x3 (262): 1x1x16384x32 fp32
    # causal 1.05-1.06x the 2026-12-02 forward in three table runs (H100, 2026-12-07, session
    # 41, benchmarks/probes/attention_fp32_fwd.py). At d = 16 the folded one is the faster
    # (167 against 176 us at 16384 keys)
    fp32_unfolded_d: tuple = ()
    # The split forward (impl "split": attn_fwd_split_kernel): keys cut into shares, one
    # program each, for problems of few query blocks, whose programs otherwise each walk
    # every key one tile after another (latency-bound: 8 programs at 1x1x1024x64). A default
    # pointer forward of fewer than `split_programs_below` programs
    # (batch*heads*cdiv(Nq, BLOCK_M)) takes it, in as many shares as bring it there, at most
    # `max_splits`, each of at least `split_min_keys` keys; 0: never by default (impl="split"
    # asks for it). `split_combine`: "last", the last share of a query block to finish
    # combines them in the same launch (a counter per query block; session 38, first run on
    # an H100 in session 39: its GPU tests passed, but for a bitwise comparison with the
    # second kernel's where the autotuner had given the two kernels different tiles (now one
    # fixed tile, its rerun owed), and its wall a call was 2-6 us below the two launches' on
    # all 8 rows of benchmarks/probes/attention_split.py, 1x1x1024x64 fp16 12.8 against
    # 14.6, at the same GPU time, 13.0 against 12.6); "kernel", a second
    # launch (attn_fwd_combine_kernel) combines the shares, rows of `split_combine_block`
    # queries a program (sessions 36-37)
    split_programs_below: int = 0
    split_min_keys: int = 256
    # An untuned pointer forward (batch*heads*Nq*Nk up to tune_above) of fewer programs at its
    # first config's BLOCK_M than this many times the SMs takes the configs of the smallest
    # BLOCK_M first (attention.py's _untuned_configs); 0: the first config always. Its programs
    # are latency-bound: batch 1, one head, causal, bf16, GPU us of a forward in CUDA-graph
    # replays (H100, 2026-12-07, session 42, benchmarks/probes/attention_fp32_fwd.py), the
    # first config / (64, 64, 4, 3): d = 64 5.6 / 3.5 at 128 keys, 11.3 / 6.6 at 512, 18.8 /
    # 10.8 at 1024; d = 128 6.8 / 5.1 at 128
    untuned_fwd_fill: int = 0
    max_splits: int = 16
    split_combine: str = "last"
    split_combine_block: int = 64

    def configs(self, kernel, block_d):
        """The configs of kernel "fwd", "dkdv", "dq", "fwd_tma" or "dkdv_atomic" for a
        head-dim block."""
        return getattr(self, f"{kernel}_{'small' if block_d <= 64 else 'large'}")

    def simulator(self, kernel):
        return getattr(self, f"simulator_{kernel}")


TUNINGS = {
    "rmsnorm": {9: RMSNormTuning(
        fwd_register_max=32768, bwd_register_max=8192, wide_chunk=4096, wide_fwd_chunk=16384,
        wide_warps=16,
        tile_m=4, tile_n=1024, tile_warps=4, tiled_bytes_per_sm=8, bwd_cols_per_sm=8192,
        bwd_max_per_sm=4, bwd_bytes_per_warp=2048, bwd_min_warps=4, bwd_max_warps=32,
        bwd_prefetch_bytes=8192, simulator_programs=8,
        # measured 2026-12-05 and 2026-12-06 on an H100 (benchmarks/probes/row_stages.py;
        # docs/decisions.md#row-loop-stages): the exchange forward for fp32 wide rows and bf16
        # from 131072 columns; the exchange backward from 16384 columns (the whole-row one
        # spills there), fp32 in pieces of 2048 meeting every 4 rows up to 16384 columns, then
        # (4096, 2) up to 65536, then (8192, 1), bf16 (4096, 2) up to 65536 then (2048, 4) with
        # split meetings; the wide kernels' loops in 3 stages, the whole-row backward's in 3
        # stages for rows of at most 2 KiB
        fwd_exchange=((4, 0), (2, 131072)),
        # (2026-12-07, session 46: bf16 rows up to 65536 with their step loop pipelined over 3
        # stages, docs/decisions.md#exchange-pipelined)
        bwd_exchange=((4, 2048, 4, 16384), (4, 4096, 2, 65536), (4, 8192, 1, 1 << 31),
                      (2, 4096, 2, 65536, False, 3), (2, 2048, 4, 1 << 31, True)),
        wide_stages=3, bwd_stages=3, bwd_stages_bytes=2048)},
    "matmul": {9: MatmulTuning(
        configs=((64, 64, 32, 4, 4), (128, 128, 64, 4, 4), (64, 128, 64, 4, 4),
                 (128, 64, 64, 4, 4), (128, 256, 64, 8, 3), (128, 256, 64, 8, 4),
                 (128, 256, 32, 8, 4), (256, 128, 64, 8, 3)),
        tma_configs=((128, 128, 64, 4, 4), (128, 256, 64, 8, 3), (256, 128, 64, 8, 3)),
        group_m=8, tune_above=1 << 27, tma_above=1 << 34, simulator_tma_programs=4)},
    "softmax": {9: SoftmaxTuning(
        max_row_block=32768, max_bwd_row_block=16384, wide_row_block=32768, wide_row_warps=32,
        rows_below=1024, rows_elements=2048, max_rows=16,
        online_block=8192, online_block_fp32=16384, online_warps=16, online_bwd_block=8192,
        online_bwd_warps=16,
        split_block=4096, split_warps=8, split_programs_per_sm=8, exchange_block=8192,
        exchange_warps=8,
        # fp32 rows (H200, 2026-12-02) and 16-bit rows from 262144 columns (H100, 2026-12-07:
        # 1.07x the online kernel in do_bench, 1.13x in graph time; a tie on the H200 of
        # 2026-12-02, before the exchange's write lost its division;
        # docs/decisions.md#exchange-split-forward)
        exchange_rows=((4, 0), (2, 262144)))},
    "rowsum": {9: RowSumTuning(
        block=2048, short_cols=1024, short_rows=2, bytes_per_warp=512, short_bytes_per_warp=1024,
        min_warps=4, max_warps=16)},
    # H100/H200 candidates, after Triton's fused-attention tutorial's choices (fwd 128x64 /
    # 128x128, bwd 32x128 / 128x32) and their neighbours. Few of them: each is one compile per
    # head dim, dtype and causality (4-6 per set). None spills more than 512 B a thread
    # in 16 bits: configs that did ran 2-4x slower on the GPU (`compile_check.py --configs
    # --max-spill 512`, docs/attention.md#tiles-and-tuning)
    "attention": {9: AttentionTuning(
        fwd_small=((128, 64, 4, 3), (128, 128, 8, 3), (128, 64, 4, 4), (128, 32, 4, 3),
                   (64, 64, 4, 3), (64, 32, 4, 4)),
        fwd_large=((128, 64, 8, 3), (128, 128, 8, 3), (128, 32, 4, 3), (64, 64, 4, 3),
                   (64, 32, 4, 4)),
        dkdv_small=((32, 128, 4, 3), (32, 128, 8, 3), (64, 128, 8, 3), (64, 128, 8, 2),
                    (32, 64, 4, 3), (16, 64, 4, 4)),
        dkdv_large=((32, 128, 8, 3), (64, 128, 8, 3), (64, 128, 8, 2), (32, 64, 4, 3),
                    (16, 64, 4, 3)),
        dq_small=((128, 32, 4, 3), (128, 32, 8, 3), (128, 64, 8, 3), (64, 32, 4, 3),
                  (64, 16, 4, 4)),
        dq_large=((128, 32, 8, 3), (128, 64, 8, 3), (128, 64, 8, 2), (64, 32, 4, 3),
                  (64, 16, 4, 3)),
        # TMA forward: the tutorial's space (BLOCK_M 64/128, BLOCK_N 32-128, 2-4 stages of
        # TMA loads in flight, 8 warps only for 128x128 tiles on Hopper), its test config
        # (128, 64, 4, 2) among them
        fwd_tma_small=((128, 64, 4, 3), (128, 128, 8, 3), (128, 64, 4, 4), (128, 64, 4, 2),
                       (128, 32, 4, 3), (64, 64, 4, 3)),
        fwd_tma_large=((128, 64, 4, 3), (128, 128, 8, 2), (128, 64, 4, 2), (128, 128, 8, 3),
                       (128, 32, 4, 4), (64, 64, 4, 3)),
        # one-pass backward: each step now also does dQ's dot and BLOCK_M x d atomics, so
        # taller query steps (64, FlashAttention-3's 64 x 128 on Hopper) join the two-kernel
        # dK/dV kernel's tiles
        dkdv_atomic_small=((64, 128, 8, 2), (32, 128, 4, 3), (32, 128, 8, 3), (64, 64, 4, 3),
                           (32, 64, 4, 3)),
        dkdv_atomic_large=((64, 128, 8, 2), (32, 128, 8, 3), (64, 128, 8, 1), (32, 64, 4, 3)),
        # measured 2026-12-05 on an H100 (triton 3.6, benchmarks/attention.py --quick, the four
        # speed rows): the TMA forward 1.03-1.11x the pointer one on every row, so it is the
        # default; the one-pass backward 0.98x and 0.79x the two-kernel one, so not
        # (docs/attention.md#measured). The two-kernel backward through TMA: 2026-12-06 on an
        # H100, fwd+bwd 1.01-1.15x the pointer one on the four speed rows (bwd 0.97-1.07x, one
        # run) and 1.12x at the same tiles in the probe, once its tail loops went (EVEN_*)
        # the Gluon forward (plain schedule), the fastest tiles of benchmarks/probes/
        # gluon_attention.py on an H100 (2026-12-06): 128x128 on 8 warps in 3 stages for
        # d = 64, 128x64 on 8 warps in 2 stages for d = 128. The default where it takes the
        # inputs (else the TMA forward): 1.03-1.07x the TMA forward on the four speed rows
        # (H100, 2026-12-06, attention.py --quick --variants ours-gluon, one run), where it
        # runs 3 programs per SM or more: on the assignment's table (batch 1, one head) it is
        # 0.25-0.88x the TMA forward up to 256 programs (32768 keys) and 1.07-1.18x at 512
        gluon_small=(128, 128, 8, 3), gluon_large=(128, 64, 8, 2), gluon_min_waves=3,
        # the warp-specialized Gluon forward in FlashAttention-3's consumer loop ("gluon-ws",
        # session 31), benchmarks/probes/gluon_attention.py on an H100 (2026-12-06, one run):
        # 4x32x4096x128 fp16 1.788 ms at (128, 128, 4, 2), 2.079 at (128, 64, 4, 3), against
        # the plain Gluon forward's 1.998 and cuDNN's 1.640 (1.12x plain); causal (session 32):
        # 4x32x4096x128 fp16 1.024 ms against plain's 1.050 (128x64) and cuDNN's 0.945,
        # 1x1x65536x128 bf16 1.642 against 1.866 and cuDNN's 2.001: the default for d > 64,
        # causal or not (fwd_impl_large); 16x16x16384x64 bf16 causal 19.6 and 23.3 ms against
        # plain's 17.6, so not for d <= 64; persistent since session 32 (attention.py's
        # _GLUON_FWD): 4x32x4096x128 fp16 1.822 ms against 1.884 a program per tile (cuDNN
        # 1.763), causal 0.982 against 1.074 (cuDNN 1.017), 1x1x65536x128 bf16 causal 1.746
        # against 1.707 (cuDNN 2.052)
        gluon_ws_small=(128, 128, 4, 2), gluon_ws_large=(128, 128, 4, 2),
        gluon_dkdv_small=(64, 128, 8, 2), gluon_dkdv_large=(64, 128, 8, 2),
        gluon_dq_small=(128, 64, 8, 2), gluon_dq_large=(128, 64, 8, 2),
        # the warp-specialized Gluon backward ("gluon-ws"): benchmarks/probes/
        # gluon_attention_bwd.py on an H100 (2026-12-06, session 33), 4x32x4096x128 fp16 6.153
        # ms at d = 128's tiles (3 stages; 6.233 at 2), causal 3.362, 1x1x65536x128 bf16
        # causal 5.556, against the tl two kernels through TMA's 6.751, 3.907, 6.460 (cuDNN
        # 5.384, 3.033, 5.061): bwd_impl for d > 64 then; d = 64's 3.540 ms on the
        # leaderboard's row tied the one pass through TMA (3.583), which stayed bwd_impl_small
        # ... and at d = 64 (session 34, the same probe on an H100): 3.212 ms at (128, 128, 4,
        # 3) / (128, 64, 4, 3) on the leaderboard's row against 3.634 at (64, 128, 4, 2) /
        # (128, 64, 4, 2), the one pass through TMA's 3.587 and cuDNN's 3.151:
        # bwd_impl_small
        gluon_ws_dkdv_small=(128, 128, 4, 3), gluon_ws_dkdv_large=(64, 128, 4, 3),
        gluon_ws_dq_small=(128, 64, 4, 3), gluon_ws_dq_large=(128, 64, 4, 3),
        # the Gluon one pass (not a default): its fastest tiles in benchmarks/probes/
        # gluon_attention_bwd.py on an H100 (2026-12-06, session 30): 1.03x the Gluon two
        # kernels at d = 64 (4 warps: two programs an SM), 0.81-0.94x at d = 128 (spilling)
        gluon_one_pass_small=(64, 64, 4, 2), gluon_one_pass_large=(64, 128, 8, 2),
        # its warp-specialized form ("gluon-ws-atomic", session 33; d = 128 split, dQ's
        # columns halved between the consumers), the same probe on an H100 (2026-12-06,
        # session 34): 4x32x4096x128 fp16 5.582 ms at 3 stages (5.531 at 2), causal 3.088
        # (3.218), 1x1x65536x128 bf16 causal 4.870 (4.938), against the warp-specialized two
        # kernels' 6.142, 3.373, 5.531 and cuDNN's 5.391, 3.012, 4.938: bwd_impl (d > 64 is
        # d = 128 for Gluon); at d = 64 3.245 ms (64, 128, 4, 3), a tie with "gluon-ws"
        gluon_ws_one_pass_small=(64, 128, 4, 3), gluon_ws_one_pass_large=(64, 128, 4, 3),
        # fp32 forwards at d <= 32: the pointer kernel (AttentionTuning's figures)
        fp32_pointers_d=32, fp32_pointers_upto=1 << 38, fp32_unfolded_d=(32,),
        # the split forward's GPU time, benchmarks/probes/attention_split.py on an H100
        # (2026-12-07; docs/results/attention-split-h100-2026-12-07.json): 4 shares the fastest
        # or within 3 % at batch 1, one head, 1024-8192 keys, d = 64 and 128, fp16 and bf16,
        # causal (1x1x1024x64 fp16 12.1 us against the pointer forward's 17.1; 8192 keys 40.8
        # against 70.5), but for 8192 keys not causal (2: 54.9 against 4's 58.4); 8 and 16
        # slower on every row. split_programs_below stays 0 until wall per call is measured on
        # an H200 (the H100 machine's wall with the split on was above its GPU time)
        max_splits=4,
        # The one pass through TMA ("atomic-tma": dQ by TMA reductions) for d <= 64: 1.11x the
        # two kernels through TMA on the leaderboard's row (16x16384x64 bf16 causal, 3.604
        # against 3.995 ms, H100, 2026-12-06, probes/gluon_attention_bwd.py), 0.77-0.83x at
        # d = 128: the tl backwards where Gluon cannot run (fp32)
        fwd_impl="gluon", fwd_impl_large="gluon-ws", bwd_impl="gluon-ws-atomic",
        bwd_impl_small="gluon-ws", bwd_fallback="two-kernel-tma",
        bwd_fallback_small="atomic-tma",
        # the one pass for host-bound problems up to d = 64 (AttentionTuning's figures)
        host_one_pass_d=64,
        # untuned forwards of fewer programs than SMs: the smallest query tiles first
        # (AttentionTuning's figures)
        untuned_fwd_fill=1)},
}
DEFAULTS = {kind: table[9] for kind, table in TUNINGS.items()}


def tuning_for_capability(kind, capability):
    """The config of `kind` for a GPU of compute capability (major, minor); None: the CPU."""
    if capability is None:
        return DEFAULTS[kind]
    return TUNINGS[kind].get(capability[0], DEFAULTS[kind])


@functools.lru_cache(maxsize=None)
def tuning_for(kind, device):
    """The config of `kind` for a CUDA device index, as `tensor.get_device()` gives it (-1 or
    None: the CPU)."""
    on_gpu = device is not None and device >= 0
    return tuning_for_capability(kind, torch.cuda.get_device_capability(device) if on_gpu
                                 else None)
