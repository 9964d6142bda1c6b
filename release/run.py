"""Run a plan once, for real: true aggregates from the engine, OpenDP's noise, the ledger.

``run(plan, source, ledger=...)`` builds every query, checks each OpenDP map against the plan
and the budgets before the data is scanned, computes the true aggregates (contribution
bounds applied), draws the noise, records the release in the ledger — the budget checked in
the same transaction — and only then returns the released values. The result holds released
values only: no true value, no count of rows dropped or clamped.
"""

from __future__ import annotations

import inspect
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import numpy as np

from engine import Engine, EngineError, engine_from_env
from engine.sources import FileSource, FrameSource, Source, TableSource
from plan import model
from plan.build import Built, build_plan
from plan.identity import DatasetIdentity, content_digest, file_hash, frame_hash
from plan.model import Plan
from release.accounting import Spent, certified_spent, privacy_spent
from release.errors import DataMismatch, DrawFailed, OverBudget
from release.identities import digest_from_cells, known_digest
from release.ledger import (
    FAILED_DRAW,
    BudgetChange,
    Ledger,
    LedgerError,
    ReleaseRecord,
    standing,
    values_sha256,
)
from release.measurements import OPENDP_VERSION, Certified, certify

__all__ = ["ReleasedQuery", "Release", "run", "dataset_identity", "prepare", "Prepared",
           "values_hash", "IMPLEMENTATION"]

#: How the release names the software behind it (ledger, files, card).
IMPLEMENTATION = f"OpenDP {OPENDP_VERSION} (opendp.measurements, exact samplers, OS entropy)"


@dataclass(frozen=True)
class ReleasedQuery:
    """One query's released values: ``rows`` of (group, value), where group is a tuple of
    labels (empty for a single number) and value a released number or candidate.

    ``parts`` describes each noised part (mechanism, OpenDP function, scale, sensitivity,
    planned and certified privacy); ``notes`` what differs from the plan, if anything.
    ``intervals`` holds a (lower, upper) for each row's true value at the plan's level (None
    where the kind gives none), ``interval_method`` how (keys of
    ``dpcore.intervals.METHODS`` joined by ", "; "" for none).
    """

    id: str
    label: str
    statistic: str
    rows: tuple[tuple[tuple[str, ...], Any], ...]
    parts: tuple[dict[str, Any], ...]
    notes: tuple[str, ...] = ()
    intervals: tuple[tuple[float, float] | None, ...] = ()
    interval_method: str = ""

    def interval(self, i: int) -> tuple[float, float] | None:
        """The interval of row ``i`` (None when there is none)."""
        return self.intervals[i] if i < len(self.intervals) else None

    def values_record(self) -> dict[str, Any]:
        return {"id": self.id, "rows": [[list(group), _plain(value)]
                                        for group, value in self.rows]}


@dataclass(frozen=True)
class Release:
    """A recorded release: the plan, the dataset's identity, the released values, what it
    spent (``spent``; ``planned`` is what the plan's own figures compose to), and its record
    in the ledger (id, time, hash of the values)."""

    plan: Plan
    dataset: DatasetIdentity
    queries: tuple[ReleasedQuery, ...]
    spent: Spent
    planned: Spent
    record: ReleaseRecord
    values_hash: str
    implementation: str = IMPLEMENTATION
    notes: tuple[str, ...] = field(default=())
    #: The dataset's budget events recorded before this release (the steward's decisions:
    #: set, raised, lowered, δ cap removed, with time and reason), oldest first.
    budget_history: tuple[BudgetChange, ...] = ()


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    return value


def values_hash(queries: Sequence[ReleasedQuery]) -> str:
    """SHA-256 of the released values in canonical JSON: recorded in the ledger, so a file
    can be checked against the release it claims to be (``ledger.values_sha256``: the same
    function checks a release.json before its files are kept)."""
    return values_sha256([q.values_record() for q in queries])


