"""Time of ``gpusession --help`` (and ``--version``, ``run --help``) against ``python -c pass``.

A person on a rented server types ``--help`` first; it must answer as fast as a bare
argparse script, so it imports neither polars nor textual nor torch. Each case runs as a
child process, interleaved with the others (one of each per round, so a busy machine slows
them alike): ``python -c pass``, a bare argparse script with the same subcommands and
options (written from gpusession's own parser, :func:`bare_script`, so the argparse work
is the same), ``gpusession --help``, ``--version`` and ``run --help``. The median of each
is printed with its ratio to ``python -c pass``, and the CPU time of each (a busy machine
inflates the wall time of a short process with waiting). Target: ``--help`` at most 4×
``python -c pass`` (the bare script takes about 2.75×).

Run: ``python benchmarks/bench_help.py [--runs 30]`` (gpusession importable by the active
Python). Exits 0 (a benchmark reports, it does not fail CI).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gpusession.cli import build_parser

#: ``--help`` ÷ ``python -c pass``, at most.
TARGET_RATIO = 4.0


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def _arguments(parser: argparse.ArgumentParser, var: str, lines: list[str]) -> None:
    """Append the lines that add ``parser``'s arguments and subcommands to ``var``."""
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        names = action.option_strings or [action.dest]
        kind = "store_true" if action.nargs == 0 else "store"
        extra = f", nargs={action.nargs!r}" if action.nargs not in (None, 0) else ""
        how = f"action={kind!r}" if action.option_strings else f"metavar={action.metavar!r}"
        lines.append(f"{var}.add_argument(*{names!r}, {how}{extra}, help={action.help!r})")
    sub = _subparsers(parser)
    if sub is None:
        return
    lines.append(f"{var}_sub = {var}.add_subparsers(dest={sub.dest!r}, metavar={sub.metavar!r})")
    helps = {a.dest: a.help for a in sub._choices_actions}
    seen: dict[int, str] = {}
    for i, (name, child) in enumerate(sub.choices.items()):
        if id(child) in seen:  # an alias: the same parser under a second name
            continue
        child_var = f"{var}_{i}"
        seen[id(child)] = child_var
        lines.append(f"{child_var} = {var}_sub.add_parser({name!r}, help={helps.get(name)!r}, "
                     f"description={child.description!r})")
        _arguments(child, child_var, lines)


def bare_script() -> str:
    """A plain argparse script with gpusession's subcommands, options and help words, and
    nothing else: what ``--help`` costs when only argparse works."""
    parser = build_parser()
    lines = ["import argparse", f"p = argparse.ArgumentParser(prog='gpusession', description={parser.description!r}, "
             f"epilog={parser.epilog!r})"]
    _arguments(parser, "p", lines)
    lines.append("p.parse_args()")
    return "\n".join(lines) + "\n"


#: The ``gpusession`` console script as pip writes it (``[project.scripts]``).
LAUNCHER = "import sys\nfrom gpusession.cli import main\nsys.exit(main())\n"

#: CPU seconds (user + system) of each case's children, beside the wall time.
CPU_S: dict[str, list[float]] = {}


def _time(name: str, cmd: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, env=env)
    _pid, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - t
    code = os.waitstatus_to_exitcode(status)
    if code:
        raise subprocess.CalledProcessError(code, cmd)
    CPU_S.setdefault(name, []).append(usage.ru_utime + usage.ru_stime)
    return elapsed


def main() -> int:
    """Measure, print the medians and the ratios to ``python -c pass``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30, help="rounds (one of each case per round)")
    args = ap.parse_args()
    print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "bare_help.py"
        script.write_text(bare_script(), encoding="utf-8")
        # With PYTHONDONTWRITEBYTECODE set every start would recompile gpusession (an
        # install has its bytecode): the children run without it, as bench_status's do.
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        # the console script's own lines (pip writes them): what `gpusession` runs, no runpy
        launcher = Path(tmp) / "gpusession"
        launcher.write_text(LAUNCHER, encoding="utf-8")
        gs = [sys.executable, str(launcher)]
        cases = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "bare argparse --help": [sys.executable, str(script), "--help"],
            "gpusession --help": gs + ["--help"],
            "gpusession --version": gs + ["--version"],
            "gpusession run --help": gs + ["run", "--help"],
        }
        for name, cmd in cases.items():  # warm the file cache (and write the bytecode) once
            _time(name, cmd, env)
        CPU_S.clear()
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.runs):
            for name, cmd in cases.items():
                times[name].append(_time(name, cmd, env))
    med = {name: statistics.median(ts) for name, ts in times.items()}
    cpu = {name: statistics.median(ts) for name, ts in CPU_S.items()}
    base, base_cpu = med["python -c pass"], max(cpu["python -c pass"], 1e-9)
    for name in cases:
        print(f"{name:<22} median {med[name] * 1000:6.1f} ms: {med[name] / base:5.2f}× python -c pass "
              f"(CPU {cpu[name] * 1000:5.1f} ms, {cpu[name] / base_cpu:5.2f}×), {args.runs} runs")
    ratio = med["gpusession --help"] / base
    print(f"gpusession --help {ratio:.2f}× python -c pass beside the bare argparse script's "
          f"{med['bare argparse --help'] / base:.2f}× (target ≤ {TARGET_RATIO:g}×): "
          f"{'met' if ratio <= TARGET_RATIO else 'NOT met'}")
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
