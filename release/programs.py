"""Programs to take away: a plan as a self-contained OpenDP program (one machine) and as a
PipelineDP program for Spark (data on a cluster), each generated as Python source text.

Both are pure functions of the plan. Every value taken from the plan (column names, labels,
categories, bounds, scales) enters the program only inside Python literals written by
``repr`` and read back by ``ast.literal_eval`` before the text is returned, so no plan can put
code into a program. The fixed part of each program (how it reads data, bounds contributions,
builds and checks measurements) is the same for every plan: real Python files in
``release/templates`` (ruff lints them, tests import them), whose PLAN block of placeholders
is replaced by the plan's literals and whose SHARED block by ``common.py``'s shared code.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import math
import pprint
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dpcore.mechanisms import AdditiveMechanism, spec_of
from dpcore.safe_rounding import upper
from plan import model
from plan.build import Built, NoisyMax
from plan.kinds import kind_of
from plan.model import Plan
from release.accounting import Spent
from release.measurements import OPENDP_VERSION, Certified
from release.run import prepare

__all__ = ["ProgramUnsupported", "plan_sha256", "opendp_program", "spark_program",
           "every_run", "PIPELINE_DP_VERSION"]

#: The PipelineDP release the Spark program is written for.
PIPELINE_DP_VERSION = "0.3.1"


class ProgramUnsupported(ValueError):
    """The plan holds something the program cannot release as planned (named in the
    message); nothing is generated."""


def plan_sha256(plan: Plan) -> str:
    """``sha256:`` and the hex digest of the plan's JSON text (UTF-8): the plan a program
    releases, checked by the program at start."""
    return "sha256:" + hashlib.sha256(plan.to_json().encode("utf-8")).hexdigest()


def _spends(spent: Spent) -> str:
    """``ε = … (δ = …)``, and the plan's total ρ in zCDP: each rounded up."""
    figures = f"δ = {upper(spent.delta, 4)}"
    if spent.rho is not None:
        figures += f"; ρ = {upper(spent.rho, 4)}"
    return f"ε = {upper(spent.epsilon, 4)} ({figures})"


def every_run(spent: Spent) -> str:
    """What a program says when it starts (and in its header): each run is a new release of
    the same people, spending ``spent`` (rounded up) every time, outside the app's ledger."""
    return ("This program makes a new differentially private release of these data each time "
            f"it runs; it spends {_spends(spent)} every run and is not recorded in Epsilon "
            "Lab's ledger.")


# --------------------------------------------------------------------------------------------
# safe literals


def _plain(value: Any, path: str = "value") -> Any:
    """``value`` made of dicts with str keys, lists, str, int, finite float, bool and None
    only (anything else refused): what ``repr`` writes and ``literal_eval`` reads back."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ProgramUnsupported(f"{path}: {value!r} is not a finite number")
        return float(value)
    if isinstance(value, list | tuple):
        return [_plain(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise TypeError(f"{path}: keys must be str")
        return {k: _plain(v, f"{path}.{k}") for k, v in value.items()}
    if hasattr(value, "item"):  # a numpy scalar
        return _plain(value.item(), path)
    raise TypeError(f"{path}: {type(value).__name__} cannot be written into a program")


def _literal(value: Any) -> str:
    """A Python literal for ``value``, checked to read back equal (the injection guard)."""
    plain = _plain(value)
    text = pprint.pformat(plain, indent=1, width=96, sort_dicts=False)
    if ast.literal_eval(text) != plain or _types(ast.literal_eval(text)) != _types(plain):
        raise AssertionError("a literal did not read back equal")  # pragma: no cover
    return text


def _types(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _types(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_types(v) for v in value]
    return type(value).__name__


def _text_constant(name: str, text: str) -> str:
    """``NAME = (...)``: ``text`` as one string literal per line (readable, and inert)."""
    lines = "".join(f"    {line!r}\n" for line in text.splitlines(keepends=True))
    out = f"{name} = (\n{lines})\n"
    if ast.literal_eval(out.split("=", 1)[1].strip()) != text:  # pragma: no cover
        raise AssertionError("a text constant did not read back equal")
    return out


def _constants(plan: Plan, values: dict[str, Any]) -> str:
    out = ["# " + "-" * 90, "# The plan (generated: do not edit; the program checks PLAN_SHA256)",
           "", f"PLAN_SHA256 = {_literal(plan_sha256(plan))}",
           _text_constant("PLAN_JSON", plan.to_json())]
    for name, value in values.items():
        out.append(f"{name} = {_literal(value)}")
        out.append("")
    return "\n".join(out)


# --------------------------------------------------------------------------------------------
# the queries as plain data


def _query_record(pq: model.PlanQuery, unit: model.PrivacyUnit) -> dict[str, Any]:
    """What the programs read for one query: its kind's record (``plan.kinds``)."""
    kind = kind_of(pq.query)
    return {"id": pq.id, "label": pq.label, "kind": kind.name,
            **kind.program_record(pq.query), "columns": list(kind.columns(pq.query))}


