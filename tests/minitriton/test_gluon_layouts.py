"""Gluon's layouts (experimental/gluon/language/_layouts.py): built, checked, compared and hashed
as Triton 3.6 does, and, where Triton's wheel is unpacked in .triton-cpu/ (`make compile-check`),
against Triton's own classes, run in a subprocess: in this process `triton` may be minitriton's
stand-in."""
import dataclasses
import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

import minitriton.language as tl
from minitriton.experimental.gluon.language import _layouts
from minitriton.experimental.gluon.language._layouts import (
    AutoLayout, BlockedLayout, CoalescedLayout, DistributedLayout, DistributedLinearLayout,
    DotOperandLayout, NVMMADistributedLayout, NVMMASharedLayout, PaddedSharedLayout,
    SharedLayout, SharedLinearLayout, SliceLayout, SwizzledSharedLayout)
from minitriton.types import constexpr, constexpr_type

TRITON_DIR = Path(__file__).resolve().parents[2] / ".triton-cpu"

BLOCKED = BlockedLayout([1, 4], [8, 4], [4, 1], [1, 0])
MMA_V2 = NVMMADistributedLayout([2, 0], [4, 1], [16, 8])


def test_blocked_layout_fields_rank_and_mangle():
    assert (BLOCKED.size_per_thread, BLOCKED.threads_per_warp, BLOCKED.warps_per_cta,
            BLOCKED.order, BLOCKED.cga_layout) == ([1, 4], [8, 4], [4, 1], [1, 0], [])
    assert BLOCKED.rank == 2 and BLOCKED.mangle() == "B1_4_8_4_4_1_1_0_B"
    three = BlockedLayout([1, 1, 8], [1, 4, 8], [2, 2, 1], [2, 1, 0], [[1, 0, 0], [0, 2, 0]])
    assert three.rank == 3 and three.mangle() == "B1_1_8_1_4_8_2_2_1_2_1_0_1~0~0_0~2~0B"
    assert BlockedLayout([1], [32], [4], [0]).rank == 1
    assert repr(BLOCKED) == ("BlockedLayout(size_per_thread=[1, 4], threads_per_warp=[8, 4], "
                             "warps_per_cta=[4, 1], order=[1, 0], cga_layout=[])")


def test_constexprs_are_unwrapped_also_inside_lists():
    wrapped = BlockedLayout([constexpr(1), 4], constexpr([8, 4]), [4, constexpr(1)], [1, 0])
    assert wrapped == BLOCKED and hash(wrapped) == hash(BLOCKED)
    assert wrapped.threads_per_warp == [8, 4] and type(wrapped.size_per_thread[0]) is int
    assert SliceLayout(constexpr(1), constexpr(BLOCKED)) == SliceLayout(1, BLOCKED)
    assert NVMMASharedLayout(constexpr(128), constexpr(16), constexpr(3)).rank == 3
    assert SharedLinearLayout(constexpr([[0, 1]]), alignment=constexpr(32)).alignment == 32
    assert DistributedLinearLayout([[constexpr(1)]], [], [], [], (constexpr(2),)).shape == [2]
    assert BlockedLayout([1], [32], [4], [0], constexpr([[constexpr(1)]])).cga_layout == [[1]]


def test_equal_layouts_hash_alike_and_others_differ():
    same = BlockedLayout([1, 4], [8, 4], [4, 1], [1, 0])
    assert same == BLOCKED and hash(same) == hash(BLOCKED) and len({same, BLOCKED}) == 1
    assert BLOCKED != BlockedLayout([1, 4], [8, 4], [4, 1], [0, 1])
    assert BLOCKED != BlockedLayout([1, 4], [8, 4], [4, 1], [1, 0], [[1, 0]])
    assert AutoLayout() == AutoLayout() and AutoLayout() != CoalescedLayout()
    assert len({NVMMASharedLayout(128, 16), NVMMASharedLayout(128, 16),
                NVMMASharedLayout(128, 16, transposed=True)}) == 2
    assert {SwizzledSharedLayout(8, 1, 8, [1, 0]): 1}[SwizzledSharedLayout(8, 1, 8, [1, 0])] == 1
    # as in Triton, a dataclass's equality: a list field is not equal to the same tuple
    assert BlockedLayout((1, 4), (8, 4), (4, 1), (1, 0)) != BLOCKED


