"""Programs to take away: a plan as a self-contained OpenDP program (one machine) and as a
PipelineDP program for Spark (data on a cluster), each generated as Python source text.

Both are pure functions of the plan. Every value taken from the plan (column names, labels,
categories, bounds, scales) enters the program only inside Python literals written by
``repr`` and read back by ``ast.literal_eval`` before the text is returned, so no plan can put
code into a program. The fixed part of each program (how it reads data, bounds contributions,
builds and checks measurements) is the same for every plan.
"""

from __future__ import annotations

import ast
import hashlib
import math
import pprint
from typing import Any

from dpcore.mechanisms import AdditiveMechanism, spec_of
from plan import model
from plan.build import Built, NoisyMax, PartitionThreshold
from plan.model import Plan
from release.measurements import OPENDP_VERSION, Certified
from release.run import prepare

__all__ = ["ProgramUnsupported", "plan_sha256", "opendp_program", "spark_program",
           "PIPELINE_DP_VERSION"]

#: The PipelineDP release the Spark program is written for.
PIPELINE_DP_VERSION = "0.3.1"


class ProgramUnsupported(ValueError):
    """The plan holds something the program cannot release as planned (named in the
    message); nothing is generated."""


def plan_sha256(plan: Plan) -> str:
    """``sha256:`` and the hex digest of the plan's JSON text (UTF-8): the plan a program
    releases, checked by the program at start."""
    return "sha256:" + hashlib.sha256(plan.to_json().encode("utf-8")).hexdigest()


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
    from plan.kinds import kind_of

    kind = kind_of(pq.query)
    return {"id": pq.id, "label": pq.label, "kind": kind.name,
            **kind.program_record(pq.query), "columns": list(kind.columns(pq.query))}


def _unsupported_partition(built: Built, program: str) -> None:
    if built.finds_groups:
        raise ProgramUnsupported(
            f"query {built.query.id!r}: the {program} program does not yet export a group-by "
            "whose groups are found by partition selection; declare the keys (public groups) "
            "or release this plan from the app or the command line")


def _opendp_part(c: Certified, quantile: float | None) -> dict[str, Any]:
    """One part as the OpenDP program builds it, with the plan's figure its map must meet."""
    mech = c.part.mechanism
    out: dict[str, Any] = {"part": c.part.name, "scale": c.opendp_scale,
                           "integer": c.integer}
    if isinstance(mech, AdditiveMechanism):
        spec = spec_of(mech)
        recipe = spec.release            # how OpenDP draws it (MechanismSpec.release)
        pure = recipe.certifies == "epsilon"
        out |= {"noise": recipe.opendp.removeprefix("make_"),
                "norm": spec.sensitivity_norm, "d_in": c.d_in,
                "measure": recipe.certifies,
                "plan_figure": mech.privacy.epsilon if pure else mech.zcdp.rho,
                "clamp": [mech.lower, mech.upper] if recipe.clamp else None}
    elif isinstance(mech, NoisyMax):
        out |= {"noise": "noisy_max", "selection_noise": mech.noise, "k": mech.k,
                "negate": mech.negate, "monotonic": mech.monotonic, "d_in": c.d_in,
                "quantile": quantile}
        if mech.noise == "exponential" and mech.measure == "pure":
            out |= {"measure": "epsilon", "plan_figure": mech.privacy.epsilon}
        elif mech.noise == "exponential":
            out |= {"measure": "rho_of_epsilon", "plan_figure": mech.privacy.rho}
        else:
            out |= {"measure": "rho", "plan_figure": mech.privacy.rho}
        if quantile is not None:  # the program chains OpenDP's scorer: d_in is rows per person
            out["d_in"] = None
    else:  # pragma: no cover - refused before
        raise ProgramUnsupported(f"part {c.part.name!r}: no OpenDP program for {mech!r}")
    out["certified"] = c.certified.to_dict()
    return out