def dataset_identity(plan: Plan, source: Source, *, content_hash: str | None = None,
                     legacy: bool = False, ledger_file: str | os.PathLike | None = None,
                     ) -> DatasetIdentity:
    """The name the plan gives the data and the digest of its content.

    A file, a Parquet folder or a frame: :func:`plan.identity.content_digest` (the same for
    the same table whatever path it came by); ``content_hash`` when the caller has it (the
    app passes a built-in's file's digest). A Spark table is known by its name and the
    version the caller gives. With ``ledger_file``, a file's digest is remembered per file
    version beside that ledger (:func:`release.identities.known_digest`): an unchanged file
    is not read again. With ``legacy`` (a ledger written before the content digest)
    the older byte-level hash is added as an alias. A plan pinned to a content hash refuses
    other data (:class:`~release.errors.DataMismatch`): the pin is the plan's own, public.
    """
    aliases: tuple[str, ...] = ()
    try:
        if content_hash is None:
            if isinstance(source, FileSource | FrameSource):
                data = source.frame if isinstance(source, FrameSource) else source
                content_hash = content_digest(data) if ledger_file is None else \
                    known_digest(data, ledger=ledger_file)
            elif isinstance(source, TableSource):
                content_hash = f"table:{source.table}@{source.version}"
            else:
                raise TypeError(f"source must be an engine source, got {type(source).__name__}")
        pinned = plan.dataset.content_hash
        if legacy or (pinned is not None and pinned != content_hash):
            if isinstance(source, FileSource):
                aliases = (file_hash(source.path),)
            elif isinstance(source, FrameSource):
                aliases = (frame_hash(source.frame),)
    except OSError as exc:
        raise DataMismatch(f"the data cannot be read to identify it ({exc})") from None
    if pinned is not None and pinned not in (content_hash, *aliases):
        raise DataMismatch(
            f"the data's content hash {content_hash[:19]}… is not the plan's "
            f"{pinned[:19]}…: the plan was made for other data (or the file changed). Make "
            "the plan on this data, or remove dataset.content_hash to accept any data under "
            f"the name {plan.dataset.name!r}")
    return DatasetIdentity(plan.dataset.name, content_hash, aliases if legacy else ())


@dataclass(frozen=True, eq=False)
class Prepared:
    """A plan checked before the data is scanned: built, each part certified by OpenDP (maps
    checked), and composed (``spent``, under the plan's accounting; ``planned`` from the
    plan's own figures)."""

    plan: Plan
    built: tuple[Built, ...]
    certified: tuple[tuple[Certified, ...], ...]
    spent: Spent
    planned: Spent


def _labels(built: Sequence[Built], parts: Sequence[Sequence[Any]]) -> list[str]:
    return [f"query {b.query.id!r} ({p.name})" for b, ps in zip(built, parts, strict=True)
            for p in b.parts]


def prepare(plan: Plan) -> Prepared:
    """Build and certify every query and compose the whole: everything that can refuse a
    release without reading the data (``PlanError``, ``Unsupported``, ``MapCheckFailed``,
    ``OverBudget`` against the plan's own budget)."""
    built = build_plan(plan)
    certified = tuple(certify(b) for b in built)
    labels = _labels(built, [b.parts for b in built])
    # the figure recorded: the tighter of OpenDP's certificates and its noises' laws
    spent = certified_spent([c for cs in certified for c in cs], plan.accounting,
                            labels=labels)
    planned = privacy_spent([p.loss for b in built for p in b.parts], plan.accounting,
                            labels=labels)
    if plan.budget is not None:
        _within_plan_budget(plan, spent)
    return Prepared(plan, built, certified, spent, planned)


def _within_plan_budget(plan: Plan, spent: Spent) -> None:
    budget = plan.budget
    if spent.epsilon > budget.epsilon:
        raise OverBudget(f"over the plan's budget: the release spends ε = {spent.epsilon:.6g} "
                         f"(certified by OpenDP, {spent.method} accounting), above the plan's "
                         f"total ε = {budget.epsilon:g}; lower the queries' budgets")
    if budget.delta is not None and spent.delta > budget.delta:
        raise OverBudget(f"over the plan's budget: the release spends δ = {spent.delta:.3g}, "
                         f"above the plan's total δ = {budget.delta:.3g}")


