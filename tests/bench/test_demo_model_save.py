"""A kill while the demo model is saved leaves no truncated model that every
later run would load (S7); the model file appears last, after its metadata."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch", reason="torch not installed")

from gpusession.bench.workloads import bbc_news  # noqa: E402
from gpusession.core.files.digest import sha256_file  # noqa: E402


def _corpus(folder: Path) -> Path:
    folder.mkdir()
    recs = [{"id": str(i), "text": f"{lab} word{i} text", "label": lab}
            for i, lab in enumerate(["a", "b", "a", "b", "a", "b"])]
    for name in ("train", "tune"):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    return folder


def test_s7_kill_while_saving_the_demo_model_leaves_no_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = _corpus(tmp_path / "corpus")
    out = tmp_path / "models"

    def cut_save(obj: Any, path: Any) -> None:
        Path(path).write_bytes(b"PK\x03\x04 truncated")
        raise KeyboardInterrupt

    monkeypatch.setattr(bbc_news.torch, "save", cut_save)
    with pytest.raises(KeyboardInterrupt):
        bbc_news.train(corpus, out, seed=0)
    assert not (out / bbc_news.MODEL_FILE).exists()
    assert not (out / bbc_news.META_FILE).exists()


def test_s7_saved_model_and_metadata_agree(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path / "corpus")
    out = tmp_path / "models"
    meta = bbc_news.train(corpus, out, seed=0)
    assert meta["model_revision"] == sha256_file(out / bbc_news.MODEL_FILE)
    assert json.loads((out / bbc_news.META_FILE).read_text())["model_revision"] == meta["model_revision"]
    assert sorted(p.name for p in out.iterdir()) == sorted([bbc_news.MODEL_FILE, bbc_news.META_FILE])
