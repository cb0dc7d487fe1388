#!/usr/bin/env bash
# One command for the lent GPU machine (docs/gpu.md): `bash scripts/devrun.sh MODE COMMIT`,
# run from the repository root there, full output under $OUT, a short tail printed last.
# Carry `.whl` (scripts/device_prepare.sh), `.upstream` (Triton's tutorials, for --tutorial),
# and for the A/B modes `.base` (a `git archive BASE src packages benchmarks scripts` of the
# code to compare against; `BASE=.prev` for another such folder).
#
# Modes:
#   table     the assignment's attention table (batch 1, causal), the BASE tree then this one on
#             the same card, this one read against the other (--baseline): DIMS (16,32,64,128),
#             DTYPES (bf16,fp32), SEQS (the table's) choose the rows
#   tests36   the attention GPU tests issue 36 leans on (native plans, split forward, CUDA graph)
#   quick36   issue 36's acceptance form: attention.py --quick --variants= --repeats 3 --tutorial
#   split     the split forward's wall against SDPA (probes/attention_split.py) and launch_overhead
#   bwdk      each attention kernel's GPU time (probes/attention_kernels.py; SHAPES, IMPLS), this
#             tree then BASE's (copy the probe, probes/_common.py and benchmarks/device_time.py
#             into BASE first)
#   bwdk-now  the same for this tree alone (SHAPES, IMPLS, CALLS as bwdk's)
#   kernels   benchmarks/kernels.py (ONLY="...": its --only; REPEATS, default 3)
#   probes    benchmarks/probes/run.py NAMES (e.g. NAMES="rms_bwd_fused_dg softmax_stream
#             rms_wide_rows_fwd", issue 37's candidates built and off)
#   pytest    the README's test command on the GPU (make test), ARGS appended to pytest, K its
#             -k expression (spaces kept: K="one_pass or default")
#   owed37    issue 37's owed exchange work in one call (docs/decisions.md#exchange-pipelined):
#             the exchange kernels' GPU tests (default and pipelined), flush_state.py (the L2
#             states, pipelined rows among them), then exchange_pipelined.py (SHAPES, CONFIGS,
#             BWD_CONFIGS: its --shapes, --configs, --bwd-configs); TRITONLAB_NATIVE=0 skips
#             the native tests' module build
#   owed47    session 47's call: the GPU tests of RMSNorm's dependent launches and pipelined
#             exchanges (test_native.py), probes/rms_pdl.py, then kernels.py's RMSNorm
#             forward+backward rows (REPEATS) in the time left
#   owed48    session 47's owed call: the GPU tests of the L2 hints and the backward's rows
#             in flight (test_native.py -k "more_rows or asking_l2"),
#             probes/rms_bwd_depth.py (DTYPES, its shapes as SHAPES="8192x4096 ..."),
#             probes/exchange_l2.py, then kernels.py's RMSNorm forward+backward rows if time
#             is left
#   owed49    session 48's call: the GPU tests of the TMA backward (test_kernels.py -k
#             through_tma) and of the row-resident Gluon forwards (test_rows_gluon.py),
#             probes/rms_bwd_tma.py (DTYPES; SHAPES as owed48's), then
#             probes/rows_resident.py (ROWS_SHAPES: its MxN) in the time left

mode=${1:?mode}; commit=${2:?commit}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export TRITONLAB_COMMIT=$commit
. scripts/device_prepare.sh >/dev/null
export PYTHONPATH="src:packages/minitriton/src${PYTHONPATH:+:$PYTHONPATH}"
set -u
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "devrun $mode at $commit on $gpu, $(date -u +%FT%TZ)"
BASE=${BASE:-.base}
t0=$SECONDS

# step NAME TIMEOUT CMD...: run CMD, its output into $OUT/NAME.log, the last TAILN lines shown
step() {
    local name=$1 lim=$2; shift 2
    local s=$SECONDS
    timeout "$lim" "$@" > "$OUT/$name.log" 2>&1
    local rc=$?
    echo "== $name rc=$rc $((SECONDS - s))s"
    tail -n "${TAILN:-25}" "$OUT/$name.log"
}

case $mode in
table)
    IFS=, read -ra dts <<< "${DTYPES:-bf16,fp32}"
    dims=${DIMS:-16,32,64,128}
    seqs=${SEQS:-128,256,512,1024,2048,4096,8192,16384,32768,65536}
    for dt in "${dts[@]}"; do
        tag=${dims//,/_}-$dt
        (cd "$BASE" && timeout 280 python3 benchmarks/attention.py --no-speed --warmup 10 --rep 40 \
            --impls ours --dtypes "$dt" --dims "$dims" --seqs "$seqs" \
            --out "$OUT/base-$tag") > "$OUT/base-$tag.log" 2>&1
        echo "== base $tag rc=$? $((SECONDS - t0))s"
        TAILN=${TAILN:-60} step "now-$tag" 280 python3 benchmarks/attention.py --no-speed \
            --warmup 10 --rep 40 --impls ours,sdpa-cudnn --dtypes "$dt" --dims "$dims" \
            --seqs "$seqs" --baseline "$OUT/base-$tag/attention.json" --out "$OUT/now-$tag"
    done ;;
tests36)
    step tests36 "${LIM:-300}" python3 -m pytest -q -x -p no:cacheprovider -m gpu \
        tests/tritonlab/test_native.py -k "attention or native_forward" ;;
