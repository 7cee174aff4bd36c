"""The rental guide's worked example, end to end (seed 003 §1, §4, §8; S8, S9, S10).

``examples/visuals``: a command workload renders eighteen PNG visuals (plain Python),
accepted by a rule (``--expected-outputs``, ``--deliverable-format png``, ``--accept``);
a named person approves them; ``cost`` gives 55.00 USD ÷ 18 approved visuals = 3.06 USD
per visual (17 after one rejection: 3.24); ``manifest`` and ``verify-copy`` hand them over.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import RunCli

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "visuals"

pytestmark = [pytest.mark.slow]


def test_s10_the_guides_example_18_visuals_approved_cost_3_06_per_visual(
        run_cli: RunCli, sessions_root: Path, tmp_path: Path) -> None:
    new = run_cli("new", "visuals", "--gpu", "RTX A5000", "--lots", "1", "--days", "7",
                  "--unit", "visual", "--expected-count", "18")
    assert new.returncode == 0, new.stderr
    assert "18 visuals expected" in new.stdout
    folder = sessions_root / "visuals"
    for name in ("render.py", "check.py", "expected.txt"):
        shutil.copy(EXAMPLE / name, folder / name)
    d = run_cli("experiment", "visuals", "define", "--id", "render", "--workload", "command",
                "--command", "python3 render.py {output}", "--values", "1", "--runs", "2", "--warmup", "0",
                "--expected-outputs", "expected.txt", "--deliverable-format", "png",
                "--accept", "python3 check.py {output}")
    assert d.returncode == 0, d.stderr
    r = run_cli("run", "visuals", "--headless", timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    # before any person decided: the rule's count, in the unit
    c = run_cli("cost", "visuals")
    assert c.stdout.splitlines()[0] == "55.00 USD ÷ 18 accepted visuals = 3.06 USD per visual"
    # hand-over folder, apart from the technical files (seed 003 §8)
    out = tmp_path / "visuals-out"
    shutil.copytree(folder / "runs" / "render" / "batch-1" / "warm-1", out)
    files = sorted(str(p) for p in out.glob("*.png"))
    assert len(files) == 18
    a = run_cli("approve", "visuals", *files, "--by", "Ana Reviewer", "--criteria", "readable in the tool")
    assert a.returncode == 0 and "18 approved visuals" in a.stdout, a.stderr
    c = run_cli("cost", "visuals")
    assert c.stdout.splitlines()[0] == "55.00 USD ÷ 18 approved visuals = 3.06 USD per visual"
    j = run_cli("reject", "visuals", files[-1], "--by", "Ana Reviewer", "--why", "legend unreadable")
    assert j.returncode == 0, j.stderr
    c = run_cli("cost", "visuals")
    assert c.stdout.splitlines()[0] == "55.00 USD ÷ 17 approved visuals = 3.24 USD per visual"
    # a file edited after its approval is not counted, and is named
    with open(files[0], "ab") as fh:
        fh.write(b"touched")
    c = run_cli("cost", "visuals")
    assert c.stdout.splitlines()[0] == "55.00 USD ÷ 16 approved visuals = 3.44 USD per visual"
    assert "visual-01.png  changed after approval on" in c.stdout
    # approved again after the edit; the rejected one set aside: the hand-over is the approved files
    assert run_cli("approve", "visuals", files[0], "--by", "Ana Reviewer").returncode == 0
    shutil.move(files[-1], tmp_path / "visual-18-rejected.png")
    m = run_cli("manifest", "visuals", "--also-in-deliverables")
    assert m.returncode == 0, m.stderr
    assert "approved and listed: 17 file(s)" in m.stdout
    c = run_cli("cost", "visuals")
    assert c.stdout.splitlines()[0] == "55.00 USD ÷ 17 approved visuals = 3.24 USD per visual"
    home = tmp_path / "home-copy"
    shutil.copytree(out, home)
    v = run_cli("verify-copy", str(home / "manifest.csv"), str(home))
    assert v.returncode == 0, v.stdout + v.stderr
    # the guide's flow to the hand-over (seed 003 §4, §8): the plan kept, the checklist ticked by
    # what gpusession recorded, the next rental started from the note (K6, S11)
    p = run_cli("package", "visuals", "--plan", "0.25,1,1,0.5,0.5")
    assert p.returncode == 0 and "plan 3.25 d: the 7-day package covers it; the 3-day one does not" in p.stdout
    c = run_cli("cost", "visuals")
    assert "(the plan kept with the package of session visuals)" in c.stdout
    cl = run_cli("checklist", "visuals")
    for item in ("g4.plan-days", "g4.package-covers", "g4.cost-per-deliverable"):
        assert f"[x] done (recorded by gpusession)  {item}" in cl.stdout, item
    assert "[ ] open  g1.approver" in cl.stdout  # a person's judgement stays the person's
    assert run_cli("checklist", "visuals", "note", "g8.decision", "render at 300 dpi next time").returncode == 0
    n = run_cli("new", "visuals-2", "--from", "visuals", "--gpu", "RTX A5000", "--lots", "1", "--days", "7")
    assert n.returncode == 0, n.stderr
    assert "  - experiment render: its definition and protocol (accept rule)" in n.stdout
    assert "  - decision note (g8.decision): render at 300 dpi next time" in n.stdout
    s2 = run_cli("show", "visuals-2")
    assert "results   0 rows" in s2.stdout and "plan      3.25 d" in s2.stdout