def test_layouts_are_frozen_and_their_type_is_a_constexpr_type():
    with pytest.raises(dataclasses.FrozenInstanceError):
        BLOCKED.order = [0, 1]
    assert BLOCKED.type == constexpr_type(BLOCKED)
    assert NVMMASharedLayout(128, 16).type == constexpr_type(NVMMASharedLayout(128, 16))
    assert isinstance(MMA_V2, DistributedLayout) and isinstance(BLOCKED, DistributedLayout)
    assert all(isinstance(layout, SharedLayout) for layout in (
        NVMMASharedLayout(0, 8), SwizzledSharedLayout(1, 1, 1, [0]),
        SharedLinearLayout([[1]]), PaddedSharedLayout.with_identity_for([[4, 1]], [8], [0])))


def test_auto_and_coalesced_layouts_have_no_rank():
    assert (AutoLayout().mangle(), CoalescedLayout().mangle()) == ("AL", "CL")
    for layout in (AutoLayout(), CoalescedLayout()):
        with pytest.raises(ValueError, match="has no rank"):
            layout.rank
    with pytest.raises(NotImplementedError):
        DistributedLayout().rank


def test_slice_layout_drops_its_dimension():
    sliced = SliceLayout(0, BLOCKED)
    assert (sliced.dim, sliced.parent, sliced.rank) == (0, BLOCKED, 1)
    assert sliced.mangle() == "SL0_B1_4_8_4_4_1_1_0_BSL" and sliced.cga_layout == []
    parent = BlockedLayout([1, 1, 8], [1, 4, 8], [2, 2, 1], [2, 1, 0], [[1, 0, 0], [0, 2, 0]])
    assert SliceLayout(1, parent).cga_layout == [[1, 0], [0, 0]]
    assert SliceLayout(0, SliceLayout(1, parent)).rank == 1
    assert hash(SliceLayout(1, parent)) == hash(SliceLayout(1, parent))
    with pytest.raises(AssertionError, match="dim 3"):
        SliceLayout(3, parent).cga_layout


def test_distributed_linear_layout():
    layout = DistributedLinearLayout(reg_bases=[[0, 1], [0, 2]],
                                     lane_bases=[[1, 0], [2, 0], [4, 0], [8, 0], [16, 0]],
                                     warp_bases=[[32, 0], [64, 0]], block_bases=[],
                                     shape=(128, 4))
    assert layout.shape == [128, 4] and layout.rank == 2 and layout.block_bases == []
    assert layout.mangle() == ("DLL[[0, 1], [0, 2]]_[[1, 0], [2, 0], [4, 0], [8, 0], [16, 0]]_"
                               "[[32, 0], [64, 0]]_[]_[128, 4]DLL")
    assert layout == DistributedLinearLayout([[0, 1], [0, 2]],
                                             [[1, 0], [2, 0], [4, 0], [8, 0], [16, 0]],
                                             [[32, 0], [64, 0]], [], [128, 4])
    assert hash(layout) == hash(DistributedLinearLayout(
        [[0, 1], [0, 2]], [[1, 0], [2, 0], [4, 0], [8, 0], [16, 0]], [[32, 0], [64, 0]], [],
        [128, 4]))
    with pytest.raises(AssertionError, match=r"warp_bases: basis \[32\] has 1 entries"):
        DistributedLinearLayout([[0, 1]], [[1, 0]], [[32]], [], [128, 4])


def test_dot_operand_layout_takes_its_rank_and_cga_layout_from_the_mma():
    lhs = DotOperandLayout(0, MMA_V2, 2)
    assert (lhs.operand_index, lhs.parent, lhs.k_width, lhs.rank) == (0, MMA_V2, 2, 2)
    assert lhs.mangle() == "DO0_MMA_[2, 0]_[4, 1]_[16, 8]__MMA_2DO" and lhs.cga_layout == []
    wgmma = NVMMADistributedLayout([3, 0], [4, 1], [16, 64, 16], [[1, 0], [0, 1]])
    # the bases along K are 0: the CTAs of a cluster share that part of an operand
    assert DotOperandLayout(0, wgmma, 2).cga_layout == [[1, 0], [0, 0]]
    assert DotOperandLayout(1, wgmma, 2).cga_layout == [[0, 0], [0, 1]]
    assert DotOperandLayout(0, BLOCKED, 1).cga_layout == []
    assert DotOperandLayout(0, MMA_V2, 2) != DotOperandLayout(1, MMA_V2, 2)


