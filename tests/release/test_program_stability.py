"""Stability of the exported programs: the OpenDP program and the PipelineDP/Spark program,
run on neighbouring CSV files, never move what they noise by more than the plan claims.

The check the release path has (tests/release/test_stability.py), on the programs: each
program is generated from a plan holding every kind it exports, its own code reads each
neighbouring file (every person removed; adversarial newcomers: a word in a column of
codes, a non-integer in a whole-number sum, a person id spelled five ways, a byte that is not
UTF-8, a short record, a record with extra fields, a non-number, a missing person id, a huge
value) and computes what it hands to OpenDP, recorded instead of noised (the same per-run
secret on every neighbour, so each person's kept rows are coupled). The largest change of
each part is checked against the sensitivity the plan certified for it (OpenDP's own map for
a quantile's scores). The regressions are the issue's: a word among the codes turned a
histogram over the declared codes from its counts to zeros (``pd.read_csv`` typed the column
from all its cells), and a cost of 12.5 made a whole-number sum refuse.

The Spark program's reading runs on one local Spark session for every neighbour: the
(person, cell, value) records it hands PipelineDP are exactly the OpenDP program's, and a
neighbour changes the records of one person only.
"""

from __future__ import annotations

import collections
import json
import math
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import opendp.prelude as dp
import pytest

from engine.sources import csv_column_names
from plan.kinds.variance import Variance
from plan.model import (
    Accounting,
    Bounds,
    Count,
    Crosstab,
    Dataset,
    Grid,
    GroupBy,
    Histogram,
    Mean,
    Noise,
    Plan,
    PlanQuery,
    PrivacyUnit,
    Quantiles,
    Selection,
    SelectionNoise,
    Sum,
)
from release.programs import opendp_program, spark_program
from tests.release_fixtures import cats, load_program

dp.enable_features("contrib")

HEADER = b"pid,code,key,cost\n"
CODES = (1, 2, 3)
KEYS = ("k1", "k2", "k3")
LOWER, UPPER = 0, 20
TOLERANCE = 1e-9


def program_plan(unit: PrivacyUnit) -> Plan:
    """A query of every kind the OpenDP program exports, whole-number sums included."""
    laplace = Noise("laplace", "pure", epsilon=1.0)
    geometric = Noise("geometric", "pure", epsilon=1.0)
    bounds = Bounds(LOWER, UPPER, "public")
    return Plan(Dataset("stability"), (
        PlanQuery("count", "Rows", Count(), laplace),
        PlanQuery("sum-whole", "Cost", Sum("cost", bounds), geometric),
        PlanQuery("sum", "Cost", Sum("cost", bounds), laplace),
        PlanQuery("mean-whole", "Mean cost", Mean("cost", bounds), geometric),
        PlanQuery("codes", "Codes", Histogram("code", cats(*CODES)), geometric),
        PlanQuery("keys", "Keys", Histogram("key", cats(*KEYS)), laplace),
        PlanQuery("bins", "Cost bands", Histogram("cost", edges=Grid((0.0, 5.0, 10.0, 20.0),
                                                                     "public")), laplace),
        PlanQuery("bins-clamped", "Cost bands", Histogram(
            "cost", edges=Grid((0.0, 10.0, 20.0), "public"), outside="clamp"), laplace),
        PlanQuery("crosstab", "Codes by key", Crosstab("code", "key", cats(*CODES),
                                                       cats(*KEYS)), laplace),
        PlanQuery("count-by", "Count by key", GroupBy("key", keys=cats(*KEYS)), laplace),
        PlanQuery("sum-by", "Cost by code", GroupBy("code", "sum", "cost", bounds,
                                                    keys=cats(*CODES)), geometric),
        PlanQuery("mean-by", "Mean cost by key", GroupBy("key", "mean", "cost", bounds,
                                                         keys=cats(*KEYS)), laplace),
        PlanQuery("quantiles", "Cost quantiles", Quantiles(
            "cost", (0.25, 0.5, 0.9), Grid(tuple(float(v) for v in range(-1, 22)), "public")),
                  SelectionNoise("exponential", "pure", epsilon=1.0)),
        PlanQuery("top-keys", "Top keys", Selection("key", cats(*KEYS), k=2),
                  SelectionNoise("exponential", "pure", epsilon=1.0)),
        PlanQuery("variance", "Cost variance", Variance("cost", bounds), laplace),
    ), unit, Accounting("basic"))


