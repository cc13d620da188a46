#!/usr/bin/env bash
# One short run on a CUDA machine that builds, checks and times the verifier's GPU-only parts:
# CUDA-event step times, the harness adding no per-step sync, the torch.profiler breakdown and
# compute-time ratio, nccl under torchrun, and the harness overhead with a GPU loop.
#
#   bash bench/gpu_verify_check.sh            # from the repository root; PYTHON=... to choose
#
# Needs torch with CUDA, click and pytest (matplotlib for the picture). --fixed copies are used
# throughout, so the linter's libcst is not needed on the GPU machine. Results go to $OUT
# (default /tmp/gpu-verify-check): verify.json, verify.png, ddp.json, log.txt. About 4 to 5 minutes
# (4.5 on an H200, 2026-12-04).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
OUT=${OUT:-/tmp/gpu-verify-check}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
LOG="$OUT/log.txt"
status=0
step() { echo "== $*" | tee -a "$LOG"; }
run() {  # run a command, log it with its time, remember a failure, go on
    local t0=$SECONDS
    "$@" 2>&1 | tee -a "$LOG"
    local rc=${PIPESTATUS[0]}
    echo "-- exit $rc after $((SECONDS - t0)) s" | tee -a "$LOG"
    [ "$rc" -eq 0 ] || status=1
}

step "environment"
run "$PY" -c "import torch, sys; print(sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda); assert torch.cuda.is_available(), 'no CUDA GPU'; print(torch.cuda.get_device_name(0), torch.cuda.device_count(), 'GPU(s)')"
[ "$status" -eq 0 ] || { echo "no usable GPU: stopping" | tee -a "$LOG"; exit 1; }

step "GPU-only tests, and the verifier's fast unit tests"
run "$PY" -m pytest -q -rs -p no:cacheprovider tests/verify/test_verify_gpu.py \
    tests/verify/test_verify_stats.py tests/verify/test_verify_tolerance.py \
    tests/verify/test_verify_profile.py tests/verify/test_verify_report.py

step "TL501's helper on GPU tensors: CUDA storages snapshotted, and the file loads back on the GPU"
run "$PY" -m pytest -q -rs -p no:cacheprovider tests/test_checkpoint_rules.py -k helper

step "verify TL201's fix on the GPU (.item() per step vs a device-side total), with the profiler"
run "$PY" -m trainlint.verify fixtures/verify/gpu_item_sync.py \
    --fixed fixtures/verify/gpu_item_sync_fixed.py --steps 50 --warmup 10 --repeats 3 \
    --profile --json "$OUT/verify.json" --report "$OUT"

step "DDP with accumulation under torchrun, nccl, one process per GPU"
NGPU=$("$PY" -c "import torch; print(min(2, torch.cuda.device_count()))")
run "$PY" -m trainlint.verify fixtures/verify/ddp_accum.py --fixed fixtures/verify/ddp_accum_fixed.py \
    --nproc-per-node "$NGPU" --steps 10 --warmup 3 --repeats 2 --json "$OUT/ddp.json"

step "harness overhead on a tight GPU loop (target under 2%)"
run "$PY" bench/verify_overhead.py --device cuda --pairs 3 --steps 2000 --width 512

step "the same overhead split by part, with an identical-settings control (the noise floor)"
run "$PY" bench/verify_overhead.py --device cuda --width 512 --attribute

step "host cost of the CUDA calls the harness makes per step"
run "$PY" bench/cuda_call_costs.py

step "done: status $status (0: every check passed)"
exit "$status"