def _unsupported_partition(built: Built, program: str) -> None:
    if built.finds_groups:
        raise ProgramUnsupported(
            f"query {built.query.id!r}: the {program} program does not yet export a group-by "
            "whose groups are found by partition selection; declare the keys (public groups) "
            "or release this plan from the app or the command line")


def _additive_record(c: Certified, quantile: float | None) -> dict[str, Any]:
    mech = c.part.mechanism
    spec = spec_of(mech)
    recipe = spec.release            # how OpenDP draws it (MechanismSpec.release)
    pure = recipe.certifies == "epsilon"
    return {"noise": recipe.opendp.removeprefix("make_"),
            "norm": spec.sensitivity_norm, "d_in": c.d_in,
            "measure": recipe.certifies,
            "plan_figure": mech.privacy.epsilon if pure else mech.zcdp.rho,
            "clamp": [mech.lower, mech.upper] if recipe.clamp else None}


def _noisy_max_record(c: Certified, quantile: float | None) -> dict[str, Any]:
    mech = c.part.mechanism
    out: dict[str, Any] = {"noise": "noisy_max", "selection_noise": mech.noise, "k": mech.k,
                           "negate": mech.negate, "monotonic": mech.monotonic,
                           "d_in": c.d_in, "quantile": quantile}
    if mech.noise == "exponential" and mech.measure == "pure":
        out |= {"measure": "epsilon", "plan_figure": mech.privacy.epsilon}
    elif mech.noise == "exponential":
        out |= {"measure": "rho_of_epsilon", "plan_figure": mech.privacy.rho}
    else:
        out |= {"measure": "rho", "plan_figure": mech.privacy.rho}
    if quantile is not None:  # the program chains OpenDP's scorer: d_in is rows per person
        out["d_in"] = None
    return out


#: How the OpenDP program builds each type of part (a catalogue mechanism's class found by
#: its base class); the other types are refused before (partition selection, synthetic
#: tables: ``_unsupported_partition``, the kind's ``opendp_program_reason``).
_PROGRAM_PARTS: dict[type, Callable[[Certified, float | None], dict[str, Any]]] = {
    AdditiveMechanism: _additive_record, NoisyMax: _noisy_max_record}


def _opendp_part(c: Certified, quantile: float | None) -> dict[str, Any]:
    """One part as the OpenDP program builds it, with the plan's figure its map must meet."""
    mech = c.part.mechanism
    record = next((_PROGRAM_PARTS[cls] for cls in type(mech).__mro__ if cls in _PROGRAM_PARTS),
                  None)
    if record is None:  # pragma: no cover - refused before
        raise ProgramUnsupported(f"part {c.part.name!r}: no OpenDP program for {mech!r}")
    out: dict[str, Any] = {"part": c.part.name, "scale": c.opendp_scale,
                           "integer": c.integer, **record(c, quantile)}
    out["certified"] = c.certified.to_dict()
    return out