def test_nvmma_distributed_layout():
    assert (MMA_V2.version, MMA_V2.warps_per_cta, MMA_V2.instr_shape, MMA_V2.rank) == (
        [2, 0], [4, 1], [16, 8], 2)
    wgmma = NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                   instr_shape=[16, 128, 16], cga_layout=[[0, 1]])
    assert wgmma.mangle() == "MMA_[3, 0]_[4, 1]_[16, 128, 16]_0~1_MMA"
    assert wgmma != NVMMADistributedLayout([3, 0], [4, 1], [16, 128, 16])


def test_nvmma_shared_layout_defaults_and_checks():
    layout = NVMMASharedLayout(128, 16)
    assert (layout.swizzle_byte_width, layout.element_bitwidth, layout.rank, layout.transposed,
            layout.fp4_padded, layout.cga_layout) == (128, 16, 2, False, False, [])
    assert layout.mangle() == "NVMMA_128_16_False_False__NVMMA"
    assert NVMMASharedLayout(64, 8, 2, True, cga_layout=[[1, 0]]).mangle() == \
        "NVMMA_64_8_True_False_1~0_NVMMA"
    assert NVMMASharedLayout(0, 32, cga_layout=None).cga_layout == []
    with pytest.raises(AssertionError, match="swizzle_byte_width must be 0, 32, 64 or 128, got 16"):
        NVMMASharedLayout(16, 16)
    with pytest.raises(AssertionError, match="element_bitwidth must be 8, 16, 32 or 64, got 4"):
        NVMMASharedLayout(128, 4)
    with pytest.raises(AssertionError, match="cga_layout bases have 2 entries but rank is 3"):
        NVMMASharedLayout(128, 16, rank=3, cga_layout=[[1, 0]])


@pytest.mark.parametrize("args, kwargs, expected", [
    (([128, 64], tl.float16), {}, (128, 16, 2)),
    (([128, 32], tl.float16), {}, (64, 16, 2)),
    (([128, 16], tl.bfloat16), {}, (32, 16, 2)),
    (([128, 8], tl.float16), {}, (0, 16, 2)),  # 16 bytes a row: too narrow to swizzle
    (([4, 64], tl.float16), {}, (0, 16, 2)),  # fewer than 8 rows
    (([256], tl.float32), {}, (0, 32, 1)),
    (([128, 64], tl.float32), {}, (128, 32, 2)),
    (([128, 48], tl.float16), {}, (32, 16, 2)),  # 96 bytes a row
    (([64, 128], tl.float8e4nv), {"transposed": True}, (64, 8, 2)),
    (([128, 64], tl.uint8), {"fp4_padded": True}, (128, 8, 2)),
    (([256, 64], tl.float16), {"cga_layout": [[1, 0]]}, (64, 16, 2)),  # 128 x 32 a CTA
    (([2, 64, 32], tl.bfloat16), {}, (64, 16, 3)),
    (([2, 4, 64], tl.float16), {}, (128, 16, 3)),
    (((64, 32), tl.float64), {"transposed": True}, (128, 64, 2)),
    ((constexpr([64, 64]), constexpr(tl.float16)), {"transposed": constexpr(True)},
     (128, 16, 2)),
])
def test_get_default_for_picks_the_widest_swizzle(args, kwargs, expected):
    layout = NVMMASharedLayout.get_default_for(*args, **kwargs)
    assert (layout.swizzle_byte_width, layout.element_bitwidth, layout.rank) == expected
    assert layout.transposed == bool(kwargs.get("transposed", False))
    assert layout.fp4_padded == kwargs.get("fp4_padded", False)
    assert layout.cga_layout == kwargs.get("cga_layout", [])
    assert isinstance(layout.transposed, bool)


def test_get_default_for_refuses_what_triton_refuses():
    with pytest.raises(AssertionError, match="not divisible by CGA layout"):
        NVMMASharedLayout.get_default_for([129, 64], tl.float16, cga_layout=[[1, 0]])
    with pytest.raises(AssertionError, match="element_bitwidth"):
        NVMMASharedLayout.get_default_for([128, 64], tl.int1)


def test_swizzled_shared_layout():
    layout = SwizzledSharedLayout(8, 1, 8, [1, 0])
    assert (layout.vec, layout.per_phase, layout.max_phase, layout.order, layout.cga_layout) == (
        8, 1, 8, [1, 0], [])
    assert layout.mangle() == "SSS_8_1_8_1_0__SSS"
    clustered = SwizzledSharedLayout(vec=4, per_phase=2, max_phase=4, order=[0, 1],
                                     cga_layout=[[0, 1]])
    assert clustered.mangle() == "SSS_4_2_4_0_1_0~1_SSS" and clustered != layout
    assert not hasattr(layout, "rank")  # nor has Triton's