def spark_plan(unit: PrivacyUnit) -> Plan:
    """The kinds the Spark program exports (no quantiles, selections or whole-number noise)."""
    exported = {"count", "sum", "codes", "keys", "bins", "bins-clamped", "crosstab", "count-by",
                "mean-by", "variance"}
    plan = program_plan(unit)
    return Plan(plan.dataset, tuple(q for q in plan.queries if q.id in exported), unit,
                plan.accounting)


# --------------------------------------------------------------------------------------------
# the data: CSV bytes, each person's lines known, and the neighbours


def people(seed: int, persons: int = 24) -> list[tuple[int, list[bytes]]]:
    """Each person's CSV lines: 1 to 5 rows in 1 to 3 codes and keys, costs from -3 to 25
    (some with a fraction), some people's id written several ways (``5``, ``05``, ``5.0``,
    `` 5``, ``5e0``: one person)."""
    rng = np.random.default_rng(seed)
    out = []
    for pid in range(persons):
        spellings = [str(pid)]
        if pid % 4 == 1:
            spellings += [f"0{pid}", f"{pid}.0", f" {pid}", f"{pid}e0"]
        codes = rng.choice(CODES, size=int(rng.integers(1, 4)), replace=False)
        keys = rng.choice(KEYS, size=int(rng.integers(1, 4)), replace=False)
        lines = []
        for _ in range(int(rng.integers(1, 6))):
            cost = int(rng.integers(-3, 26))
            cost_text = f"{cost + 0.5}" if rng.random() < 0.2 else str(cost)
            lines.append(f"{rng.choice(spellings)},{rng.choice(codes)},{rng.choice(keys)},"
                         f"{cost_text}\n".encode())
        out.append((pid, lines))
    return out


#: Newcomers, each a person the data did not hold (by what it does to a reader).
NEWCOMERS: dict[str, bytes] = {
    "a word in the column of codes": b"900,unknown,k1,5\n900,2,k2,6\n",
    "a non-integer cost in a whole-number sum": b"901,1,k2,12.5\n",
    "a person id spelled five ways": (b"902,1,k1,3\n 0902,2,k1,4\n902.0,3,k2,5\n"
                                      b"9.02e2,1,k3,6\n0902.00,2,k2,7\n"),
    "codes and keys spelled unusually": b"903, 1 ,k1 ,4\n903,2.0,k2,3\n903,03,k3,2\n",
    "a byte that is not UTF-8": b"904,\xff1,k\xfe1,3\n904,1,k1,2\n",
    "a short record": b"905,2\n",
    "a record with extra fields": b"906,3,k3,4,extra,\"more, quoted\"\n",
    "non-numbers in the numbers": b'907,1,k1,?\n907,2,k2,"1,500"\n907,3,k3,inf\n',
    "no person id": b"NA,1,k1,3\n,2,k2,4\n",
    "a huge cost": b"908,1,k1,1e308\n908,2,k1,-1e308\n",
    "a quoted line break": b'909,1,"k1\n",5\n',
    "blank lines": b"\n\n910,1,k1,5\n\n",
}


def csv_bytes(persons: list[tuple[int, list[bytes]]], extra: bytes = b"") -> bytes:
    lines = [line for _, own in persons for line in own]
    order = np.random.default_rng(99).permutation(len(lines))  # people's rows interleaved
    return HEADER + b"".join(lines[i] for i in order) + extra


def neighbours(persons: list[tuple[int, list[bytes]]]) -> Iterator[tuple[str, bytes]]:
    """(what changed, the neighbouring file): each person removed, then each newcomer."""
    for pid, _ in persons:
        yield f"without person {pid}", csv_bytes([p for p in persons if p[0] != pid])
    for what, lines in NEWCOMERS.items():
        yield f"with {what}", csv_bytes(persons, lines)


# --------------------------------------------------------------------------------------------
# the OpenDP program, its measurements replaced by recorders


def recorders(program: Any, drawn: dict) -> list[list[Any]]:
    """Stand-ins for the program's measurements: each records its true input and returns a
    value of the measurement's output type (the input itself; a first index for a noisy
    max)."""
    out = []
    for query in program.QUERIES:
        parts = []
        for i, part in enumerate(query["parts"]):
            def record(value, key=(query["id"], i), part=part):
                drawn[key] = value
                if part["noise"] == "noisy_max":
                    return 0 if part["k"] == 1 else list(range(part["k"]))
                return value
            parts.append(record)
        out.append(parts)
    return out