def opendp_program(plan: Plan) -> str:
    """A self-contained OpenDP program that releases ``plan`` once on one machine.

    ``python program.py --data PATH [--out FILE]`` reads a CSV, CSV.gz or Parquet file (a
    CSV by the release's one reading of a cell, :func:`cells_code`: each cell its own text,
    person ids and categories by canonical key, numbers per cell, malformed records by the
    same rule; undeclared values dropped, values clamped, a whole-number sum's values rounded,
    as the release does: nothing the data holds is refused), applies the plan's contribution
    bounds and clamping, builds each query's OpenDP 0.16 measurement at the plan's noise
    scale, checks every privacy map against the plan's figure
    before drawing anything, and prints (and writes) the released values as JSON with a
    top-level ``"privacy_spent"``: the plan's total under its accounting
    (:func:`release.accounting.privacy_spent` of what OpenDP certifies). It imports only
    opendp, numpy and pandas. A variance is its three parts (the count of the values that
    read as numbers among each person's kept rows, their sum of deviations from the bounds'
    midpoint and of squared deviations; the rows kept once for every query), each measured
    by OpenDP at the plan's scale, combined as ``plan.kinds.variance.variance_of``.

    Raises
    ------
    ProgramUnsupported
        A query the program cannot release as planned (partition selection); also every
        refusal of a release that needs no data (``release.run.prepare``: a map above the
        plan, a mechanism with no safe sampler, over the plan's budget).
    """
    prepared = prepare(plan)
    queries = []
    for built, certified in zip(prepared.built, prepared.certified, strict=True):
        if not built.engine_queries:
            continue   # drawn before (max rows): the unit's MAX_ROWS, charged in PRIVACY_SPENT
        _unsupported_partition(built, "OpenDP")
        reason = built.kind.opendp_program_reason(built.query.query)
        if reason:
            raise ProgramUnsupported(f"query {built.query.id!r}: {reason}")
        record = _query_record(built.query, plan.privacy_unit)
        record["parts"] = [_opendp_part(c, c.part.quantile) for c in certified]
        queries.append(record)
    unit = plan.privacy_unit
    constants = _constants(plan, {
        "EVERY_RUN": every_run(prepared.spent),
        "DATASET": plan.dataset.name,
        "OPENDP_VERSION": OPENDP_VERSION,
        "PERSON_COLUMN": unit.person_column,
        "MAX_ROWS": unit.max_rows,
        "MAX_GROUPS": unit.max_groups,
        "ACCOUNTING": {"method": prepared.spent.method, "delta": plan.accounting.delta},
        "PRIVACY_SPENT": {"epsilon": prepared.spent.epsilon, "delta": prepared.spent.delta},
        "QUERIES": queries,
    })
    return _program("opendp_program", constants, prepared.spent)


# --------------------------------------------------------------------------------------------
# Spark (PipelineDP)


def _spark_part(query_id: str, built: Built, index: int) -> dict[str, Any]:
    part = built.parts[index]
    mech = part.mechanism
    try:
        spec = spec_of(mech)    # a catalogue mechanism: PipelineDP adds its noise
    except TypeError:  # pragma: no cover - refused before (selection, partition selection)
        raise ProgramUnsupported(f"query {query_id!r}: no PipelineDP aggregation for it"
                                 ) from None
    recipe = spec.release
    noise = None if recipe is None else recipe.pipeline_dp
    if noise is None:
        why = spec.unreleasable if recipe is None else recipe.pipeline_dp_reason
        raise ProgramUnsupported(f"query {query_id!r}: {why}")
    if part.loss.epsilon is None:   # PipelineDP sets its noise by (ε, δ), never by ρ
        raise ProgramUnsupported(
            f"query {query_id!r}: PipelineDP 0.3 sets its noise by ε (and δ) only; the plan's "
            f"{spec.label} mechanism under zCDP has no PipelineDP counterpart: plan it under "
            "pure or approximate DP for this program")
    budget = {"epsilon": part.loss.epsilon, "delta": part.loss.delta}
    return {"part": part.name, "noise": noise.lower(), "planned_kind": spec.kind, **budget,
            "plan_scale": mech.scale, "sensitivity": part.sensitivity}