# --------------------------------------------------------------------------------------------
# true aggregates (kept in this module's locals only)


def _answer(engine: Engine, source: Source, query: Any) -> Any:
    try:
        return engine.answer(source, query)
    except EngineError as exc:
        raise DataMismatch(str(exc)) from None


def _aggregates(built: Built, engine: Engine, source: Source) -> tuple[Any, tuple]:
    """The engine's aggregates for ``built`` (and, for partition selection, the keys)."""
    if built.finds_groups:
        # Every key found, however many: a refusal above a count of keys would disclose it.
        keys = _groupable(_answer(engine, source, built.engine_queries[0]).values)
        if not keys:
            return (), ()
        return tuple(_answer(engine, source, query) for query in built.keyed_queries(keys)), keys
    return tuple(_answer(engine, source, query) for query in built.engine_queries), ()


def _answer_known(built: Sequence[Built], engine: Engine, source: Source,
                  cells: Callable[[Any, str], None] | None = None) -> None:
    """Answer together the queries known before any read (all but those keyed by the groups
    found: ``answer_many``, one ranking of each person's rows for all the queries under the
    same unit, issue 37 item 3), into the engine's cache. ``cells``: called by the engine
    with the CSV's text cells once it has read them and before any aggregate is computed
    (``DuckDBBackend.run_many``); what it raises stops the reading there."""
    known = [query for b in built if not b.finds_groups for query in b.engine_queries]
    if (len(known) > 1 or (known and cells is not None)) and hasattr(engine, "answer_many"):
        try:
            if cells is None:
                engine.answer_many(source, known)
            else:
                engine.answer_many(source, known, cells=cells)
        except EngineError as exc:
            raise DataMismatch(str(exc)) from None


def _plan_aggregates(built: Sequence[Built], engine: Engine, source: Source) -> list:
    """``_aggregates`` of every query of the plan, the known ones answered together first
    (``_answer_known``) so that each query's own call then reads the engine's cache."""
    _answer_known(built, engine, source)
    return [_aggregates(b, engine, source) for b in built]


def _groupable(values: Sequence[Any]) -> tuple:
    """The keys found that can name a group, by a rule on each value alone (never a refusal,
    which would say what the data holds). The backends give every key as its text
    (``DistinctValues``: ±inf are ``"inf"``, ``"-inf"``); a key given as a number is kept
    as before: a decimal as its float (keys whose floats are equal become one group), an
    infinite number left out (its rows are in no group, as rows with a missing key)."""
    keys: dict[Any, None] = {}
    for value in values:
        if isinstance(value, Decimal):
            value = float(value)
        if isinstance(value, float) and not math.isfinite(value):
            continue
        keys[value] = None
    return tuple(keys)


# --------------------------------------------------------------------------------------------
# drawing


def _draw_query(built: Built, certified: tuple[Certified, ...], aggs: tuple, keys: tuple,
                alpha: float) -> ReleasedQuery:
    """Draw every part of one query on its true aggregates (its kind says how); return
    released values only, each with its (1 − alpha) interval (from the released values, the
    mechanisms' laws and public parameters: never the true aggregates)."""
    statistic, rows, intervals = built.kind.release(built, certified, aggs, keys, alpha)
    notes = [c.note for c in certified if c.note]
    return _released(built.query, statistic, rows, certified, notes, intervals,
                     built.kind.interval_method_of(built))


def _released(pq: model.PlanQuery, statistic: str, rows: tuple, certified: tuple,
              notes: list[str], intervals: tuple = (), method: str = "") -> ReleasedQuery:
    parts = tuple(_describe(c) for c in certified)
    return ReleasedQuery(pq.id, pq.label, statistic, rows, parts, tuple(notes), intervals,
                         method)


def _describe(c: Certified) -> dict[str, Any]:
    return {"part": c.part.name, "mechanism": c.described, "opendp": c.opendp,
            "scale": c.part.scale, "opendp_scale": c.opendp_scale,
            "sensitivity": c.part.sensitivity, "planned": c.part.loss.to_dict(),
            "certified": c.certified.to_dict()}


# --------------------------------------------------------------------------------------------
# the release