def opendp_program(plan: Plan) -> str:
    """A self-contained OpenDP program that releases ``plan`` once on one machine.

    ``python program.py --data PATH [--out FILE]`` reads a CSV, CSV.gz or Parquet file,
    applies the plan's contribution bounds and clamping, builds each query's OpenDP 0.16
    measurement at the plan's noise scale, checks every privacy map against the plan's figure
    before drawing anything, and prints (and writes) the released values as JSON with a
    top-level ``"privacy_spent"``: the plan's total under its accounting
    (:func:`release.accounting.privacy_spent` of what OpenDP certifies). It imports only
    opendp, numpy and pandas.

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
        "DATASET": plan.dataset.name,
        "OPENDP_VERSION": OPENDP_VERSION,
        "PERSON_COLUMN": unit.person_column,
        "MAX_ROWS": unit.max_rows,
        "MAX_GROUPS": unit.max_groups,
        "ACCOUNTING": {"method": prepared.spent.method, "delta": plan.accounting.delta},
        "PRIVACY_SPENT": {"epsilon": prepared.spent.epsilon, "delta": prepared.spent.delta},
        "QUERIES": queries,
    })
    return _OPENDP_HEAD + "\n" + constants + "\n" + _COMMON + _OPENDP_BODY


# --------------------------------------------------------------------------------------------
# Spark (PipelineDP)


def _spark_part(query_id: str, built: Built, index: int) -> dict[str, Any]:
    part = built.parts[index]
    mech = part.mechanism
    if isinstance(mech, NoisyMax | PartitionThreshold):  # pragma: no cover - refused before
        raise ProgramUnsupported(f"query {query_id!r}: no PipelineDP aggregation for it")
    spec = spec_of(mech)
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
    local master) reads CSV or Parquet into Spark and runs each noised part of each query as
    its own PipelineDP aggregation (COUNT or SUM over the declared, public partitions, with
    the privacy unit's contribution bounds), each with its own ``NaiveBudgetAccountant``
    holding exactly that part's planned (ε, δ): PipelineDP's budget split then never moves
    budget between queries, and its Laplace scale is the plan's. A mean is a SUM and a COUNT
    (the plan's split), then divided. The program prints the released values, what each
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
        "DATASET": plan.dataset.name,
        "PIPELINE_DP_VERSION": PIPELINE_DP_VERSION,
        "PERSON_COLUMN": unit.person_column,
        "MAX_ROWS": unit.max_rows,
        "MAX_GROUPS": unit.max_groups,
        "PLANNED_SPENT": {"epsilon": prepared.planned.epsilon,
                          "delta": prepared.planned.delta},
        "QUERIES": queries,
    })
    return _SPARK_HEAD + "\n" + constants + "\n" + _COMMON + _SPARK_BODY


# --------------------------------------------------------------------------------------------
# the fixed parts of the programs

_OPENDP_HEAD = '''\
#!/usr/bin/env python3
"""A differentially private release of one Epsilon Lab plan, with OpenDP (one machine).

Generated by Epsilon Lab from the plan below (PLAN_JSON; PLAN_SHA256 is its hash). It needs
Python 3.10+, opendp 0.16, numpy and pandas (pyarrow for Parquet):

    python program.py --data PATH [--out release.json]

Each query is computed on the data with the plan's contribution bounds and clamping, then
noised by the OpenDP measurement with the plan's noise scale. Every measurement's privacy
map is read and checked against the plan's figure before anything is drawn; if one is above
it, nothing is drawn. OpenDP's samplers are exact and draw from the operating system's
entropy: they are never seeded. The output holds released values only, and
"privacy_spent", the plan's total under its accounting.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys

import numpy as np
import opendp.prelude as dp
import pandas as pd