def spark_program(plan: Plan) -> str:
    """A PipelineDP program that releases ``plan`` once with Spark.

    ``spark-submit program.py --data PATH`` (or ``python program.py --data PATH`` with a
    local master) reads CSV (every field a string, split as the release splits it, each
    cell then read by :func:`cells_code`'s rule) or Parquet into Spark and runs each noised
    part of each query as
    its own PipelineDP aggregation (COUNT or SUM over the declared, public partitions, with
    the privacy unit's contribution bounds), each with its own ``NaiveBudgetAccountant``
    holding exactly that part's planned (ε, δ): PipelineDP's budget split then never moves
    budget between queries, and its Laplace scale is the plan's. A mean is a SUM and a COUNT
    (the plan's split), then divided; a variance is a COUNT, a SUM of the clamped values'
    deviations from the bounds' midpoint (in [−h, h]) and a SUM of their squares (in
    [0, h²]): the plan's three parts, each with its own budget, so PipelineDP's sensitivities
    are the plan's (r, r·h, r·h²), combined as ``plan.kinds.variance.variance_of``.
    PipelineDP's own VARIANCE metric is not used: it noises the sum of the values' squares
    with a sensitivity read off [L², U²] and splits its budget by its own arithmetic, so its
    noise is not the plan's. The program prints the released values, what each
    accountant spent and the noise standard deviation PipelineDP applied.

    Raises
    ------
    ProgramUnsupported
        Accounting other than basic composition (PipelineDP's naive accountant), quantiles,
        selections, partition selection, or a mechanism PipelineDP does not have.
    """
    if plan.accounting.method != "basic":
        raise ProgramUnsupported(
            f"accounting.method: the Spark program accounts with PipelineDP's naive "
            f"accountant (basic composition); the plan uses {plan.accounting.method}, which "
            "PipelineDP 0.3 cannot reproduce per query. Use basic accounting or the OpenDP "
            "program")
    prepared = prepare(plan)
    queries = []
    for built in prepared.built:
        pq = built.query
        if not built.engine_queries:
            continue   # drawn before (max rows): the unit's MAX_ROWS, charged in PLANNED_SPENT
        reason = built.kind.spark_reason(pq.query)
        if reason:
            raise ProgramUnsupported(f"query {pq.id!r}: {reason}")
        record = _query_record(pq, plan.privacy_unit)
        record["parts"] = [_spark_part(pq.id, built, i) for i in range(len(built.parts))]
        queries.append(record)
    unit = plan.privacy_unit
    constants = _constants(plan, {
        "EVERY_RUN": every_run(prepared.planned),
        "DATASET": plan.dataset.name,
        "PIPELINE_DP_VERSION": PIPELINE_DP_VERSION,
        "PERSON_COLUMN": unit.person_column,
        "MAX_ROWS": unit.max_rows,
        "MAX_GROUPS": unit.max_groups,
        "PLANNED_SPENT": {"epsilon": prepared.planned.epsilon,
                          "delta": prepared.planned.delta},
        "QUERIES": queries,
    })
    return _program("spark_program", constants, prepared.planned)


# --------------------------------------------------------------------------------------------
# the fixed parts of the programs: real Python files (release/templates), filled in

_TEMPLATES = Path(__file__).with_name("templates")


@functools.cache
def _template(name: str) -> str:
    return (_TEMPLATES / f"{name}.py").read_text(encoding="utf-8")