def _record_failed_draw(ledger: Ledger, identity: DatasetIdentity, plan: Plan,
                        spent: Spent) -> None:
    """Charge a release whose draw failed: recorded even past the budget (the budget was
    checked before the draw; only a release recorded meanwhile by another process can have
    taken it), since the noise was drawn. A ledger that cannot record it says so, with the
    spend to record by hand."""
    try:
        ledger.record_release(identity, epsilon=spent.epsilon, delta=spent.delta,
                              accounting=spent.method, values_hash=FAILED_DRAW,
                              plan_json=plan.to_json(), implementation=IMPLEMENTATION,
                              check_budget=False)
    except LedgerError as exc:
        raise LedgerError(
            f"the release failed while drawing its noise, and the ledger could not record "
            f"its spend ({exc}): ε = {spent.epsilon:.6g}, δ = {spent.delta:.3g} were spent on "
            f"{identity.name!r} and must be counted by hand; nothing was published") from exc


def _first_line(exc: BaseException) -> str:
    """The last line of an exception's message that says something (OpenDP's end in
    brackets), cut to 300 characters."""
    lines = [line.strip() for line in str(exc).splitlines() if any(map(str.isalnum, line))]
    return (lines[-1] if lines else "no message")[:300]


def _checked_identity(plan: Plan, source: Source, ledger: Ledger, prepared: Prepared,
                      content_hash: str | None, budget: float | None,
                      budget_delta: float | None) -> DatasetIdentity:
    """The data's identity, once the ledger allows this release of it: its budget set if
    asked and new, who releases allowed, enough budget left (``OverBudget`` otherwise)."""
    identity = dataset_identity(plan, source, content_hash=content_hash,
                                legacy=ledger.knows_legacy_identities(),
                                ledger_file=ledger.path)
    if budget is not None:
        ledger.set_budget(identity, budget, delta=budget_delta, only_if_new=True,
                          reason="set by the first release's --budget")
    # who may release (a steward; an analyst within their allotment) is checked before any
    # noise is drawn, on public facts only; record_release checks it again when it records
    ledger.check_may_release(identity, prepared.spent.epsilon, prepared.spent.delta)
    status = ledger.status(identity)
    known = ("" if not status.names or status.names[0] == identity.name else
             f" (the same data as {status.names[0]!r} in the ledger)")
    if status.budget is not None and status.remaining_epsilon is not None and (
            prepared.spent.epsilon > status.remaining_epsilon):
        raise OverBudget(
            f"over budget: {identity.name!r}{known} "
            f"{standing(status.remaining_epsilon, status.budget.epsilon)} "
            f"({status.releases} release(s) so far) and this release needs ε = "
            f"{prepared.spent.epsilon:.6g}; nothing was drawn")
    if status.remaining_delta is not None and prepared.spent.delta > status.remaining_delta:
        raise OverBudget(
            f"over budget: {identity.name!r}{known} "
            f"{standing(status.remaining_delta, status.budget.delta, 'δ', digits=3)} and this "
            f"release needs δ = {prepared.spent.delta:.3g}; nothing was drawn")
    return identity


