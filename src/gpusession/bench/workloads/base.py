"""The Workload protocol and how a workload name becomes an object (design.md §Workloads).

Who calls it: the worker process. The harness (worker) owns batching, input order,
timing and writing outputs; a workload only loads its model and predicts labels.

Names:

* ``bbc-news`` — the built-in demo classifier (:mod:`.bbc_news`).
* ``synthetic-mlp`` — an MLP with computed expected memory (:mod:`.synthetic_mlp`).
* ``package.module:factory`` — a user entry point, imported in the worker;
  ``factory(**params)`` returns an object following :class:`Workload`. A factory that
  names a ``seed`` parameter also gets ``seed=`` (the seed the worker applied to
  ``random``, numpy and torch before building it, :mod:`gpusession.bench.seeding`);
  any workload can read it as ``$GPUSESSION_SEED`` or ``torch.initial_seed()``.
* ``command`` — a plain program (``params.command`` argv list with ``{batch}``,
  ``{output}``, ``{corpus}`` placeholders), timed as a whole process (full-chain).
"""

from __future__ import annotations

import importlib
import os
from typing import Any, Protocol, runtime_checkable

from gpusession.core.files.errors import BadInput


@runtime_checkable
class Workload(Protocol):
    """A model the harness can time.

    ``load`` puts the model on ``device`` (``"cpu"``, ``"cuda:0"``…) in ``precision``
    (``fp32``/``fp16``/``bf16``) with a context limit in tokens (``None`` = no limit).
    ``predict`` returns one label per input text, in order.

    Optional: ``count_truncated(texts) -> int`` (inputs cut by the context limit, R9;
    otherwise the harness counts whitespace tokens), ``revisions() -> dict`` with
    ``model_revision`` / ``tokenizer_revision``, ``devices_used() -> list[str]``,
    ``expected_memory(batch) -> dict`` (bytes), ``classes``,
    ``count_tokens(texts) -> int`` (tokens fed to the model after the cut, journalled),
    ``set_context(limit)``: apply a run's context limit to the following predictions. A
    ``varied = "context"`` experiment calls it before each warm-up shape and each run
    (outside the timed region); a workload without it cannot vary the context and its
    load is refused (:func:`supports_context`).
    """

    def load(self, device: str, precision: str, context_limit: int | None) -> None:
        """Put the model on ``device`` in ``precision``; timed as the load phase (R3).

        Args:
            device: ``"cpu"``, ``"cuda:0"``…
            precision: ``"fp32"``, ``"fp16"`` or ``"bf16"`` (R1: its own experiment).
            context_limit: the context limit in tokens, ``None`` for none (R9).
        """
        ...

    def predict(self, texts: list[str]) -> list[str]:
        """Labels for ``texts``: one per input, in order (one batch of the run).

        Args:
            texts: a batch of input texts (length = the variant's batch size).

        Returns:
            One label per text; any exception is a failed run kept as a row (R7).
        """
        ...


def searched_words(exc: ImportError, mod_name: str) -> str:
    """Where Python looked for a workload module it did not find, in words (``""`` otherwise).

    The usual fix is ``PYTHONPATH`` or the directory gpusession runs in, so the sentence
    names the directory the worker ran in and what ``PYTHONPATH`` held.
    """
    if not isinstance(exc, ModuleNotFoundError) or (exc.name or "") != mod_name.split(".")[0]:
        return ""  # found, but something inside it did not import: its own error says what
    path = os.environ.get("PYTHONPATH") or "unset"
    return (f" (searched the directory gpusession ran in, {os.getcwd()}, PYTHONPATH={path}, and the "
            "installed packages; start gpusession in the module's folder or add it to PYTHONPATH)")


def resolve(name: str, params: dict[str, Any], seed: int | None = None) -> Workload:
    """Build the workload named ``name`` with ``params`` (and ``seed=`` when its factory names one).

    Args:
        name: ``bbc-news``, ``synthetic-mlp`` or ``module:factory``.
        params: the factory's keyword arguments (the experiment's ``--param`` items).
        seed: the seed the worker applied (:mod:`gpusession.bench.seeding`), passed as
            ``seed=`` to a factory that names a ``seed`` parameter (A2: the workload
            uses the seed the row states); ``None``: not passed.

    Raises:
        BadInput: an unknown name, a ``module:factory`` that does not import or whose
            result lacks ``load``/``predict``.
    """
    return build(name, params, seed)[0]