dp.enable_features("contrib")
'''

_SPARK_HEAD = '''\
#!/usr/bin/env python3
"""A differentially private release of one Epsilon Lab plan, with PipelineDP on Spark.

Generated by Epsilon Lab from the plan below (PLAN_JSON; PLAN_SHA256 is its hash). It needs
pyspark and pipeline-dp 0.3.1 (which draws its noise with Google's differential privacy
library through python-dp):

    spark-submit program.py --data PATH [--out release.json]
    python program.py --data PATH [--master local[2]] [--out release.json]

Each noised part of each query is one PipelineDP aggregation over the plan's declared
(public) partitions, with the privacy unit's contribution bounds, and its own budget
accountant holding exactly the part's planned (epsilon, delta), so PipelineDP's noise is
calibrated to the plan's budget for that part and nothing else. The output holds released
values only, what each accountant spent, the noise standard deviation PipelineDP applied,
and "privacy_spent", the basic composition of the accountants' budgets.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys

import numpy as np
import pandas as pd
'''

_COMMON = '''
# ------------------------------------------------------------------------------------------
# reading the data and bounding each person's contribution (the same in every program)


class Refused(Exception):
    """The release cannot go ahead as planned; nothing was drawn."""


def check_plan():
    digest = "sha256:" + hashlib.sha256(PLAN_JSON.encode("utf-8")).hexdigest()
    if digest != PLAN_SHA256:
        raise Refused("PLAN_JSON does not match PLAN_SHA256: the program was edited")


def needed_columns():
    names = [] if PERSON_COLUMN is None else [PERSON_COLUMN]
    for query in QUERIES:
        for name in query["columns"]:
            if name not in names:
                names.append(name)
    return names


def read_frame(path):
    """The columns the plan needs, from a CSV, CSV.gz or Parquet file (or Parquet folder)."""
    if os.path.isdir(path) or path.lower().endswith((".parquet", ".pq")):
        frame = pd.read_parquet(path)
    else:
        frame = pd.read_csv(path)
    return select_columns(frame)


def select_columns(frame):
    missing = [name for name in needed_columns() if name not in frame.columns]
    if missing:
        raise Refused(f"the data has no column(s) {missing!r}, which the plan needs")
    return frame[needed_columns()]


def numbers(values, lower, upper):
    """A column as numbers clamped to the plan's bounds; a missing value adds nothing."""
    x = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    return np.where(np.isnan(x), 0.0, np.clip(x, lower, upper))


def cells(values, categories):
    """The index of each value among the declared categories (-1: not declared)."""
    return pd.Index(categories).get_indexer(values).astype(np.int64)


def bins(values, edges, outside):
    """The cell of each value among the bins between ``edges`` ([a, b), the last closed):
    below, the bins, above when outside is "separate"; the end bins when "clamp"; -1 for a
    missing value."""
    x = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    e = np.asarray(edges, dtype=float)
    k = len(e) - 1
    i = np.searchsorted(e, x, side="right") - 1
    i = np.where(x == e[-1], k - 1, i)
    if outside == "clamp":
        i = np.clip(i, 0, k - 1)
    else:
        i = i + 1
    return np.where(np.isnan(x), -1, i).astype(np.int64)


def bin_labels(edges, outside):
    text = [f"{v:g}" for v in edges]
    labels = [f"[{a}, {b})" for a, b in zip(text[:-2], text[1:-1], strict=True)]
    labels.append(f"[{text[-2]}, {text[-1]}]")
    if outside == "separate":
        return [f"< {text[0]}", *labels, f"> {text[-1]}"]
    return labels


def cell_codes(frame, query):
    """The cell of each row for a grouped query, and the cells' labels."""
    if query["kind"] == "crosstab":
        rows = cells(frame[query["row"]], query["row_categories"])
        columns = cells(frame[query["column"]], query["column_categories"])
        width = len(query["column_categories"])
        codes = np.where((rows >= 0) & (columns >= 0), rows * width + columns, -1)
        labels = [[str(r), str(c)] for r in query["row_categories"]
                  for c in query["column_categories"]]
        return codes, labels
    if query["kind"] == "group_by":
        return cells(frame[query["key"]], query["keys"]), [[str(k)] for k in query["keys"]]
    if query["kind"] == "selection":
        return cells(frame[query["column"]], query["candidates"]), None
    if query.get("edges") is not None:
        labels = bin_labels(query["edges"], query["outside"])
        return bins(frame[query["column"]], query["edges"], query["outside"]), [
            [label] for label in labels]
    codes = cells(frame[query["column"]], query["categories"])
    return codes, [[str(c)] for c in query["categories"]]