def test_padded_shared_layout_with_identity_for():
    layout = PaddedSharedLayout.with_identity_for([[32, 4]], [8, 4], [1, 0])
    assert layout == PaddedSharedLayout([[32, 4]], [[0, 1], [0, 2], [1, 0], [2, 0], [4, 0]], [],
                                        [8, 4])
    assert layout.mangle() == ("PaddedShared_[[32, 4]]_[[0, 1], [0, 2], [1, 0], [2, 0], [4, 0]]_"
                               "[]_[8, 4]_PaddedShared")
    column_major = PaddedSharedLayout.with_identity_for([[16, 1], [64, 4]], (4, 2), (0, 1))
    assert column_major.offset_bases == [[1, 0], [2, 0], [0, 1]] and column_major.shape == [4, 2]
    assert hash(column_major) == hash(PaddedSharedLayout([[16, 1], [64, 4]],
                                                         [[1, 0], [2, 0], [0, 1]], [], [4, 2]))
    with pytest.raises(AssertionError, match="does not match shape"):
        PaddedSharedLayout.with_identity_for([[4, 1]], [64], [1, 0])
    with pytest.raises(AssertionError, match="must be powers of two"):
        PaddedSharedLayout.with_identity_for([[4, 1]], [48, 4], [1, 0])


@pytest.mark.parametrize("pairs, offset_bases, shape, message", [
    ([], [[1]], [2], "at least one interval-padding pair"),
    ([[4, 1, 2]], [[1]], [2], r"must be \[interval, padding\] pairs"),
    ([[4, 1], [4, 2]], [[1]], [2], "intervals must differ"),
    ([[3, 1]], [[1]], [2], "interval values must all be power of two"),
    ([[4, 3]], [[1]], [2], "padding values must all be power of two"),
    ([[4, 0]], [[1]], [2], "padding values must all be power of two"),
    ([[4, 1]], [], [], "shape must not be empty"),
    ([[4, 1]], [[1, 0]], [2], "offset_bases: basis"),
])
def test_padded_shared_layout_checks(pairs, offset_bases, shape, message):
    with pytest.raises(AssertionError, match=message):
        PaddedSharedLayout(pairs, offset_bases, [], shape)


def test_shared_linear_layout():
    layout = SharedLinearLayout([[0, 1], [0, 2], [1, 0]])
    assert (layout.offset_bases, layout.block_bases, layout.alignment) == (
        [[0, 1], [0, 2], [1, 0]], [], 16)
    assert layout.mangle() == "SharedLinear_[[0, 1], [0, 2], [1, 0]]_[]_16_SharedLinear"
    assert SharedLinearLayout([[1]], [[0]], alignment=128) != SharedLinearLayout([[1]], [[0]])
    for args, kwargs, message in [(([],), {}, "must not be empty"),
                                  (([[]],), {}, "rank 0"),
                                  (([[1, 0], [1]],), {}, "offset_bases: basis"),
                                  (([[1, 0]], [[1]]), {}, "block_bases: basis"),
                                  (([[1, 0]],), {"alignment": 24}, "power of two, got 24"),
                                  (([[1, 0]],), {"alignment": 0}, "power of two, got 0")]:
        with pytest.raises(AssertionError, match=message):
            SharedLinearLayout(*args, **kwargs)


def test_blocked_layout_lengths_must_agree():
    with pytest.raises(AssertionError, match=r"warps_per_cta \[4\] has 1 entries"):
        BlockedLayout([1, 4], [8, 4], [4], [1, 0])
    with pytest.raises(AssertionError, match="order"):
        BlockedLayout([1, 4], [8, 4], [4, 1], [0])


