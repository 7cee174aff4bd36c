"""The plan a session keeps beside its package: days per task, and which package covers it (K6; seed 003 §4).

The rental guide sums the planned task durations (a working hypothesis, not a
measurement) and picks the smallest package that covers the sum: 3.25 days needs the
7-day package, never the 3-day one. A session keeps that plan in ``session.toml``::

    [plan]
    durations_days = ["0.25", "1", "1", "0.5", "0.5"]   # decimal strings (K2)
    names = ["prepare", "render", "review", "fix", "copy home"]   # optional, one per task

``gpusession package NAME --plan 0.25,1,1,0.5,0.5 [--plan-names a,b,…]`` stores it;
``cost NAME`` prices it (``cost --plan`` overrides it for that call only); ``show``,
``show --json``, the Cost pane and the report say it beside the package. A later plan
longer or shorter than the kept one is kept as given and warned about: the estimate is
never shrunk to fit the package (seed 003 §4).

Who calls it: :mod:`gpusession.commands.session_cmds` (``package``, ``show``),
:mod:`gpusession.commands.cost_cmds`, the Cost pane, :mod:`gpusession.core.retrieval.report`
and the checklist's facts (S11).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from gpusession.core.files.errors import BadInput
from gpusession.core.files.secrets import check_no_secret, shown
from gpusession.core.folder.package import PACKAGE_DAYS, Package
from gpusession.core.money.cost import PlanCoverage, parse_plan, plan_coverage

if TYPE_CHECKING:
    from pathlib import Path

    from gpusession.core.folder.session import Session

#: The ``session.toml`` table holding the plan.
TABLE = "plan"
#: A task name is a short label: at most this many characters.
TASK_NAME_MAX_CHARS = 60
#: At most this many tasks in one plan (a longer list is a pasted file, not a plan).
TASKS_MAX = 100


@dataclass(frozen=True)
class KeptPlan:
    """A session's plan: the task durations in days, exact, with optional names (K2, K6).

    Attributes:
        durations_days: one exact duration per task, in days, in the order given.
        names: one name per task, or ``()`` when none were given.
    """

    durations_days: tuple[Decimal, ...]
    names: tuple[str, ...] = ()

    @property
    def coverage(self) -> PlanCoverage:
        """The sum and the smallest covering package (K6)."""
        return plan_coverage(self.durations_days)

    @property
    def total_days(self) -> Decimal:
        """The exact sum of the durations, in days."""
        return self.coverage.total_days

    def text(self) -> str:
        """The plan as ``--plan`` takes it: ``0.25,1,1,0.5,0.5``."""
        return ",".join(_days(d) for d in self.durations_days)

    def covered_by(self, package: Package) -> bool | None:
        """Whether the package's length covers the plan (K6); ``None`` while its days are not set."""
        if package.days is None:
            return None
        return self.total_days <= package.days

    def words(self, package: Package) -> str:
        """The plan beside the package, in words (K6, seed 003 §4).

        ``plan 3.25 d: the 7-day package covers it; the 3-day one does not``;
        ``plan 3.25 d: the 3-day package does not cover it; the 7-day one does``.
        """
        cov = self.coverage
        head = f"plan {_days(cov.total_days)} d"
        smallest = cov.package_days
        if smallest is None:
            combo = " + ".join(str(d) for d in cov.combination)
            return (f"{head}: longer than one 30-day package; {combo} days in a row cover it"
                    + (f" (the {package.days}-day package does not)" if package.days else ""))
        if package.days is None:
            return f"{head}: the {smallest}-day package is the smallest that covers it (package days not set)"
        if self.covered_by(package):
            smaller = [d for d in PACKAGE_DAYS if d < package.days]
            if package.days == smallest:
                if not smaller:
                    return f"{head}: the {package.days}-day package covers it"
                ones = " and ".join(f"{d}-day" for d in smaller)
                return (f"{head}: the {package.days}-day package covers it; the {ones} "
                        f"{'one does' if len(smaller) == 1 else 'ones do'} not")
            return (f"{head}: the {package.days}-day package covers it (the {smallest}-day one is the "
                    "smallest that does)")
        return (f"{head}: the {package.days}-day package does not cover it; the {smallest}-day one does "
                "(fix the plan or the package, never shrink the estimate)")

    def to_json(self, package: Package) -> dict[str, Any]:
        """The plan for ``show --json`` (docs/json/show.schema.json).

        ``durations_days`` (decimal strings), ``names``, ``total_days``, ``package_days``
        (the smallest covering package, ``null`` above 30 days), ``covered_by_package``
        (``null`` while the package's days are not set) and ``words``.
        """
        cov = self.coverage
        return {"durations_days": [_days(d) for d in self.durations_days],
                "names": list(self.names) or None,
                "total_days": _days(cov.total_days),
                "package_days": cov.package_days,
                "covered_by_package": self.covered_by(package),
                "words": self.words(package)}

    def to_toml(self) -> dict[str, Any]:
        """The ``[plan]`` table: durations as decimal strings (K2), names when given."""
        table: dict[str, Any] = {"durations_days": [_days(d) for d in self.durations_days]}
        if self.names:
            table["names"] = list(self.names)
        return table


def _days(value: Decimal) -> str:
    return format(value.normalize(), "f")