def bounded(frame, codes=None, rng=None):
    """The rows kept under the privacy unit: each person keeps at most MAX_ROWS rows (in each
    of at most MAX_GROUPS cells of a grouped query), chosen uniformly at random: the cells
    by an independent random priority per (person, cell), whatever their numbers of rows,
    and the rows of a kept cell by a random order. Each person's choice depends on that
    person's rows only. With one row per person, every row. ``codes``: each row's cell (-1:
    in none, dropped)."""
    if codes is not None:
        frame = frame.assign(__cell__=codes)
        frame = frame[frame["__cell__"].to_numpy() >= 0]
    if PERSON_COLUMN is None:
        return frame
    rng = np.random.default_rng() if rng is None else rng
    frame = frame.iloc[rng.permutation(len(frame))]
    person = frame[PERSON_COLUMN]
    if codes is None or MAX_GROUPS is None:
        rank = frame.groupby(person, sort=False, dropna=False).cumcount().to_numpy()
        return frame[rank < MAX_ROWS]
    keys = [person, frame["__cell__"]]
    frame = frame[frame.groupby(keys, sort=False, dropna=False).cumcount().to_numpy()
                  < MAX_ROWS]
    pairs = frame[[PERSON_COLUMN, "__cell__"]].drop_duplicates()
    # not the cells met first in the shuffled rows (a cell with more rows comes first more
    # often): the MAX_GROUPS cells of highest independent uniform priority
    pairs = pairs.iloc[np.argsort(rng.random(len(pairs)), kind="stable")]
    rank = pairs.groupby(PERSON_COLUMN, sort=False, dropna=False).cumcount().to_numpy()
    pairs = pairs[rank < MAX_GROUPS]
    return frame.merge(pairs, on=[PERSON_COLUMN, "__cell__"], how="inner")


def mean_of(noisy_sum, noisy_count, lower, upper):
    """A mean from its noisy sum and count: the count floored at 1, the ratio clamped."""
    return float(min(max(float(noisy_sum) / max(float(noisy_count), 1.0), lower), upper))


def plain(value):
    return value.item() if hasattr(value, "item") else value
'''

_OPENDP_BODY = '''

# ------------------------------------------------------------------------------------------
# OpenDP measurements, each checked against the plan before anything is drawn


def measurement(part, query):
    """The OpenDP measurement of one part, at the plan's scale."""
    if part["noise"] in ("laplace", "gaussian"):
        kind = "i64" if part["integer"] else "float"
        atom = dp.atom_domain(T="i64") if part["integer"] else dp.atom_domain(
            T="float", nan=False)
        scalar = query["kind"] in ("count", "sum", "mean")
        if scalar:
            metric_type = "i64" if part["integer"] and part["norm"] == "L1" else "float"
            domain, metric = atom, dp.absolute_distance(T=metric_type)
        elif part["norm"] == "L1":
            domain, metric = dp.vector_domain(atom), dp.l1_distance(T=kind)
        else:
            domain, metric = dp.vector_domain(atom), dp.l2_distance(T="float")
        make = dp.m.make_laplace if part["noise"] == "laplace" else dp.m.make_gaussian
        return make(domain, metric, scale=part["scale"])
    measure = (dp.max_divergence() if part["selection_noise"] == "exponential"
               else dp.zero_concentrated_divergence())
    if part["quantile"] is None:
        domain = dp.vector_domain(dp.atom_domain(T="i64"))
        metric = dp.linf_distance(T="i64", monotonic=part["monotonic"])
    else:
        domain = dp.vector_domain(dp.atom_domain(T="u64"), size=len(query["candidates"]))
        metric = dp.linf_distance(T="u64")
    if part["k"] == 1:
        chosen = dp.m.make_noisy_max(domain, metric, measure, scale=part["scale"],
                                     negate=part["negate"])
    else:
        chosen = dp.m.make_noisy_top_k(domain, metric, measure, k=part["k"],
                                       scale=part["scale"], negate=part["negate"])
    if part["quantile"] is None:
        return chosen
    scores = dp.t.make_quantile_score_candidates(
        dp.vector_domain(dp.atom_domain(T="float", nan=False)), dp.symmetric_distance(),
        [float(c) for c in query["candidates"]], alpha=part["quantile"])
    return scores >> chosen


def clamped(m, lower, upper):
    """Clamped Laplace: the measurement, then its answer clamped (post-processing)."""
    def draw(value):
        return min(max(m(value), lower), upper)
    return draw


def checked_measurements():
    """Every part's measurement, its privacy map read at the plan's sensitivity and checked
    against the plan's figure; raises Refused (nothing drawn) if one is above it."""
    out, report = [], []
    for query in QUERIES:
        built = []
        for part in query["parts"]:
            m = measurement(part, query)
            d_in = MAX_ROWS if part["d_in"] is None else part["d_in"]
            value = m.map(d_in)
            figure = value * value / 2 if part["measure"] == "rho_of_epsilon" else value
            if not figure <= part["plan_figure"]:
                raise Refused(f"query {query['id']!r} ({part['part']}): OpenDP's privacy map "
                              f"gives {figure!r}, above the plan's {part['plan_figure']!r}; "
                              "nothing was drawn")
            measure = "epsilon" if part["measure"] == "rho_of_epsilon" else part["measure"]
            report.append({"query": query["id"], "part": part["part"],
                           "opendp_map": {measure: value},
                           "plan_figure": part["plan_figure"], "scale": part["scale"],
                           "certified": part["certified"]})
            built.append(m if part.get("clamp") is None else clamped(m, *part["clamp"]))
        out.append(built)
    return out, report


