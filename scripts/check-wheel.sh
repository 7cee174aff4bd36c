#!/usr/bin/env bash
# An install without a clone: build the sdist and the wheel (`python -m build`, the wheel
# made from the sdist), check that the wheel holds every package file that is not Python
# (rates, checklist, word lists and their sources, the TUI's stylesheet) and the man page
# (data-files), install it in a fresh venv in a temporary folder and use it from there, no
# clone beside it: --help, --version, then new → a command workload (no torch) → run →
# cost → status, and rates set → cost (a price of the user's own).
# Run from the repository root with the Python whose `build` to use (CI: the test extra's):
#   scripts/check-wheel.sh [PYTHON]
# Exit 0 when all of it worked; otherwise the first failure is said and the exit is non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${1:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trap 'echo "check-wheel: failed (exit $?): $BASH_COMMAND" >&2' ERR  # which step, in CI's log

"$py" -m build --outdir "$work/dist" . >"$work/build.log" 2>&1 \
    || { cat "$work/build.log"; echo "check-wheel: python -m build failed" >&2; exit 1; }
wheel=$(ls "$work"/dist/gpusession-*.whl)
ls "$work"/dist/gpusession-*.tar.gz >/dev/null
echo "check-wheel: built $(cd "$work/dist" && echo gpusession-*)"

# Every file under src/gpusession that is not Python must be in the wheel (package-data).
"$py" - "$wheel" <<'EOF'
import sys, zipfile
from pathlib import Path
src = Path("src")
wanted = {p.relative_to(src).as_posix() for p in (src / "gpusession").rglob("*")
          if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts}
names = zipfile.ZipFile(sys.argv[1]).namelist()
missing = sorted(wanted - set(names))
if missing:
    sys.exit(f"check-wheel: the wheel lacks package files (pyproject.toml [tool.setuptools.package-data]): {missing}")
try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib
# the files installed beside the package (the man page): NAME-VERSION.data/data/DIR/FILE
data_files = tomllib.loads(Path("pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"].get("data-files", {})
installed = {n.split(".data/data/", 1)[1] for n in names if ".data/data/" in n}
lacking = sorted(f"{d}/{Path(f).name}" for d, files in data_files.items() for f in files
                 if f"{d}/{Path(f).name}" not in installed)
if lacking:
    sys.exit(f"check-wheel: the wheel lacks data files (pyproject.toml [tool.setuptools.data-files]): {lacking}")
print(f"check-wheel: the wheel holds the {len(wanted)} package files that are not Python and "
      f"{sum(map(len, data_files.values()))} data file(s) ({', '.join(sorted(installed))})")
EOF

"$py" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q "$wheel"
if "$work/venv/bin/python" -c 'import torch' 2>/dev/null; then
    echo "check-wheel: the wheel's install pulled torch: it must not" >&2; exit 1
fi
gs=$work/venv/bin/gpusession
mkdir "$work/elsewhere"
cd "$work/elsewhere"  # no clone here: the package, its data and its script come from the wheel
unset PYTHONPATH GPUSESSION_NOW
# the sessions, the remembered folder and the user's settings all in the temporary folder
export GPUSESSION_HOME=$work/elsewhere/sessions XDG_STATE_HOME=$work/state XDG_CONFIG_HOME=$work/config
where=$("$work/venv/bin/python" -c 'import gpusession; print(gpusession.__file__)')
if [[ $where != "$work/venv/"* ]]; then
    echo "check-wheel: gpusession was imported from $where, not from the wheel's install" >&2; exit 1
fi
"$gs" --version
test -f "$work/venv/share/man/man1/gpusession.1" || { echo "check-wheel: the man page was not installed" >&2; exit 1; }
"$gs" --help >/dev/null
"$gs" run --help >/dev/null
"$gs" new w1 --gpu "RTX A5000" --lots 1 --days 7 >/dev/null
mkdir -p sessions/w1/corpus
printf '{"id":"1","text":"a b","label":"a"}\n{"id":"2","text":"c d","label":"b"}\n' >sessions/w1/corpus/eval.jsonl
"$gs" experiment w1 define --id copy --workload command --command 'cp {corpus} {output}' \
    --corpus corpus/eval.jsonl --values 1 --runs 2 --warmup 0 --device cpu --classes a,b --threshold 0.9 >/dev/null
"$gs" run w1 --headless --quiet
"$gs" cost w1 >/dev/null
"$gs" status w1
# a price of the user's own (in the temporary XDG_CONFIG_HOME), then a cost that reads it
"$gs" rates set "H100 SXM" --days 7 --price 1234.56 >/dev/null
"$gs" cost --gpu "H100 SXM" --days 7 --lots 1 >/dev/null
echo "check-wheel: the wheel installed in a fresh venv ran new, run (a command workload), cost, status and rates set"