def _check_names(names: Sequence[str], n_tasks: int, *, path: Path | None = None,
                 field: str = "plan-names") -> tuple[str, ...]:
    out = []
    for i, raw in enumerate(names):
        if not isinstance(raw, str):
            raise BadInput(f"task {i + 1}: expected a name as text, got {shown(raw)}", path=path, field=field)
        t = unicodedata.normalize("NFC", raw.strip())
        if not t or len(t) > TASK_NAME_MAX_CHARS or any(unicodedata.category(c)[0] == "C" for c in t):
            raise BadInput(f"task {i + 1}: expected a short name on one line (at most {TASK_NAME_MAX_CHARS} "
                           f"characters), got {shown(raw)}", path=path, field=field)
        check_no_secret(t, field=field)
        out.append(t)
    if len(out) != n_tasks:
        raise BadInput(f"expected one name per task: {n_tasks} task(s) in the plan, {len(out)} name(s) given",
                       path=path, field=field)
    return tuple(out)


def make_plan(durations: str, names: str | None = None) -> KeptPlan:
    """A plan from the command line: ``"0.25,1,1,0.5,0.5"`` and optional ``"a,b,c,d,e"`` (K2, K6).

    Raises:
        BadInput: a malformed duration (``0,25``, an exponent, ≤ 0), more than
            :data:`TASKS_MAX` tasks, a plan longer than 366 days, names not one per task
            or not short one-line labels (field ``plan`` / ``plan-names``).
    """
    ds = tuple(parse_plan(durations))
    if len(ds) > TASKS_MAX:
        raise BadInput(f"expected at most {TASKS_MAX} tasks, got {len(ds)}", field="plan")
    plan_coverage(ds)  # a plan past 366 days is refused now, not when it is shown
    named = _check_names(names.split(","), len(ds)) if names is not None else ()
    return KeptPlan(ds, named)


def plan_of(data: Mapping[str, Any], path: Path | None = None) -> KeptPlan | None:
    """The plan a ``session.toml`` document keeps, ``None`` when it keeps none (K6).

    Args:
        data: the parsed ``session.toml``.
        path: the file, named in an error.

    Raises:
        BadInput: a ``[plan]`` table a person broke by hand (durations not decimal
            strings, names not one per task), naming file and field.
    """
    table = data.get(TABLE)
    if table is None:
        return None
    if not isinstance(table, Mapping):
        raise BadInput("expected a [plan] table", path=path, field=TABLE)
    raw = table.get("durations_days")
    if not isinstance(raw, list) or not raw or len(raw) > TASKS_MAX or not all(isinstance(d, str) for d in raw):
        raise BadInput('expected durations as decimal strings, e.g. durations_days = ["0.25", "1"]',
                       path=path, field=f"{TABLE}.durations_days")
    try:
        ds = tuple(parse_plan(",".join(raw)))
        plan_coverage(ds)
    except BadInput as exc:
        raise BadInput(exc.message, path=path, field=f"{TABLE}.durations_days") from None
    names = table.get("names")
    if names is None:
        return KeptPlan(ds)
    if not isinstance(names, list):
        raise BadInput("expected a list of task names", path=path, field=f"{TABLE}.names")
    return KeptPlan(ds, _check_names(names, len(ds), path=path, field=f"{TABLE}.names"))


def session_plan(session: Session) -> KeptPlan | None:
    """The plan ``session`` keeps (K6); ``None`` when none.

    Raises:
        BadInput: a ``[plan]`` table broken by hand (file and field named).
    """
    return plan_of(session.data, session.session_toml)


def _shrink_words(before: KeptPlan, plan: KeptPlan) -> str:
    """The warning for a plan cut shorter than the one kept (seed 003 §4: never shrink to fit).

    ``the plan shrank from 3.25 d to 3 d, so the 3-day package now covers it (the 7-day one
    did): …``; the smaller covering package is said only when it changed.
    """
    was, now = before.coverage.package_days, plan.coverage.package_days
    fits = (f", so the {now}-day package now covers it (the {was}-day one did)"
            if now is not None and (was is None or now < was) else "")
    return (f"the plan shrank from {_days(before.total_days)} d to {_days(plan.total_days)} d{fits}: "
            "kept as given; cut it only if the tasks really got shorter, never to fit a "
            "shorter package (both totals are in the journal)")


def keep_plan(session: Session, plan: KeptPlan) -> list[str]:
    """Store ``plan`` in ``session.toml`` and journal it (K6, S7).

    A plan longer or shorter than the one kept before is kept as given, with a warning:
    the estimate is never shrunk to fit the package (seed 003 §4), and a plan cut so that
    a shorter package covers it is said as plainly as one that grew. The journal's
    ``plan_set`` keeps both totals.

    Args:
        session: the open session.
        plan: the new plan (:func:`make_plan`).

    Returns:
        Warnings in words (empty when none): the plan grew or shrank; the package does not cover it.

    Raises:
        BadInput: the kept plan is broken by hand (nothing is written then).
    """
    # the record classes load on a write only (the TUI's first frame reads the plan)
    from gpusession.core.events.deliverable_records import PlanSetRecord

    before = session_plan(session)
    warnings: list[str] = []
    if before is not None and plan.total_days > before.total_days:
        warnings.append(f"the plan grew from {_days(before.total_days)} d to {_days(plan.total_days)} d; "
                        "kept as given, never shrunk to fit the package")
    elif before is not None and plan.total_days < before.total_days:
        warnings.append(_shrink_words(before, plan))
    if plan.covered_by(session.package) is False:
        warnings.append(plan.words(session.package))
    session.update(lambda data: data.__setitem__(TABLE, plan.to_toml()))
    session.journal(PlanSetRecord(durations_days=[_days(d) for d in plan.durations_days],
                                  names=list(plan.names) or None, total_days=_days(plan.total_days),
                                  previous_total_days=_days(before.total_days) if before else None))
    return warnings


__all__ = ["TABLE", "KeptPlan", "keep_plan", "make_plan", "plan_of", "session_plan"]