quick36)
    step quick36 "${LIM:-560}" python3 benchmarks/attention.py --quick --variants= \
        --repeats "${REPEATS:-3}" --tutorial .upstream/tut36 --out "$OUT/quick36" ;;
split)
    step split 200 python3 benchmarks/probes/attention_split.py --out "$OUT/split"
    step launch-default 120 python3 benchmarks/launch_overhead.py --ops --out "$OUT/launch-default"
    step launch-split 120 python3 benchmarks/launch_overhead.py --ops --attention-split sms:last \
        --out "$OUT/launch-split" ;;
bwdk|bwdk-now)
    sh=${SHAPES:-1x1x32768x16:bf16:1,1x1x16384x16:bf16:1,1x1x8192x128:bf16:1}
    TAILN=60 step bwdk-now "${LIM:-400}" python3 benchmarks/probes/attention_kernels.py \
        --shapes "$sh" --bwd-impls "${IMPLS:-}" --calls "${CALLS:-20}" --out "$OUT/bwdk-now"
    if [ "$mode" = bwdk ]; then
        (cd "$BASE" && timeout 200 python3 benchmarks/probes/attention_kernels.py \
            --shapes "$sh" --calls "${CALLS:-20}" --out "$OUT/bwdk-base") \
            > "$OUT/bwdk-base.log" 2>&1
        echo "== bwdk-base rc=$?"; tail -n 40 "$OUT/bwdk-base.log"
    fi ;;
kernels)
    step kernels "${LIM:-560}" python3 benchmarks/kernels.py --repeats "${REPEATS:-3}" \
        ${ONLY:+--only "$ONLY"} --ledger "$OUT/ledger.csv" --out "$OUT/kernels" ;;
probes)
    OUT=$OUT TAILN=60 step probes "${LIM:-560}" python3 benchmarks/probes/run.py ${NAMES:?} ;;
pytest)
    step pytest "${LIM:-560}" python3 -m pytest -q -p no:cacheprovider ${ARGS:-} \
        ${K:+-k "$K"} ;;
owed37)
    k="exchange or pipelined or reads_its_tuning or row_loop_stages or wide_row"
    step tests37 "${LIM:-200}" python3 -m pytest -q -p no:cacheprovider \
        tests/tritonlab/test_native.py tests/tritonlab/test_kernels.py \
        tests/tritonlab/test_tuning.py -k "$k or rmsnorm_forward_and_backward"
    OUT=$OUT TAILN=30 step flush 120 python3 benchmarks/probes/flush_state.py
    OUT=$OUT TAILN=120 step pipelined "$((540 - (SECONDS - t0)))" python3 \
        benchmarks/probes/exchange_pipelined.py ${SHAPES:+--shapes "$SHAPES"} \
        ${CONFIGS:+--configs "$CONFIGS"} ${BWD_CONFIGS:+--bwd-configs "$BWD_CONFIGS"} ;;
owed47)
    step tests47 "${LIM:-200}" python3 -m pytest -q -p no:cacheprovider \
        tests/tritonlab/test_native.py -k "dependent or pipelined"
    OUT=$OUT TAILN=40 step pdl 240 python3 benchmarks/probes/rms_pdl.py
    step kernels "$((560 - (SECONDS - t0)))" python3 benchmarks/kernels.py \
        --repeats "${REPEATS:-3}" --only "rmsnorm fwd+bwd" --ledger "$OUT/ledger.csv" \
        --out "$OUT/kernels" ;;
owed48)
    step tests48 "${LIM:-180}" python3 -m pytest -q -p no:cacheprovider \
        tests/tritonlab/test_native.py -k "more_rows or asking_l2"
    OUT=$OUT TAILN=60 step depth 240 python3 benchmarks/probes/rms_bwd_depth.py ${SHAPES:-}
    OUT=$OUT TAILN=50 step l2next "$((560 - (SECONDS - t0)))" python3 \
        benchmarks/probes/exchange_l2.py
    left=$((570 - (SECONDS - t0)))
    if [ "$left" -gt 100 ]; then
        step kernels "$left" python3 benchmarks/kernels.py --repeats "${REPEATS:-3}" \
            --only "rmsnorm fwd+bwd" --ledger "$OUT/ledger.csv" --out "$OUT/kernels"
    fi ;;
owed49)
    step tests49 "${LIM:-150}" python3 -m pytest -q -p no:cacheprovider \
        tests/tritonlab/test_kernels.py tests/tritonlab/test_rows_gluon.py \
        -k "through_tma or prefetch_is_the_same or rows_resident"
    OUT=$OUT TAILN=50 step tma 200 python3 benchmarks/probes/rms_bwd_tma.py ${SHAPES:-}
    OUT=$OUT TAILN=70 step resident "$((575 - (SECONDS - t0)))" python3 \
        benchmarks/probes/rows_resident.py ${ROWS_SHAPES:-} ;;
*)
    echo "unknown mode $mode"; exit 2 ;;
esac
# the machine sends back only a few files: what this mode wrote under $OUT goes back as one
# archive, results-MODE-N.tgz (earlier modes' archives kept beside it)
arch=results-$mode-$$.tgz
(cd "$OUT" && tar -czf "/tmp/$arch" --exclude='results-*.tgz' . \
    && find . -mindepth 1 -maxdepth 1 ! -name 'results-*.tgz' -exec rm -rf {} + \
    && mv "/tmp/$arch" .)
echo "devrun done $((SECONDS - t0))s"