# ------------------------------------------------------------------------------------------
# the release


def as_input(part, values):
    """True values in the measurement's input type (whole numbers for integer noise)."""
    def one(v):
        v = plain(v)
        if not part["integer"]:
            return float(v)
        if isinstance(v, float) and not (v.is_integer() and abs(v) < 2**53):
            raise Refused("a sum is not a whole number, which whole-number noise needs")
        return int(v)
    return [one(v) for v in values] if isinstance(values, list) else one(values)


def release_query(query, measurements, frame, rng=None):
    """One query's released rows: [[group labels], value]."""
    kind = query["kind"]
    parts = query["parts"]
    if kind == "count":
        n = len(bounded(frame, rng=rng))
        return [[[], plain(measurements[0](as_input(parts[0], n)))]]
    if kind in ("sum", "mean"):
        rows = bounded(frame, rng=rng)
        total = float(np.sum(numbers(rows[query["column"]], query["lower"], query["upper"])))
        if not math.isfinite(total):
            raise Refused(f"query {query['id']!r}: the clamped sum overflows")
        noisy_sum = measurements[0](as_input(parts[0], total))
        if kind == "sum":
            return [[[], plain(noisy_sum)]]
        noisy_count = measurements[1](as_input(parts[1], len(rows)))
        return [[[], mean_of(noisy_sum, noisy_count, query["lower"], query["upper"])]]
    if kind == "quantiles":
        rows = bounded(frame, rng=rng)
        x = pd.to_numeric(rows[query["column"]], errors="coerce").to_numpy(dtype=float)
        x = x[~np.isnan(x)].tolist()
        return [[[f"q={level:g}"], query["candidates"][int(m(x))]]
                for level, m in zip(query["levels"], measurements, strict=True)]
    codes, labels = cell_codes(frame, query)
    rows = bounded(frame, codes, rng=rng)
    size = len(labels) if labels is not None else len(query["candidates"])
    cell = rows["__cell__"].to_numpy()
    counts = np.bincount(cell, minlength=size).tolist()
    if kind == "selection":
        chosen = measurements[0](as_input(parts[0], counts))
        chosen = chosen if isinstance(chosen, list) else [chosen]
        return [[[f"rank {i + 1}"], query["candidates"][int(c)]] for i, c in enumerate(chosen)]
    if kind in ("histogram", "crosstab") or query["statistic"] == "count":
        noisy = measurements[0](as_input(parts[0], counts))
        return [[g, plain(v)] for g, v in zip(labels, noisy, strict=True)]
    x = numbers(rows[query["column"]], query["lower"], query["upper"])
    sums = np.bincount(cell, weights=x, minlength=size).tolist()
    noisy_sums = measurements[0](as_input(parts[0], sums))
    if query["statistic"] == "sum":
        return [[g, plain(v)] for g, v in zip(labels, noisy_sums, strict=True)]
    noisy_counts = measurements[1](as_input(parts[1], counts))
    return [[g, mean_of(s, c, query["lower"], query["upper"])]
            for g, s, c in zip(labels, noisy_sums, noisy_counts, strict=True)]