def run(plan: Plan, source: Source, *, ledger: Ledger, budget: float | None = None,
        budget_delta: float | None = None, engine: Engine | None = None,
        content_hash: str | None = None) -> Release:
    """Release ``plan`` on ``source`` once, record it in ``ledger`` and return the values.

    Parameters
    ----------
    plan : Plan
    source : engine source
        The data (a file, a Parquet folder, a frame in memory, a Spark table).
    ledger : Ledger
        Where the release is recorded and the dataset's budget is kept.
    budget : float, optional
        The dataset's total ε, set in the ledger if the dataset has no budget yet (the
        command line's explicit ``--budget``), with ``budget_delta`` its total δ if given.
    engine : Engine, optional
        Default ``engine_from_env()`` (DuckDB, or Spark with ``EPSILON_LAB_ENGINE=spark``).
    content_hash : str, optional
        The data's hash when the caller knows it (an upload's bytes).

    Raises
    ------
    ReleaseRefused
        With the reason: a map above the plan's figure, a mechanism OpenDP cannot sample
        safely, over budget, data that does not fit the plan. Nothing is recorded.
    DrawFailed
        (A ``ReleaseRefused``.) Something raised once noise was drawn: the release's budget
        is recorded as spent (values hash ``ledger.FAILED_DRAW``), nothing is returned.
    PlanError
        A query cannot be built as planned.
    LedgerError
        The ledger cannot be read or written (nothing recorded).
    """
    prepared = prepare(plan)
    # who may release at all (a viewer may not) needs no data: asked before any read
    ledger.check_may_release(None, prepared.spent.epsilon, prepared.spent.delta)
    own_engine = engine is None   # built here: its answer cache lives only in this call
    engine = engine if engine is not None else engine_from_env()
    inputs = None
    # only an engine whose run_many takes the cells (DuckDB's: it reads a file's cells once
    # for the plan) can hand them to the digest; with another (Spark's run_many ranks once
    # but its cells stay in the JVM) the identity is checked first, as before
    run_many = getattr(getattr(engine, "backend", None), "run_many", None)
    reads_cells = run_many is not None and "cells" in inspect.signature(run_many).parameters
    pending = None if content_hash is not None or not reads_cells else digest_from_cells(
        source, ledger=ledger.path)
    identity = None
    if pending is not None:
        # A CSV identified for the first time: its digest is computed from the cells the
        # aggregates read (one parse of the file instead of two, issue 37), and the checks
        # that need it (the analyst's allotment, the dataset's budget) run as soon as the
        # engine has the cells, before it computes any aggregate: a refused release reads
        # the file to identify it and nothing more.
        def checked_on_cells(connection: Any, cells: str) -> None:
            nonlocal identity
            pending.digest(connection, cells)
            try:
                digest = pending.result()
            except OSError as exc:
                raise DataMismatch(f"the data cannot be read to identify it ({exc})") from None
            identity = _checked_identity(plan, source, ledger, prepared, digest, budget,
                                         budget_delta)

        try:
            _answer_known(prepared.built, engine, source, cells=checked_on_cells)
        except BaseException:
            # nothing of an engine built for this call alone outlives a refusal
            if own_engine:
                engine = None
            raise
    if identity is None:   # not a CSV read for the first time, or its cells were not read
        identity = _checked_identity(plan, source, ledger, prepared, content_hash, budget,
                                     budget_delta)
    # every read before the first draw: a file the engine cannot read refuses with no noise
    # drawn, so nothing is spent
    inputs = _plan_aggregates(prepared.built, engine, source)
    released = []
    try:
        for built, certified, (aggs, keys) in zip(prepared.built, prepared.certified, inputs,
                                                 strict=True):
            released.append(_draw_query(built, certified, aggs, keys,
                                        plan.accounting.alpha))
        digest = values_hash(released)   # may refuse a drawn value (NaN): after the draws
    except Exception as exc:
        # Noise was drawn from the data: the failure (and a retry) may depend on it, so the
        # release's budget is spent whatever happened next. Nothing is published.
        _record_failed_draw(ledger, identity, plan, prepared.spent)
        raise DrawFailed(
            f"the release failed while drawing its noise ({type(exc).__name__}: "
            f"{_first_line(exc)}); its budget (ε = {prepared.spent.epsilon:.6g}, δ = "
            f"{prepared.spent.delta:.3g}) is recorded as spent in the ledger, since noise "
            "had been drawn from the data; nothing was published") from exc
    finally:
        del inputs  # the true aggregates go no further
    record = ledger.record_release(
        identity, epsilon=prepared.spent.epsilon, delta=prepared.spent.delta,
        accounting=prepared.spent.method, values_hash=digest, plan_json=plan.to_json(),
        implementation=IMPLEMENTATION)
    notes = tuple(n for n in (prepared.spent.note,) if n)
    # the budget events before this entry: what any later card must say about the budget
    history = tuple(c for c in ledger.status(identity).history if c.entry < record.id)
    return Release(plan, identity, tuple(released), prepared.spent, prepared.planned, record,
                   digest, IMPLEMENTATION, notes, history)