def build(name: str, params: dict[str, Any], seed: int | None = None) -> tuple[Workload, dict[str, Any]]:
    """:func:`resolve`, and the keyword arguments the factory got (the row's ``params``, A2).

    Raises:
        BadInput: as :func:`resolve`.
    """
    factory = _factory(name)
    kwargs = factory_kwargs(factory, params, seed)
    obj = factory(**kwargs)
    if ":" in name:
        check_contract(obj, name)
    return obj, kwargs


def factory_kwargs(factory: Any, params: dict[str, Any], seed: int | None) -> dict[str, Any]:
    """What ``factory`` is called with: ``params``, and ``seed`` when it names a ``seed`` parameter (A2)."""
    from gpusession.bench.seeding import factory_takes_seed

    kwargs = dict(params)
    if seed is not None and factory_takes_seed(factory):
        kwargs["seed"] = seed
    return kwargs


def _factory(name: str) -> Any:
    """The callable that builds the workload ``name`` (a built-in class or the user's factory).

    Raises:
        BadInput: as :func:`resolve`.
    """
    if name == "bbc-news":
        from gpusession.bench.workloads.bbc_news import BbcNewsWorkload

        return BbcNewsWorkload
    if name == "synthetic-mlp":
        from gpusession.bench.workloads.synthetic_mlp import SyntheticMlp

        return SyntheticMlp
    if ":" in name:
        mod_name, _, attr = name.partition(":")
        try:
            module = importlib.import_module(mod_name)
        except ImportError as exc:
            raise BadInput(f"workload module {mod_name!r} does not import: {exc}{searched_words(exc, mod_name)}",
                           field="workload") from None
        factory = getattr(module, attr, None)
        if factory is None:
            raise BadInput(f"{mod_name} has no {attr!r}", field="workload")
        if not callable(factory):
            raise BadInput(f"{mod_name}.{attr} is not callable; expected a factory: "
                           f"{attr}(**params) returning an object with {CONTRACT}", field="workload")
        return factory
    raise BadInput(
        f"unknown workload {name!r}; expected bbc-news, synthetic-mlp, command or module:factory",
        field="workload",
    )


#: The contract in one phrase, for messages (docs/guide.md, "Bringing your own model").
CONTRACT = "load(device, precision, context_limit) and predict(texts) -> labels"


def check_contract(obj: Any, name: str) -> None:
    """Refuse an object that breaks the load/predict contract, before anything is timed.

    ``load`` must accept three positional arguments ``(device: str, precision: str,
    context_limit: int | None)`` and ``predict`` one (``texts: list[str]``); see the
    guide's workload contract (docs/guide.md).

    Args:
        obj: what the factory returned.
        name: the workload name as defined (``package.module:factory``), for the message.

    Raises:
        BadInput: a missing or non-callable ``load``/``predict``, or one whose signature
            cannot take those arguments.
    """
    import inspect

    for method, args in (("load", ("cpu", "fp32", None)), ("predict", ([],))):
        fn = getattr(obj, method, None)
        if not callable(fn):
            raise BadInput(f"{name} returned {type(obj).__name__} without a {method}() method; "
                           f"expected an object with {CONTRACT}", field="workload")
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):  # a builtin without a signature: trust it
            continue
        try:
            sig.bind(*args)
        except TypeError as exc:
            raise BadInput(f"{name}: {method}{sig} cannot be called as "
                           f"{'load(device, precision, context_limit)' if method == 'load' else 'predict(texts)'} "
                           f"({exc}); expected {CONTRACT}", field="workload") from None


def supports_context(workload: Any) -> bool:
    """``True`` when ``workload`` can apply a context limit per run (``set_context``)."""
    return callable(getattr(workload, "set_context", None))


def count_tokens(workload: Any, texts: list[str]) -> int | None:
    """Tokens the workload feeds its model for ``texts`` at its current limit, or ``None``."""
    own = getattr(workload, "count_tokens", None)
    return int(own(texts)) if callable(own) else None


def count_truncated(workload: Any, texts: list[str], context_limit: int | None) -> int | None:
    """How many inputs the context limit cut, as the workload reports it (R9, A2).

    Args:
        workload: the loaded workload; its own ``count_truncated(texts)`` says what it cut.
        texts: every input of the run.
        context_limit: the limit in tokens; ``None`` for no limit.

    Returns:
        The workload's count; 0 without a limit; ``None`` when the workload counts no
        truncation: the limit was passed to it, what it did with it is not observed (a
        count of whitespace words once stood here, stated as a cut that never happened).
    """
    if context_limit is None:
        return 0
    own = getattr(workload, "count_truncated", None)
    if callable(own):
        return int(own(texts))
    return None
