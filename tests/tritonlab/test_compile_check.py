"""benchmarks/compile_check.py's first phase (no Triton needed): the tests run on the
simulator and every launch is recorded with the specialization real Triton would compile."""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import compile_check  # noqa: E402


def test_records_each_launch_as_triton_would_specialise_it(tmp_path):
    out = tmp_path / "launches.json"
    compile_check.record(["tests/tritonlab/test_kernels.py", "-k",
                          "exchange_leaves_its_counters"], str(out), 90, tuned=True)
    records = json.loads(out.read_text())
    exchange = [r for r in records if r["kernel"] == "softmax_exchange_kernel"]
    assert exchange, [r["kernel"] for r in records]
    r = exchange[0]
    assert r["module"] == "tritonlab.kernels.softmax"
    # Triton's type strings: canonical int pointers, ints by value, constexprs by name
    assert r["signature"]["x_ptr"] == "*fp32" and r["signature"]["sync_ptr"] == "*i32"
    assert r["signature"]["n_cols"] == "i32" and r["signature"]["BLOCK_SIZE"] == "constexpr"
    assert r["constants"]["ACC"] == {"dtype": "fp32"}
    # pointers marked divisible by 16, as fresh GPU allocations are; n_cols = 700 is not
    assert "x_ptr" in r["divisible"] and "n_cols" not in r["divisible"]


def test_configs_records_every_autotune_configuration_of_hopper(tmp_path):
    """--configs: each attention and matmul configuration the H100/H200 autotuners may try is
    planned (not run) and recorded with the constexprs and warps it compiles with."""
    from tritonlab.kernels.tuning import TUNINGS

    out = tmp_path / "launches.json"
    compile_check.record([], str(out), 90, tuned=True, configs=["fp16", "bf16", "fp32"])
    records = json.loads(out.read_text())

    def seen(kernel, **want):
        return {(r["constants"]["BLOCK_M"], r["constants"]["BLOCK_N"],
                 r["options"]["num_warps"], r["options"]["num_stages"])
                for r in records if r["kernel"] == kernel
                and all(r["constants"].get(k) == v for k, v in want.items())}

    t = TUNINGS["attention"][9]
    for d in (64, 128):
        for causal in (False, True):
            at = dict(HEAD_DIM=d, IS_CAUSAL=causal)
            assert seen("attn_fwd_kernel", **at) == set(t.configs("fwd", d))
            # sequences of whole tiles and with a tail: both variants of each kernel
            for whole in (True, False):
                keys = dict(EVEN_KEYS=whole and not causal, **at)
                assert seen("attn_fwd_tma_kernel", **keys) == set(t.configs("fwd_tma", d))
                for tma in (False, True):
                    assert seen("attn_bwd_dkdv_kernel", DQ_MODE=0, LOAD_TMA=tma,
                                EVEN_QUERIES=whole, **at) == set(t.configs("dkdv", d))
                    assert seen("attn_bwd_dq_kernel", LOAD_TMA=tma,
                                **keys) == set(t.configs("dq", d))
            assert seen("attn_bwd_dkdv_kernel", DQ_MODE=1, **at) == set(t.configs("dkdv_atomic", d))
            assert seen("attn_bwd_dkdv_kernel", DQ_MODE=3, **at) == set(t.configs("dkdv_atomic", d))
    m = TUNINGS["matmul"][9]
    for kernel, tiles, types in (("matmul_kernel", m.configs, 3), ("matmul_tma_kernel",
                                                                    m.tma_configs, 2)):
        got = [r for r in records if r["kernel"] == kernel]
        assert {(r["constants"]["BLOCK_M"], r["constants"]["BLOCK_N"], r["constants"]["BLOCK_K"],
                 r["options"]["num_warps"], r["options"]["num_stages"])
                for r in got} == set(tiles)
        # every dtype (fp16, bf16 and, for the pointer kernel, fp32)
        first = {r["signature"][next(iter(r["signature"]))] for r in got}  # a's type
        assert len({compile_check.element_type(t) for t in first}) == types, first


def test_a_dependent_launch_touches_no_memory_before_its_wait():
    """compile_check's PDL check (`--pdl`): in PTX that has griddepcontrol.wait, the first
    global access before it is named (a predicated one too); parameter and shared-memory
    accesses, and PTX without the wait, pass."""
    early = compile_check.access_before_wait
    ok = ("ld.param.u64 %rd1, [k_param_0];\nst.shared.u32 [%r1], %r2;\n"
          "griddepcontrol.wait; // dummy %r3\ngriddepcontrol.launch_dependents;\n"
          "@%p1 ld.global.b32 { %r4 }, [ %rd1 + 0 ];\n")
    assert early(ok) is None
    assert early(ok.replace("griddepcontrol.wait; // dummy %r3\n", "")) is None
    assert early("\t@!%p2 ld.global.v4.b32 {%r1}, [%rd2];\ngriddepcontrol.wait;\n") == \
        "ld.global.v4.b32"
    assert early("cp.async.cg.shared.global [%r1], [%rd1], 16;\ngriddepcontrol.wait;\n") == \
        "cp.async.cg.shared.global"
    assert early("red.release.gpu.global.add.u32 [%rd1], 1;\ngriddepcontrol.wait;\n") == \
        "red.release.gpu.global.add.u32"


def test_meeting_order_reads_the_steps_of_each_meeting_in_the_ptx():
    """benchmarks/probes/meeting_order.py's reading of a compiled exchange kernel's PTX (the
    compiling itself needs Triton: `make compile-check`): the "// meet:" steps in text order,
    an asm per element counted once, right only as whole meetings in order."""
    sys.path.insert(0, str(ROOT / "benchmarks" / "probes"))
    import meeting_order
    ptx = ("ld.global\n// meet:publish\nst.global\n// meet:publish\n// meet:wait\nbar.sync 0\n"
           "// meet:read\n// meet:read\nst.global.cs\n// meet:leave\n")
    steps = meeting_order.order(ptx)
    assert steps == ["publish", "wait", "read", "leave"]
    assert meeting_order.in_order(steps) and meeting_order.in_order(steps * 2)
    # what the pipeliner had made of it: the reads before the wait; no meeting at all
    assert not meeting_order.in_order(["publish", "read", "wait", "leave"])
    assert not meeting_order.in_order([]) and not meeting_order.in_order(steps[:3])
    # one wait and one leave a meeting: a tensor token's asm per element counts in twice
    assert meeting_order.in_order(steps, ptx)
    assert not meeting_order.in_order(steps, ptx.replace("// meet:wait\n",
                                                         "// meet:wait\n// meet:wait\n"))
    # the launches: both forwards at each config, the backward at Hopper's unsplit entries
    jobs = meeting_order.jobs(str(ROOT), "unused", ["fp32", "bf16"], [2])
    kinds = {(j[2], j[3]) for j in jobs}
    assert kinds == {(k, d) for k in ("softmax", "rmsnorm fwd", "rmsnorm bwd")
                     for d in ("fp32", "bf16")}
    assert sum(j[2] == "softmax" for j in jobs) == 2 * len(meeting_order.FORWARD)