def _blocks(text: str, name: str) -> tuple[str, str, str]:
    """(before, inside, after) the lines ``# >>> NAME…`` and ``# <<< NAME`` of a template,
    each present exactly once and in that order (else the template is broken: raised)."""
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.startswith(f"# >>> {name}")]
    ends = [i for i, line in enumerate(lines) if line.rstrip("\n") == f"# <<< {name}"]
    if len(starts) != 1 or len(ends) != 1 or starts[0] > ends[0]:  # pragma: no cover
        raise AssertionError(f"a template has no single {name} block")
    (s,), (e,) = starts, ends
    return "".join(lines[:s]), "".join(lines[s + 1:e]), "".join(lines[e + 1:])


def _assigned(text: str) -> list[str]:
    """The names a block of module-level assignments defines, in order."""
    names = []
    for node in ast.parse(text).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names += [t.id for t in targets]
    return names


#: The template header's words that the program's figures replace.
_SPENDS = "the plan's total every run"


def _program(template: str, constants: str, spent: Spent) -> str:
    """The template ``release/templates/<template>.py`` with its PLAN block (placeholders)
    replaced by ``constants`` (the plan's literals: the same names, checked), its SHARED
    block by the shared code of ``common.py``, and its header's "the plan's total every
    run" by ``spent``'s figures (numbers only: no text of the plan enters the header)."""
    head, placeholders, rest = _blocks(_template(template), "PLAN")
    if head.count(_SPENDS) != 1:  # pragma: no cover
        raise AssertionError(f"{template}: the header does not say what a run spends")
    head = head.replace(_SPENDS, f"{_spends(spent)} every run")
    if _assigned(placeholders) != _assigned(constants):  # pragma: no cover
        raise AssertionError(f"{template}: the plan's names differ from the template's")
    middle, _, body = _blocks(rest, "SHARED")
    shared = _blocks(_template("common"), "SHARED")[1]
    return head + constants + middle + cells_code() + shared + body


#: The module whose code every program embeds: the one reading of a CSV cell.
_CELLS = Path(__file__).resolve().parents[1] / "engine" / "cells.py"


@functools.cache
def cells_code() -> str:
    """``engine/cells.py`` as a program holds it: its source verbatim from its first
    statement after its imports (the program imports the same modules at its top), so a
    program reads each cell by the very code the release reads it with. Only standard
    library, numpy and pandas imports are allowed there (else the program would not be
    self-contained: raised)."""
    source = _CELLS.read_text(encoding="utf-8")
    tree = ast.parse(source)
    body = tree.body[1:] if ast.get_docstring(tree) is not None else tree.body
    imports = 0
    while imports < len(body) and isinstance(body[imports], ast.Import | ast.ImportFrom):
        imports += 1
    allowed = {"__future__", "csv", "decimal", "gzip", "io", "itertools", "math", "re", "numpy",
               "pandas"}
    modules = {alias.name.split(".")[0] if isinstance(node, ast.Import) else
               (node.module or "").split(".")[0]
               for node in body[:imports] for alias in node.names}
    later = [n for n in ast.walk(ast.Module(body[imports:], [])) if isinstance(
        n, ast.Import | ast.ImportFrom)]
    if not modules <= allowed or later:  # pragma: no cover - a change of engine/cells.py
        raise AssertionError("engine/cells.py imports what a program cannot: "
                             f"{sorted(modules - allowed)}")
    first = body[imports].lineno - 1
    while first > 0 and source.splitlines()[first - 1].startswith("#"):
        first -= 1     # the comment just above the first statement belongs to it
    code = "".join(source.splitlines(keepends=True)[first:])
    return ("# " + "-" * 90 + "\n# The one reading of a CSV cell: engine/cells.py of Epsilon "
            "Lab, verbatim\n# (its imports are at the top of this program)\n\n" + code
            + "\n\n")
