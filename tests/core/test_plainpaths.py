"""H-34: what a command's placeholders substitute is always a plain path gpusession made.

Unit tests of :mod:`gpusession.core.folder.plainpaths`; the real commands (``make
--eval=``, ``sg``, a script that runs its argument through a shell) are in
``tests/bench/test_placeholders.py``.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from gpusession.core.files.errors import BadInput
from gpusession.core.folder.plainpaths import (
    PREFIX,
    is_plain,
    make_plain_paths,
    plain_suffix,
    plan_plain_paths,
    remove_plain_paths,
    substitution_values,
)

HOSTILE = "m$(shell touch INJECTED).jsonl"


@pytest.fixture
def temp(tmp_path: Path) -> Path:
    d = tmp_path / "tmp"
    d.mkdir()
    return d


def test_h34_a_hostile_corpus_name_is_given_as_a_plain_link_to_the_same_file(
    tmp_path: Path, temp: Path,
) -> None:
    run_dir = tmp_path / "s" / "runs" / "e"
    run_dir.mkdir(parents=True)
    corpus = tmp_path / "s" / HOSTILE
    corpus.write_text('{"id": "a", "text": "hi"}\n', encoding="utf-8")
    plain = make_plain_paths(run_dir, corpus, temp_dirs=[str(temp)])
    try:
        assert plain.corpus is not None and plain.corpus.name == "corpus.jsonl"
        assert plain.corpus.parent.parent == temp and plain.corpus.parent.name.startswith(PREFIX)
        assert is_plain(plain.corpus) and "$" not in str(plain.corpus)
        assert plain.corpus.read_bytes() == corpus.read_bytes()
        assert stat.S_IMODE(os.stat(plain.private_dir).st_mode) == 0o700
        # the run folder's path is plain already: the command writes the real output path
        out = run_dir / "batch-1" / "warm-1.jsonl"
        assert not plain.run_dir_linked and plain.output(out) == out
    finally:
        remove_plain_paths(plain)
    assert not plain.private_dir.exists() and corpus.exists()


def test_h34_a_session_folder_whose_path_is_not_plain_is_reached_through_a_plain_link(
    tmp_path: Path, temp: Path,
) -> None:
    """A session kept under ``my work [x]`` (H-26's server path): the output still lands there."""
    run_dir = tmp_path / "my work [x]" / "s $(touch INJECTED)" / "runs" / "e"
    (run_dir / "batch-1").mkdir(parents=True)
    plain = make_plain_paths(run_dir, None, temp_dirs=[str(temp)])
    try:
        real = run_dir / "batch-1" / "cold-1.jsonl"
        seen = plain.output(real)
        assert plain.run_dir_linked and is_plain(seen), seen
        assert plain.corpus is None
        seen.write_text('{"id": "a", "label": "x"}\n', encoding="utf-8")  # as the command would
        assert real.read_text(encoding="utf-8") == '{"id": "a", "label": "x"}\n'
    finally:
        remove_plain_paths(plain)
    assert not plain.private_dir.exists()
    assert real.exists(), "removing the links never touches what they point at"
    assert not list(tmp_path.rglob("INJECTED"))


def test_h34_values_substituted_are_plain_paths_and_integers(tmp_path: Path) -> None:
    private = tmp_path / "p"
    plain = plan_plain_paths(tmp_path / "s" / "runs" / "e", tmp_path / HOSTILE, private)
    out = tmp_path / "s" / "runs" / "e" / "context-512" / "warm-2.jsonl"
    values = substitution_values(plain, batch=4, context=512, output=out)
    assert values == {"batch": "4", "output": str(out), "corpus": str(private / "corpus.jsonl"),
                      "context": "512", "precision": "", "seed": ""}
    assert substitution_values(plain, batch=1, context=None, output=out)["context"] == ""
    assert substitution_values(plain, batch=1, context=None, output=out, seed=-7)["seed"] == "-7"
    for batch in ("4; touch INJECTED", True, 4.0, None):
        with pytest.raises(BadInput) as exc:
            substitution_values(plain, batch=batch, context=None, output=out)
        assert "{batch} must be an integer" in str(exc.value)
    with pytest.raises(BadInput) as exc:
        substitution_values(plain, batch=1, context="$(x)", output=out)
    assert "{context} must be an integer" in str(exc.value)
    with pytest.raises(BadInput) as exc:
        substitution_values(plain, batch=1, context=None, output=out, seed="7; touch INJECTED")
    assert "{seed} must be an integer" in str(exc.value)


def test_h34_an_output_outside_the_runs_folder_or_not_plain_below_it_is_refused(tmp_path: Path) -> None:
    plain = plan_plain_paths(tmp_path / "runs" / "e", None, tmp_path / "p")
    with pytest.raises(BadInput) as exc:
        plain.output(tmp_path / "elsewhere.jsonl")
    assert "is not inside" in str(exc.value)
    with pytest.raises(BadInput) as exc:
        plain.output(tmp_path / "runs" / "e" / "batch-$(x)" / "warm-1.jsonl")
    assert "A-Z a-z 0-9 . _ / -" in str(exc.value)


def test_h34_the_private_folder_goes_to_the_first_plain_temporary_folder(tmp_path: Path) -> None:
    spaced = tmp_path / "a b"
    spaced.mkdir()
    ok = tmp_path / "ok"
    ok.mkdir()
    with pytest.raises(BadInput) as exc:
        make_plain_paths(tmp_path / "runs" / "e", None, temp_dirs=[str(spaced)])
    assert "TMPDIR" in str(exc.value) and not list(spaced.iterdir())
    plain = make_plain_paths(tmp_path / "runs" / "e", None, temp_dirs=[str(spaced), str(ok)])
    try:
        assert plain.private_dir.parent == ok
    finally:
        remove_plain_paths(plain)
    with pytest.raises(BadInput):
        plan_plain_paths(tmp_path / "runs", None, spaced / "p")


@pytest.mark.parametrize("name, suffix", [
    (HOSTILE, ".jsonl"), ("c$(touch${IFS}INJECTED).jsonl", ".jsonl"), ("eval.CSV", ".CSV"),
    ("data.tar.gz", ".tar.gz"), ("x;touch P;#.jsonl", ".jsonl"), ("corpus", ""),
    ("a.$(x)", ""), ("a.b c.jsonl", ".jsonl"),
])
def test_h34_the_link_keeps_only_the_plain_suffix_of_the_corpus_name(name: str, suffix: str) -> None:
    assert plain_suffix(name) == suffix


@pytest.mark.parametrize("path, plain", [
    ("/tmp/gpusession-plain-ab_1/corpus.jsonl", True), ("relative/path", False),
    ("/a b", False), ("/a$b", False), ("/a\nb", False), ("/é", False), ("/a;b", False),
])
def test_h34_is_plain_accepts_only_absolute_paths_of_the_plain_characters(path: str, plain: bool) -> None:
    assert is_plain(path) is plain


def test_h34_links_left_by_a_killed_worker_are_removed_by_the_next_one_never_their_targets(
    tmp_path: Path, temp: Path,
) -> None:
    from gpusession.core.folder.plainpaths import remove_left_behind

    corpus = tmp_path / HOSTILE
    corpus.write_text("x\n", encoding="utf-8")
    gone = 4_999_999  # above Linux's largest pid_max: no such process
    dead = temp / f"{PREFIX}{gone}-abc_1"
    dead.mkdir()
    (dead / "corpus.jsonl").symlink_to(corpus)
    alive = temp / f"{PREFIX}{os.getpid()}-abc_2"
    alive.mkdir()
    (alive / "corpus.jsonl").symlink_to(corpus)
    kept = temp / f"{PREFIX}{gone}-abc_3"
    kept.mkdir()
    (kept / "notes.txt").write_text("not a link\n", encoding="utf-8")
    other = temp / "gpusession-plain-x"
    other.mkdir()
    plain = make_plain_paths(tmp_path / "runs" / "e", corpus, temp_dirs=[str(temp)])
    try:
        assert not dead.exists() and alive.exists() and kept.exists() and other.exists()
        assert corpus.read_text(encoding="utf-8") == "x\n"
        assert plain.private_dir.name.startswith(f"{PREFIX}{os.getpid()}-")
        assert remove_left_behind(temp) == []
    finally:
        remove_plain_paths(plain)