def true_inputs(program: Any, data: bytes, folder: Path, seed: int) -> dict:
    """What the program hands to each measurement on ``data``, read by the program from a
    file (the same per-run secret, from ``seed``, on every neighbour)."""
    path = folder / "data.csv"
    path.write_bytes(data)
    drawn: dict = {}
    program.release(program.read_frame(str(path)), recorders(program, drawn),
                    rng=np.random.default_rng(seed))
    return drawn


def _scores(query: dict, part: dict, values: list[float], unit: PrivacyUnit
            ) -> tuple[np.ndarray, float]:
    """A quantile's scores by OpenDP's own scorer, and its L∞ map at max rows per person."""
    scorer = dp.t.make_quantile_score_candidates(
        dp.vector_domain(dp.atom_domain(T="float", nan=False)), dp.symmetric_distance(),
        [float(c) for c in query["candidates"]], alpha=part["quantile"])
    return np.asarray(scorer(values), dtype=float), float(scorer.map(unit.max_rows))


def changes(program: Any, before: dict, after: dict, unit: PrivacyUnit) -> list[str]:
    """Every part whose input moved by more than the sensitivity the plan claims for it."""
    found = []
    for query in program.QUERIES:
        for i, part in enumerate(query["parts"]):
            first, second = before[(query["id"], i)], after[(query["id"], i)]
            if part.get("quantile") is not None:
                a, claim = _scores(query, part, first, unit)
                b, _ = _scores(query, part, second, unit)
                norm = "Linf"
            else:
                a = np.atleast_1d(np.asarray(first, dtype=float))
                b = np.atleast_1d(np.asarray(second, dtype=float))
                claim = float(part["d_in"])
                norm = "Linf" if part["noise"] == "noisy_max" else part["norm"]
            d = np.abs(a - b)
            moved = {"L1": d.sum(), "L2": math.sqrt(float(np.sum(d * d))),
                     "Linf": d.max(initial=0.0)}[norm]
            if not moved <= claim * (1 + TOLERANCE) + TOLERANCE:
                found.append(f"{query['id']} ({part['part']}): {norm} change {moved:g} > "
                             f"claimed {claim:g}")
    return found


UNITS = [PrivacyUnit("pid", 1, 1), PrivacyUnit("pid", 2, 2), PrivacyUnit("pid", 3, 1)]


@pytest.mark.slow
@pytest.mark.parametrize("unit", UNITS, ids=lambda u: f"r{u.max_rows}-k{u.max_groups}")
def test_no_neighbour_moves_the_opendp_program_more_than_its_sensitivity(tmp_path, unit):
    """Every person removed and every newcomer added: no part of any query moves by more than
    the plan's certified sensitivity, and nothing is refused."""
    program = load_program(opendp_program(program_plan(unit)), "stability_program", tmp_path)
    persons = people(seed=unit.max_rows)
    base = true_inputs(program, csv_bytes(persons), tmp_path, seed=5)
    failures = []
    for what, data in neighbours(persons):
        failures += [f"{what}: {line}"
                     for line in changes(program, base, true_inputs(program, data, tmp_path, 5),
                                         unit)]
    assert failures == [], "\n".join(failures)


@pytest.mark.slow
def test_the_check_catches_a_sensitivity_too_small(tmp_path):
    """The check can fail: the inputs of a plan at 3 rows per person, checked against the
    claims of the same plan at 1 row per person (a planted bug), exceed them."""
    strict = load_program(opendp_program(program_plan(UNITS[0])), "strict", tmp_path)
    loose = load_program(opendp_program(program_plan(UNITS[2])), "loose", tmp_path)
    persons = people(seed=3)
    base = true_inputs(loose, csv_bytes(persons), tmp_path, seed=5)
    failures = []
    for _, data in neighbours(persons):
        failures += changes(strict, base, true_inputs(loose, data, tmp_path, 5), UNITS[0])
    assert any(line.startswith("count (value): L1") for line in failures)


def codes_plan() -> Plan:
    return Plan(Dataset("codes"), (
        PlanQuery("codes", "Codes", Histogram("code", cats(*CODES)),
                  Noise("laplace", "pure", epsilon=1.0)),
        PlanQuery("cost", "Cost", Sum("cost", Bounds(LOWER, UPPER, "public")),
                  Noise("geometric", "pure", epsilon=1.0)),), PrivacyUnit("pid", 1))