# Against Triton 3.6: each expression is evaluated with the layout classes and `tl` in scope,
# here with minitriton's and in a subprocess with Triton's, and `describe` must agree.
CASES = [
    "AutoLayout()",
    "CoalescedLayout()",
    "BlockedLayout([1, 4], [8, 4], [4, 1], [1, 0])",
    "BlockedLayout([1], [32], [4], [0])",
    "BlockedLayout([1, 1, 8], [1, 4, 8], [2, 2, 1], [2, 1, 0], [[1, 0, 0]])",
    "BlockedLayout((2, 2), (4, 8), (1, 4), (0, 1))",
    "BlockedLayout([tl.constexpr(1), 4], tl.constexpr([8, 4]), [4, 1], [1, 0])",
    "BlockedLayout([1, 4], [8, 4], [4], [1, 0])",
    "BlockedLayout([1, 4], [8, 4], [4, 1], [0])",
    "SliceLayout(0, BlockedLayout([1, 4], [8, 4], [4, 1], [1, 0]))",
    "SliceLayout(tl.constexpr(1), BlockedLayout([1, 1, 8], [1, 4, 8], [2, 2, 1], [2, 1, 0], "
    "[[1, 0, 0], [0, 2, 0]]))",
    "SliceLayout(3, BlockedLayout([1, 4], [8, 4], [4, 1], [1, 0], [[1, 0]]))",
    "SliceLayout(0, AutoLayout())",
    "DistributedLinearLayout([[0, 1], [0, 2]], [[1, 0], [2, 0], [4, 0], [8, 0], [16, 0]], "
    "[[32, 0], [64, 0]], [], [128, 4])",
    "DistributedLinearLayout([(1,)], [], [[2]], [], (tl.constexpr(4),))",
    "DistributedLinearLayout([[0, 1]], [[1, 0]], [[32]], [], [128, 4])",
    "DotOperandLayout(0, NVMMADistributedLayout([2, 0], [4, 1], [16, 8]), 2)",
    "DotOperandLayout(1, NVMMADistributedLayout([3, 0], [4, 1], [16, 64, 16], [[1, 0]]), 2)",
    "DotOperandLayout(0, NVMMADistributedLayout([3, 0], [4, 1], [16, 64, 16], [[1, 0]]), 2)",
    "DotOperandLayout(tl.constexpr(0), BlockedLayout([1, 4], [8, 4], [4, 1], [1, 0]), 1)",
    "NVMMADistributedLayout([3, 0], [4, 1], [16, 128, 16])",
    "NVMMADistributedLayout(version=[2, 0], warps_per_cta=[2, 2], instr_shape=[16, 8], "
    "cga_layout=[[0, 1]])",
    "NVMMASharedLayout(128, 16)",
    "NVMMASharedLayout(64, 8, rank=3, transposed=True)",
    "NVMMASharedLayout(swizzle_byte_width=32, element_bitwidth=32, cga_layout=[[1, 0]])",
    "NVMMASharedLayout(0, 64, fp4_padded=True, cga_layout=None)",
    "NVMMASharedLayout(tl.constexpr(128), tl.constexpr(16), tl.constexpr(2))",
    "NVMMASharedLayout(16, 16)",
    "NVMMASharedLayout(128, 4)",
    "NVMMASharedLayout(128, 16, rank=3, cga_layout=[[1, 0]])",
    "SwizzledSharedLayout(8, 1, 8, [1, 0])",
    "SwizzledSharedLayout(1, 1, 1, [0])",
    "SwizzledSharedLayout(vec=4, per_phase=2, max_phase=4, order=[0, 1], cga_layout=[[0, 1]])",
    "PaddedSharedLayout([[32, 4]], [[0, 1], [0, 2], [1, 0]], [], [2, 4])",
    "PaddedSharedLayout([[8, 1]], [[0, 1], [0, 2], [2, 0], [4, 0], [1, 0]], [], [8, 4])",
    "PaddedSharedLayout.with_identity_for([[32, 4]], [64, 32], [1, 0])",
    "PaddedSharedLayout.with_identity_for([[16, 1], [64, 4]], [16, 8, 4], [0, 2, 1])",
    "PaddedSharedLayout.with_identity_for(tl.constexpr([[4, 1]]), (8, tl.constexpr(2)), [0, 1])",
    "PaddedSharedLayout.with_identity_for([[4, 1]], [48, 4], [1, 0])",
    "PaddedSharedLayout.with_identity_for([[4, 1]], [64], [1, 0])",
    "PaddedSharedLayout([], [[1]], [], [2])",
    "PaddedSharedLayout([[4, 1, 2]], [[1]], [], [2])",
    "PaddedSharedLayout([[4, 1], [4, 2]], [[1]], [], [2])",
    "PaddedSharedLayout([[3, 1]], [[1]], [], [2])",
    "PaddedSharedLayout([[4, 3]], [[1]], [], [2])",
    "PaddedSharedLayout([[4, 1]], [], [], [])",
    "PaddedSharedLayout([[4, 1]], [[1, 0]], [], [2])",
    "SharedLinearLayout([[0, 1], [0, 2], [1, 0]])",
    "SharedLinearLayout([[1]], [[0]], alignment=128)",
    "SharedLinearLayout(tl.constexpr([[1, 0]]), alignment=tl.constexpr(4))",
    "SharedLinearLayout([])",
    "SharedLinearLayout([[]])",
    "SharedLinearLayout([[1, 0], [1]])",
    "SharedLinearLayout([[1, 0]], [[1]])",
    "SharedLinearLayout([[1, 0]], alignment=24)",
] + [f"NVMMASharedLayout.get_default_for({args})" for args in [
    "[128, 64], tl.float16",
    "[128, 32], tl.float16",
    "[128, 16], tl.bfloat16",
    "[128, 8], tl.float16",
    "[4, 64], tl.float16",
    "[8, 64], tl.float16",
    "[256], tl.float32",
    "[128, 64], tl.float32",
    "[128, 48], tl.float16",
    "[64, 128], tl.float8e4nv, transposed=True",
    "[128, 64], tl.uint8, fp4_padded=True",
    "[128, 16], tl.uint8, True, True",
    "[256, 64], tl.float16, cga_layout=[[1, 0]]",
    "[256, 256], tl.float16, cga_layout=[[1, 0], [2, 0]]",
    "[128, 128], tl.float8e5, True, cga_layout=[[0, 1]]",
    "[2, 64, 32], tl.bfloat16",
    "[2, 4, 64], tl.float16",
    "(64, 32), tl.float64, transposed=True",
    "[64, 8], tl.int32",
    "tl.constexpr([64, 64]), tl.constexpr(tl.bfloat16), transposed=tl.constexpr(True)",
    "[129, 64], tl.float16, cga_layout=[[1, 0]]",
    "[128, 64], tl.int1",
]]