def release(frame, measurements=None, rng=None):
    """The plan released once on ``frame``: a JSON-able record of released values only."""
    check_plan()
    report = None
    if measurements is None:
        measurements, report = checked_measurements()
    frame = select_columns(frame)
    queries = [{"id": q["id"], "label": q["label"], "statistic": q["kind"],
                "rows": release_query(q, m, frame, rng)}
               for q, m in zip(QUERIES, measurements, strict=True)]
    out = {"format": "epsilon-lab-release", "program": "opendp", "plan_sha256": PLAN_SHA256,
           "dataset": DATASET, "opendp": OPENDP_VERSION, "accounting": ACCOUNTING,
           "privacy_spent": PRIVACY_SPENT, "queries": queries}
    if report is not None:
        out["parts"] = report
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="CSV, CSV.gz or Parquet file")
    parser.add_argument("--out", help="also write the release JSON to this file")
    args = parser.parse_args(argv)
    try:
        check_plan()
        measurements, report = checked_measurements()  # before the data is read
        out = release(read_frame(args.data), measurements)
        out["parts"] = report
    except (Refused, OSError, ValueError) as exc:
        print(f"refused: {exc}", file=sys.stderr)
        return 1
    text = json.dumps(out, indent=2, ensure_ascii=False, allow_nan=False)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(text + "\\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''

_SPARK_BODY = '''

# ------------------------------------------------------------------------------------------
# PipelineDP aggregations on Spark, each with its own accountant


import pipeline_dp  # noqa: E402
from pyspark import SparkConf  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402


class RecordingAccountant(pipeline_dp.NaiveBudgetAccountant):
    """PipelineDP's naive accountant, keeping the mechanism specs it hands out (to report
    the (epsilon, delta) each mechanism was given)."""

    def __init__(self, total_epsilon, total_delta):
        super().__init__(total_epsilon=total_epsilon, total_delta=total_delta)
        self.specs = []

    def request_budget(self, *args, **kwargs):
        spec = super().request_budget(*args, **kwargs)
        self.specs.append(spec)
        return spec


def bounds_params(grouped):
    """PipelineDP's contribution bounds for the plan's privacy unit."""
    if PERSON_COLUMN is None:
        return {"max_partitions_contributed": 1, "max_contributions_per_partition": 1}
    if grouped and MAX_GROUPS is not None:
        return {"max_partitions_contributed": MAX_GROUPS,
                "max_contributions_per_partition": MAX_ROWS}
    return {"max_contributions": MAX_ROWS}


def spark_rows(frame_rdd, query):
    """(privacy id, cell, value) for each row of the query (cell -1: in no declared cell)."""
    kind = query["kind"]

    def convert(index_and_rows):
        index, rows = index_and_rows
        frame = pd.DataFrame(list(rows), columns=needed_columns())
        if kind in ("count", "sum", "mean"):
            codes = np.zeros(len(frame), dtype=np.int64)
        else:
            codes = cell_codes(frame, query)[0]
        if query.get("lower") is not None:
            values = numbers(frame[query["column"]], query["lower"], query["upper"])
        else:
            values = np.zeros(len(frame))
        ids = (frame[PERSON_COLUMN].tolist() if PERSON_COLUMN is not None else
               [f"{index}:{i}" for i in range(len(frame))])
        triples = zip(ids, codes, values, strict=True)
        return [(pid, int(c), float(v)) for pid, c, v in triples if c >= 0]

    return frame_rdd.glom().zipWithIndex().map(lambda t: (t[1], t[0])).flatMap(convert)


def cells_of(query):
    if query["kind"] in ("count", "sum", "mean"):
        return 1, [[]]
    frame = pd.DataFrame({name: [] for name in needed_columns()})
    labels = cell_codes(frame, query)[1]
    return len(labels), labels


def aggregate(sc, rows, part, size, grouped):
    """One part as one PipelineDP aggregation with its own budget: {cell: value}, and what
    the accountant spent and the noise standard deviation PipelineDP applied."""
    accountant = RecordingAccountant(part["epsilon"], part["delta"])
    engine = pipeline_dp.DPEngine(accountant, pipeline_dp.SparkRDDBackend(sc))
    metric = (pipeline_dp.Metrics.COUNT if part["sensitivity_of"] == "count"
              else pipeline_dp.Metrics.SUM)
    params = dict(metrics=[metric], output_noise_stddev=True,
                  noise_kind=(pipeline_dp.NoiseKind.LAPLACE if part["noise"] == "laplace"
                              else pipeline_dp.NoiseKind.GAUSSIAN),
                  **bounds_params(grouped))
    if metric == pipeline_dp.Metrics.SUM:
        params |= {"min_value": part["lower"], "max_value": part["upper"]}
    extractors = pipeline_dp.DataExtractors(privacy_id_extractor=lambda r: r[0],
                                            partition_extractor=lambda r: r[1],
                                            value_extractor=lambda r: r[2])
    result = engine.aggregate(rows, pipeline_dp.AggregateParams(**params), extractors,
                              public_partitions=list(range(size)))
    accountant.compute_budgets()
    name = "count" if metric == pipeline_dp.Metrics.COUNT else "sum"
    collected = dict(result.collect())
    values = {cell: getattr(m, name) for cell, m in collected.items()}
    stds = {getattr(m, f"{name}_noise_stddev") for m in collected.values()}
    spent = [{"epsilon": s.eps, "delta": s.delta} for s in accountant.specs]
    return values, {"query_part": part["part"], "spent": spent, "noise_std": sorted(stds),
                    "noise": part["noise"], "planned_kind": part["planned_kind"],
                    "plan_scale": part["plan_scale"]}


def release_query(sc, frame_rdd, query):
    rows = spark_rows(frame_rdd, query).cache()
    size, labels = cells_of(query)
    grouped = query["kind"] not in ("count", "sum", "mean")
    statistic = query.get("statistic", query["kind"])
    results, report = [], []
    for part in query["parts"]:
        counted = part["part"] == "count" or statistic in ("count", "histogram", "crosstab")
        part = dict(part, sensitivity_of="count" if counted else "sum",
                    lower=query.get("lower"), upper=query.get("upper"))
        values, spent = aggregate(sc, rows, part, size, grouped)
        results.append(values)
        report.append(dict(spent, query=query["id"]))
    rows.unpersist()
    if statistic == "mean":
        out = [[labels[i], mean_of(results[0][i], results[1][i], query["lower"],
                                   query["upper"])] for i in range(size)]
    else:
        out = [[labels[i], float(results[0][i])] for i in range(size)]
    return out, report


def spark_session(master):
    builder = SparkSession.builder.appName("epsilon-lab-release")
    if not master and not SparkConf().contains("spark.master"):
        master = "local[*]"
    if master:
        builder = builder.master(master)
    if (master or "").startswith("local"):
        # local workers run this interpreter (with pandas and pipeline_dp), not the system's
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    return builder.getOrCreate()


def read_spark(spark, path):
    if os.path.isdir(path) or path.lower().endswith((".parquet", ".pq")):
        data = spark.read.parquet(path)
    else:
        # RFC 4180 quoting (a quote inside a quoted field is doubled), as pandas writes it
        data = spark.read.csv(path, header=True, inferSchema=True, escape='"')
    missing = [name for name in needed_columns() if name not in data.columns]
    if missing:
        raise Refused(f"the data has no column(s) {missing!r}, which the plan needs")
    # columns picked by position under plain names: no column name is parsed by Spark
    plain_names = [f"c{i}" for i in range(len(data.columns))]
    picked = [plain_names[data.columns.index(name)] for name in needed_columns()]
    return data.toDF(*plain_names).select(*picked).rdd.map(tuple)


def release(spark, path):
    check_plan()
    frame_rdd = read_spark(spark, path).cache()
    queries, parts = [], []
    for query in QUERIES:
        rows, report = release_query(spark.sparkContext, frame_rdd, query)
        queries.append({"id": query["id"], "label": query["label"],
                        "statistic": query["kind"], "rows": rows})
        parts.extend(report)
    spent = [s for p in parts for s in p["spent"]]
    total = {"epsilon": math.fsum(s["epsilon"] for s in spent),
             "delta": math.fsum(s["delta"] for s in spent)}
    return {"format": "epsilon-lab-release", "program": "pipeline_dp-spark",
            "plan_sha256": PLAN_SHA256, "dataset": DATASET,
            "accounting": "basic (one PipelineDP NaiveBudgetAccountant per part, added up)",
            "privacy_spent": total, "planned_spent": PLANNED_SPENT, "parts": parts,
            "queries": queries}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="CSV, CSV.gz or Parquet path")
    parser.add_argument("--out", help="also write the release JSON to this file")
    parser.add_argument("--master", help="Spark master (default: spark-submit's, or local[*])")
    args = parser.parse_args(argv)
    try:
        check_plan()
        spark = spark_session(args.master)
        try:
            out = release(spark, args.data)
        finally:
            spark.stop()
    except (Refused, OSError, ValueError) as exc:
        print(f"refused: {exc}", file=sys.stderr)
        return 1
    text = json.dumps(out, indent=2, ensure_ascii=False, allow_nan=False)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(text + "\\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''