def test_a_word_among_the_codes_moves_the_histogram_by_one(tmp_path):
    """The issue's case: codes 1, 2, 3 declared, 300 people with [90, 95, 115] of them; one
    newcomer whose code is "unknown" made ``pd.read_csv`` read the column as text, and every
    count became 0 (an L1 change of 300 against a claimed 1). Now the counts do not move (the
    word is in no declared code)."""
    program = load_program(opendp_program(codes_plan()), "codes_program", tmp_path)
    lines = [f"p{i},{c},k1,1\n".encode() for i, c in enumerate([1] * 90 + [2] * 95 + [3] * 115)]
    base = true_inputs(program, HEADER + b"".join(lines), tmp_path, 0)
    after = true_inputs(program, HEADER + b"".join(lines) + b"new,unknown,k1,1\n", tmp_path, 0)
    assert base[("codes", 0)] == [90.0, 95.0, 115.0]
    assert after[("codes", 0)] == [90.0, 95.0, 115.0]


def test_a_non_integer_cost_is_rounded_not_refused(tmp_path):
    """A whole-number (geometric) sum: one person's cost of 12.5 made the program refuse ("a
    sum is not a whole number"); the release rounds each clamped value, ties to even (12.5 →
    12, 13.5 → 14, 14.5 → 14), and so does the program, run as a steward runs it."""
    (tmp_path / "program.py").write_text(opendp_program(codes_plan()), encoding="utf-8")
    (tmp_path / "data.csv").write_bytes(HEADER + b"a,1,k1,3\nb,2,k1,12.5\nc,3,k1,13.5\n"
                                        b"d,3,k1,14.5\ne,3,k1,99\n")
    done = subprocess.run([sys.executable, "program.py", "--data", "data.csv"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert isinstance(json.loads(done.stdout)["queries"][1]["rows"][0][1], int)
    program = load_program(opendp_program(codes_plan()), "rounded", tmp_path)
    drawn = true_inputs(program, (tmp_path / "data.csv").read_bytes(), tmp_path, 0)
    assert drawn[("cost", 0)] == 3 + 12 + 14 + 14 + 20


def test_the_programs_cell_reading_follows_the_rule(tmp_path):
    """Hand-computed readings of single cells (the rule of docs: one reading of a cell)."""
    program = load_program(opendp_program(codes_plan()), "cells", tmp_path)
    keys = program.keys_of(["12", "012", "12.0", "1.2e1", " 12", "-0", "1.5", "1.50", "ab",
                            "AB", "NA", " null ", "", None, "1e300", "inf"])
    assert keys.tolist() == ["12", "12", "12", "12", "12", "0", "1.5", "1.50", "ab", "AB",
                             None, None, None, None, "1e300", "inf"]
    x = program.number_of(["1", " 2.5 ", "1_000", "+-3", ".5", "5.", "1,500", "?", "inf",
                           "nan", "NA", None, "1e400", "0x10", "1d"])
    # ±inf is a number (the bounds clamp it), as DuckDB's cast reads "inf" and "1e400"
    expected = ([1.0, 2.5, 1000.0, -3.0, 0.5, 5.0] + [math.nan] * 2 + [math.inf]
                + [math.nan] * 3 + [math.inf] + [math.nan] * 2)
    np.testing.assert_array_equal(x, expected)
    assert program.cells(["1", " 01", "2.0", "x", None, "3", "1.2e1"], [1, 2, 3, 12]).tolist(
        ) == [0, 0, 1, -1, -1, 2, 3]
    # declared numbers match the number a cell reads as, declared texts its canonical key
    assert program.cells(["2.50", "25e-1", "2.5", "12", "0012"], [2.5]).tolist() == [
        0, 0, 0, -1, -1]
    assert program.cells(["2.50", "12", "0012", " 12 ", "ab"], ["2.5", "0012"]).tolist() == [
        -1, 1, 1, 1, -1]
    # declared booleans match a text whose key in lower case is theirs (engine.cells, rule 6)
    assert program.cells(["true", "False", " TRUE ", "yes", "1"], [True, False]).tolist() == [
        0, 1, 0, -1, -1]
    header = [" pid ", "", "cost", "cost", "", "code"]   # names as the engine names columns
    assert program.column_names(header) == csv_column_names(header) == [
        "pid", "column1", "cost", "cost_1", "column4", "code"]


# --------------------------------------------------------------------------------------------
# the Spark program: one session, every neighbour


@pytest.fixture(scope="module")
def spark(shared_spark):
    """The process's one Spark session (``conftest.shared_spark``): a session of this file's
    own would be the running one under ``getOrCreate``, and stopping it would stop it for the
    other Spark tests of the process."""
    return shared_spark


def spark_records(program: Any, session: Any, paths: list[Path]
                  ) -> list[dict[str, collections.Counter]]:
    """For each file, each query's (person, cell, value) records the Spark program hands
    PipelineDP: every file read by the program's ``read_spark``, all in one Spark job."""
    tagged = session.sparkContext.union([
        program.spark_rows(program.read_spark(session, str(path)), q).map(
            lambda r, tag=(n, q["id"]): (tag, r))
        for n, path in enumerate(paths) for q in program.QUERIES]).collect()
    out = [{q["id"]: collections.Counter() for q in program.QUERIES} for _ in paths]
    for (n, query_id), record in tagged:
        out[n][query_id][record] += 1
    return out


def python_records(spark_program_module: Any, opendp_module: Any, path: Path
                   ) -> dict[str, collections.Counter]:
    """The same records from the OpenDP program's reading of the file (its shared code)."""
    frame = opendp_module.read_frame(str(path))
    rows = [tuple(r) for r in frame.itertuples(index=False, name=None)]

    class Rdd:  # the few RDD methods spark_rows uses, over one partition
        def __init__(self, items):
            self.items = items

        def glom(self):
            return Rdd([self.items])

        def zipWithIndex(self):  # noqa: N802 (Spark's name)
            return Rdd([(x, i) for i, x in enumerate(self.items)])

        def map(self, f):
            return Rdd([f(x) for x in self.items])

        def flatMap(self, f):  # noqa: N802 (Spark's name)
            return Rdd([y for x in self.items for y in f(x)])

    return {q["id"]: collections.Counter(spark_program_module.spark_rows(Rdd(rows), q).items)
            for q in spark_program_module.QUERIES}


@pytest.mark.spark
@pytest.mark.slow
def test_no_neighbour_moves_the_spark_programs_records_but_one_persons(spark, tmp_path):
    """On every neighbour the Spark program's records are the OpenDP program's reading of the
    same file (the same cells, keys and numbers, malformed records included), and they differ
    from the base file's by one person's records at most (PipelineDP bounds that person's
    contribution to the plan's sensitivity); every value lies within the plan's bounds."""
    unit = PrivacyUnit("pid", 2, 2)
    program = load_program(spark_program(spark_plan(unit)), "spark_stability", tmp_path)
    reader = load_program(opendp_program(spark_plan(unit)), "opendp_reader", tmp_path)
    persons = people(seed=11)
    # every newcomer, and the people whose ids are spelled several ways removed (each person
    # removed is the OpenDP program's check above)
    spelled = [p for p in persons if p[0] % 4 == 1][:3]
    removed = [(f"without person {pid}", csv_bytes([p for p in persons if p[0] != pid]))
               for pid, _ in spelled]
    newcomers = [(f"with {what}", csv_bytes(persons, lines))
                 for what, lines in NEWCOMERS.items()]
    files = [("the base file", csv_bytes(persons)), *removed, *newcomers]
    paths = []
    for n, (_, data) in enumerate(files):
        paths.append(tmp_path / f"data-{n}.csv")
        paths[-1].write_bytes(data)
    read = spark_records(program, spark, paths)
    base = read[0]
    failures = []
    for (what, _), path, records in zip(files, paths, read, strict=True):
        if records != python_records(program, reader, path):
            failures.append(f"{what}: Spark reads other records than the OpenDP program")
        for query in program.QUERIES:
            changed = (records[query["id"]] - base[query["id"]]) + (
                base[query["id"]] - records[query["id"]])
            if len({pid for pid, _, _ in changed}) > 1:
                failures.append(f"{what}: {query['id']}: the records of "
                                f"{len({pid for pid, _, _ in changed})} people changed")
            if query.get("lower") is not None:
                half = (query["upper"] - query["lower"]) / 2
                low, high = ((-half, half) if query["kind"] == "variance"
                             else (query["lower"], query["upper"]))
                if any(not low <= v <= high for _, _, v in records[query["id"]]):
                    failures.append(f"{what}: {query['id']}: a value outside the bounds")
    assert failures == [], "\n".join(failures)
    assert sum(base["count"].values()) > 50
    # and a program releases the file with every newcomer at once, refusing nothing (two of
    # the queries: each PipelineDP aggregation is several Spark jobs)
    small = spark_plan(unit)
    small = Plan(small.dataset, tuple(q for q in small.queries if q.id in ("codes", "sum")),
                 unit, small.accounting)
    releaser = load_program(spark_program(small), "spark_release", tmp_path)
    path = tmp_path / "every-newcomer.csv"
    path.write_bytes(csv_bytes(persons, b"".join(NEWCOMERS.values())))
    out = releaser.release(spark, str(path))
    assert [q["id"] for q in out["queries"]] == ["sum", "codes"]   # the plan's order
    assert len(out["queries"][1]["rows"]) == len(CODES)
    assert all(math.isfinite(v) for q in out["queries"] for _, v in q["rows"])


# --------------------------------------------------------------------------------------------
# the program reads what the release reads


def test_the_opendp_program_hands_opendp_what_the_release_does(tmp_path, monkeypatch):
    """The same CSV (people with ids spelled several ways, and the newcomers above: words,
    fractions, bytes that are not UTF-8, short and long records, no id, blank lines)
    released by ``release.run`` on DuckDB and by the program, both with their noise replaced
    by a recorder: every query's true input is the same. Ten rows per person, so that no
    person's rows are truncated (the release and the program choose kept rows by different
    keyed hashes); declared numbers, declared texts and text spellings of numbers."""
    from engine import Engine, FileSource
    from engine.duckdb_backend import DuckDBBackend
    from release import Ledger, run
    from release.measurements import Certified

    unit = PrivacyUnit("pid", 10)
    laplace, geometric = (Noise("laplace", "pure", epsilon=1.0),
                          Noise("geometric", "pure", epsilon=1.0))
    bounds = Bounds(LOWER, UPPER, "public")
    plan = Plan(Dataset("cross"), (
        PlanQuery("count", "Rows", Count(), laplace),
        PlanQuery("sum-whole", "Cost", Sum("cost", bounds), geometric),
        PlanQuery("sum", "Cost", Sum("cost", bounds), laplace),
        PlanQuery("codes", "Codes", Histogram("code", cats(*CODES)), geometric),
        PlanQuery("code-texts", "Codes", Histogram("code", cats("1", "02", "3.0", "x")),
                  laplace),
        PlanQuery("halves", "Costs", Histogram("cost", cats(2.5, 3, 12.5)), laplace),
        PlanQuery("keys", "Keys", Histogram("key", cats(*KEYS)), laplace),
        PlanQuery("bins", "Cost bands", Histogram("cost", edges=Grid((0.0, 5.0, 10.0, 20.0),
                                                                     "public")), laplace),
        PlanQuery("sum-by", "Cost by code", GroupBy("code", "sum", "cost", bounds,
                                                    keys=cats(*CODES)), geometric),
    ), unit, Accounting("basic"))
    # Every newcomer, the quoted line break and "inf" among them: the release read both by the
    # rule only once its reader stopped refusing a quoted line break (DuckDB's parallel CSV
    # scanner) and stopped clamping an infinite cell to the bound (the rule: missing).
    odd = b"".join(NEWCOMERS.values())
    data = csv_bytes(people(seed=4), odd + b"911,2,k2,2.50\n")
    path = tmp_path / "cross.csv"
    path.write_bytes(data)

    drawn: list[Any] = []

    def record(self, value):  # the release's true input of every draw, returned as drawn
        drawn.append(value)
        return value

    monkeypatch.setattr(Certified, "draw", record)
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        run(plan, FileSource(path, "csv"), ledger=ledger, engine=Engine(DuckDBBackend(threads=1)))
    program = load_program(opendp_program(plan), "cross_program", tmp_path)
    inputs = true_inputs(program, data, tmp_path, seed=0)
    mine = [inputs[(q["id"], i)] for q in program.QUERIES for i in range(len(q["parts"]))]
    assert [np.asarray(v, dtype=float).tolist() for v in mine] == [
        np.asarray(v, dtype=float).tolist() for v in drawn]
    assert inputs[("halves", 0)][0] >= 1      # "2.50" is the declared 2.5
