"""`report --html` in a real headless Chromium: the answer is on the page, nothing is fetched.

The page is opened from the disk (``file://``) at a phone's width (412 px): a
screenshot is taken, the rendered DOM is dumped, and Chromium's network log is read for
every request the page made (a control page that does fetch something shows the log
would catch it). Skipped with the reason where Chromium is not installed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
from core.test_report import NVML, T0, report_session  # noqa: F401  (the fixture)
from helpers import RunCli

from gpusession.core.folder.session import Session
from gpusession.core.records.results import ResultRow
from gpusession.core.retrieval import checklist as cl
from gpusession.core.retrieval.report import write_report
from gpusession.core.retrieval.report_html import markdown_to_html

CHROMIUM = next((p for p in (shutil.which("chromium"), shutil.which("chromium-browser"),
                             shutil.which("google-chrome")) if p), None)
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get install chromium)")

#: Chromium's own background traffic off, so that the log holds what the page asked for.
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--disable-domain-reliability",
         "--disable-client-side-phishing-detection", "--metrics-recording-only",
         "--disable-features=Translate,OptimizationHints,MediaRouter,AutofillServerCommunication"]


def _chromium(tmp: Path, page: Path, *what: str) -> subprocess.CompletedProcess[str]:
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    return subprocess.run([str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", "--window-size=412,900",
                           *what, page.as_uri()], capture_output=True, text=True, timeout=120)


def _page_requests(netlog: Path) -> list[str]:
    """URLs the page (a top frame loaded from file://) asked the network for."""
    log = json.loads(netlog.read_text(encoding="utf-8"))
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    found = []
    for event in log["events"]:
        params: dict[str, Any] = event.get("params") or {}
        if event["type"] == start and "url" in params and (
                "file://" in str(params.get("network_isolation_key", "")) or params.get("initiator") == "null"):
            found.append(str(params["url"]))
    return found


def _hostile(s: Session) -> None:
    """User text that would run if it were not escaped: an experiment, a variant, a note."""
    common: dict[str, Any] = dict(experiment_id="<script>alert(1)</script>", phase="warm",
                                  corpus_revision="c@2", quality_metric="macro_f1",
                                  quality_threshold=0.8, quality_tolerance=0.0, ids_match=True,
                                  format_valid=True, quality_value=0.9, corpus_accepted=True)
    s.results.append_many([ResultRow(**common, variant_id="<img src=x onerror=alert(2)>", run_index=i,
                                     elapsed_seconds=0.3 + i / 100) for i in range(1, 4)])
    cl.set_note(s, "g8.decision", "keep <b>batch 8</b> & <script>alert(3)</script>")


@needs_chromium
def test_d5_html_report_in_a_real_chromium(report_session: Session, tmp_path: Path) -> None:  # noqa: F811
    _hostile(report_session)
    res = write_report(report_session, now=T0, nvml=NVML, html=True)
    page = res.html
    assert page == report_session.folder / "report.html" and page.is_file()
    assert stat.S_IMODE(page.stat().st_mode) == 0o600
    shot, netlog = tmp_path / "phone.png", tmp_path / "net.json"
    done = _chromium(tmp_path, page, f"--screenshot={shot}", f"--log-net-log={netlog}")
    assert shot.is_file() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", done.stderr[-2000:]
    if os.environ.get("GPUSESSION_KEEP_SCREENSHOT"):  # to look at it by eye
        shutil.copy(shot, os.environ["GPUSESSION_KEEP_SCREENSHOT"])
    assert _page_requests(netlog) == []  # no request left the page
    dom = _chromium(tmp_path, page, "--dump-dom").stdout
    words = " ".join(dom.split())
    # the verdict and the cost figures, as the Markdown says them
    assert "2 distinct corpora accepted" in words
    assert "55.00 USD for the package" in words
    assert "27.50 USD per accepted deliverable" in words  # 55.00 USD ÷ 2 accepted corpora
    assert "<script" not in dom.split("</head>", 1)[1]  # user text shown, never run
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom and "&lt;script&gt;alert(3)" in dom
    assert "<img" not in dom  # the variant named like an image stays text
    assert "onerror" in dom  # … and is shown
    assert "<svg" in dom  # the charts, inline
    pdf = tmp_path / "printed.pdf"  # and it prints
    _chromium(tmp_path, page, f"--print-to-pdf={pdf}", "--no-pdf-header-footer")
    assert pdf.is_file() and pdf.read_bytes()[:5] == b"%PDF-"


@needs_chromium
def test_d5_the_network_log_would_see_a_request(tmp_path: Path) -> None:
    """The check above cannot pass for want of looking: a page that fetches is caught."""
    control = tmp_path / "control.html"
    control.write_text('<!DOCTYPE html><p>x</p><img src="http://127.0.0.1:9/probe.png">', encoding="utf-8")
    netlog = tmp_path / "net.json"
    _chromium(tmp_path, control, f"--log-net-log={netlog}", "--dump-dom")
    assert _page_requests(netlog) == ["http://127.0.0.1:9/probe.png"]


def test_d5_html_escapes_every_user_text_and_fetches_nothing() -> None:
    md = ("# Session report: <script>x</script>\n\n- **Verdict:** 1 distinct corpus accepted.\n\n"
          "## 1. Results\n| variant | n |\n| --- | --- |\n| <b>a\\|b</b> | 5 |\n\n"
          "Keep `<i>` and _this_; cudnn_benchmark false.\n\n![report-durations](report-durations.png)\n")
    page = markdown_to_html(md, title="Session report: <script>x</script>",
                            charts={"durations": "<svg viewBox='0 0 1 1'></svg>"})
    body = page.split("</head>", 1)[1]
    assert "<script" not in body and "&lt;script&gt;x&lt;/script&gt;" in body
    assert "<td>&lt;b&gt;a|b&lt;/b&gt;</td>" in body
    assert "<code>&lt;i&gt;</code>" in body and "<em>this</em>" in body and "cudnn_benchmark" in body
    # markdown-it puts each block tag on its own line
    assert ('<ul class="summary">\n<li><strong>Verdict:</strong> 1 distinct corpus accepted.</li>\n</ul>'
            in body)
    assert '<div class="scroll"><table>' in body and "</table></div>" in body  # scrolls sideways on a phone
    assert "<svg viewBox='0 0 1 1'></svg>" in body
    assert 'name="viewport"' in page and "default-src 'none'" in page and "@media print" in page
    assert "http://" not in page and "https://" not in page


def test_h45_html_links_and_images_other_than_the_charts_stay_their_markdown_text() -> None:
    """Only a chart beside the report is an image (inline); any other target is text, never fetched."""
    md = ("# T\n\n- a\n\nSee [l](http://127.0.0.1:9/z), <http://127.0.0.1:9/a>, [f](report-memory.png), "
          "![i](http://127.0.0.1:9/i.png), ![j](javascript:alert(1)), ![k](../x.svg) and "
          "![report-memory](report-memory.png).\n\n<img src=x onerror=alert(1)>\n")
    body = markdown_to_html(md, title="t", charts={"durations": "<svg></svg>"}).split("</head>", 1)[1]
    assert "[l](http://127.0.0.1:9/z)" in body and "&lt;http://127.0.0.1:9/a&gt;" in body
    assert "[f](report-memory.png)" in body  # a file beside it, shown as typed: the page links nowhere
    assert "![i](http://127.0.0.1:9/i.png)" in body and "![j](javascript:alert(1))" in body
    assert "![k](../x.svg)" in body
    assert "<em>chart report-memory not inline</em>" in body  # its chart was not drawn
    assert "&lt;img src=x onerror=alert(1)&gt;" in body  # an HTML block is text
    assert not re.search(r"<(a|img|script)\b|\b(href|src)=", body.replace("&lt;img src=", "")), body


def test_d5_html_summary_is_only_the_list_right_under_the_title() -> None:
    body = markdown_to_html("# T\n\nText.\n\n- a\n", title="t").split("</head>", 1)[1]
    assert "<ul>\n<li>a</li>" in body and "summary" not in body


@pytest.mark.slow
def test_d5_cli_report_html_writes_both_files(run_cli: RunCli, sessions_root: Path) -> None:
    assert run_cli("new", "r1", "--gpu", "RTX A5000", "--lots", "1", "--days", "3").returncode == 0
    r = run_cli("report", "r1", "--html")
    assert r.returncode == 0, r.stderr
    page = sessions_root / "r1" / "report.html"
    assert f"wrote {page}" in r.stdout and page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert stat.S_IMODE(page.stat().st_mode) == 0o600
    r = run_cli("report", "r1", "--html", "--out", str(sessions_root / "r1" / "report.md"))
    assert r.returncode == 2 and "--force" in r.stderr  # never overwritten silently