def describe(expression, namespace):
    """What the layout that `expression` builds shows (its repr, fields, rank, mangle() and
    cga_layout, or the error each raises), or the error building it raises."""
    try:
        layout = eval(expression, namespace)
    except Exception as e:
        return {"error": type(e).__name__}
    seen = {"repr": repr(layout)}
    seen.update((f.name, repr(getattr(layout, f.name))) for f in dataclasses.fields(layout))
    for name in ("rank", "mangle", "cga_layout"):
        try:
            value = getattr(layout, name)
            seen[name] = repr(value() if name == "mangle" else value)
        except Exception as e:
            seen[name] = type(e).__name__
    return seen


_TRITON_PROGRAM = """
import dataclasses, json, sys
sys.path.insert(0, {triton_dir!r})
try:
    import triton.language as tl
    from triton.experimental.gluon.language import _layouts
except ImportError as e:
    print(json.dumps({{"skip": str(e)}}))
    sys.exit()
{describe}
namespace = dict(vars(_layouts), tl=tl)
print(json.dumps({{e: describe(e, namespace) for e in json.loads(sys.stdin.read())}}))
"""


@pytest.fixture(scope="module")
def triton_describes():
    """`describe` of every case by Triton 3.6's own classes."""
    if not (TRITON_DIR / "triton").is_dir():
        pytest.skip(f"Triton's wheel is not unpacked in {TRITON_DIR} (make compile-check)")
    program = _TRITON_PROGRAM.format(triton_dir=str(TRITON_DIR),
                                     describe=inspect.getsource(describe))
    done = subprocess.run([sys.executable, "-c", program], input=json.dumps(CASES),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    described = json.loads(done.stdout)
    if "skip" in described:
        pytest.skip(f"Triton in {TRITON_DIR} does not import: {described['skip']}")
    return described


@pytest.mark.parametrize("expression", CASES)
def test_layouts_match_tritons(expression, triton_describes):
    assert describe(expression, dict(vars(_layouts), tl=tl)) == triton_describes[expression]


def test_the_comparison_covers_every_layout_and_both_outcomes(triton_describes):
    built = {d["repr"].split("(")[0] for d in triton_describes.values() if "repr" in d}
    assert built == {name for name, value in vars(_layouts).items()
                     if isinstance(value, type) and value.__module__ == _layouts.__name__
                     and name not in ("DistributedLayout", "SharedLayout")}
    assert sum("error" in d for d in triton_describes.values()) >= 20
