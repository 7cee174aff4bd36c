#!/usr/bin/env bash
# GPU checks of the run launcher (issue 3), for a machine with a CUDA/ROCm GPU.
#
#   scripts/gpu-check.sh LOGDIR
#
# 1. pytest -m gpu                     (fails if every GPU test was skipped: no GPU seen)
# 2. gpusession demo --headless --device cuda   (temporary --sessions-dir)
# 3. benchmarks/bench_gpu_timing.py    (synchronized vs unsynchronized matmul, H-01)
# Logs go to LOGDIR; total under 5 minutes. Exit non-zero on any failure.
set -uo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: $0 LOGDIR" >&2
    exit 2
fi
LOGDIR=$1
mkdir -p "$LOGDIR"
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
status=0

echo "== torch sees:" | tee "$LOGDIR/summary.txt"
"$PY" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, "hip", getattr(torch.version, "hip", None), "available", torch.cuda.is_available(), "count", torch.cuda.device_count())' \
    2>&1 | tee -a "$LOGDIR/summary.txt"
nvidia-smi >"$LOGDIR/nvidia-smi.txt" 2>&1 || echo "nvidia-smi not available" >>"$LOGDIR/summary.txt"

echo "== 1. pytest -m gpu" | tee -a "$LOGDIR/summary.txt"
# Only the files holding GPU tests: a GPU image may lack the test-only extras
# (hypothesis, scikit-learn) that other test files import.
mapfile -t GPU_TEST_FILES < <(grep -l "mark.gpu" tests/test_*.py)
timeout 150 "$PY" -m pytest -m gpu -rA -q -p no:cacheprovider "${GPU_TEST_FILES[@]}" \
    --junitxml="$LOGDIR/pytest-gpu.xml" >"$LOGDIR/pytest-gpu.log" 2>&1
rc=$?
tail -n 5 "$LOGDIR/pytest-gpu.log" | tee -a "$LOGDIR/summary.txt"
if [[ $rc -ne 0 ]]; then
    echo "FAIL: pytest -m gpu exited $rc" | tee -a "$LOGDIR/summary.txt"
    status=1
fi
passed=$(grep -c '^PASSED' "$LOGDIR/pytest-gpu.log" || true)
if [[ "$passed" -eq 0 ]]; then
    echo "FAIL: no GPU test passed (all skipped: no GPU seen by torch?)" | tee -a "$LOGDIR/summary.txt"
    status=1
fi

echo "== 2. gpusession demo --headless --device cuda" | tee -a "$LOGDIR/summary.txt"
SD=$(mktemp -d)
timeout 120 "$PY" -m gpusession --sessions-dir "$SD" demo --headless --device cuda \
    >"$LOGDIR/demo.log" 2>&1
rc=$?
tail -n 20 "$LOGDIR/demo.log" | tee -a "$LOGDIR/summary.txt"
cp "$SD/demo/resultats-bruts.csv" "$LOGDIR/demo-resultats-bruts.csv" 2>/dev/null || true
cp "$SD/demo/session.toml" "$LOGDIR/demo-session.toml" 2>/dev/null || true
cp "$SD/demo/journal.jsonl" "$LOGDIR/demo-journal.jsonl" 2>/dev/null || true
rm -rf "$SD"
if [[ $rc -ne 0 ]]; then
    echo "FAIL: demo exited $rc" | tee -a "$LOGDIR/summary.txt"
    status=1
fi

echo "== 3. benchmarks/bench_gpu_timing.py" | tee -a "$LOGDIR/summary.txt"
timeout 60 "$PY" benchmarks/bench_gpu_timing.py >"$LOGDIR/bench_gpu_timing.log" 2>&1
rc=$?
tee -a "$LOGDIR/summary.txt" <"$LOGDIR/bench_gpu_timing.log"
if [[ $rc -ne 0 ]]; then
    echo "FAIL: bench_gpu_timing exited $rc" | tee -a "$LOGDIR/summary.txt"
    status=1
fi

echo "== gpu-check: $([[ $status -eq 0 ]] && echo OK || echo FAILED)" | tee -a "$LOGDIR/summary.txt"
exit $status
