"""plan.build: engine queries, mechanisms, scales and person-level sensitivities, against
closed forms and dpcore's own NoisyMean; plan.identity: content hashes."""

from __future__ import annotations

import hashlib
import math
import os
import time

import numpy as np
import pandas as pd
import pytest

from engine.queries import (
    Binned,
    BoundedSum,
    CategoryCounts,
    CategoryTable,
    Contribution,
    CountRows,
    DistinctValues,
    GroupedSum,
)
from plan import identity
from plan.build import NoisyMax, PartitionThreshold, build, build_plan
from plan.model import (
    Bounds,
    Dataset,
    Mean,
    Noise,
    Plan,
    PlanError,
    PlanQuery,
    PrivacyUnit,
    Sum,
)
from tests.queries_reference import NoisyMean, bounded_mean_parts
from tests.release_fixtures import every_kind_plan

UNIT = PrivacyUnit("pid", 3, 2)  # r = 3 rows per person (per group), k = 2 groups


def test_engine_queries_carry_the_contribution_bounds():
    built = {b.query.id: b for b in build_plan(every_kind_plan())}
    scalar, grouped = Contribution("pid", 3), Contribution("pid", 3, 2)
    assert built["n"].engine_queries == (CountRows(scalar),)
    assert built["cost"].engine_queries == (BoundedSum("cost", 0, 500, scalar),)
    # geometric noise on the mean's sum: each clamped value rounded to a whole number
    assert built["age"].engine_queries == (BoundedSum("age", 18, 90, scalar, whole=True),)
    assert isinstance(built["dx"].engine_queries[0], CategoryCounts)
    assert built["dx"].engine_queries[0].contribution == grouped
    assert built["ages"].engine_queries == (Binned("age", (18.0, 40.0, 65.0, 90.0), "bins",
                                                   "separate", grouped),)
    assert isinstance(built["dx-sex"].engine_queries[0], CategoryTable)
    assert built["dx-found"].engine_queries == (DistinctValues("dx", limit=None),)
    assert built["dx-found"].keyed_queries(("A", "B")) == (CategoryCounts("dx", ("A", "B"),
                                                                     grouped),)
    keyed = built["dx-cost"].keyed_queries(("A",))
    assert keyed[1] == GroupedSum("dx", ("A",), "cost", 0, 500, grouped)
    assert built["sex-age"].engine_queries == (GroupedSum("sex", ("F", "M"), "age", 18, 90,
                                                          grouped),)
    assert built["age-q"].engine_queries[0].cells == "ranks"
    assert built["age-q"].engine_queries[0].contribution == scalar
    assert built["top-dx"].engine_queries[0].contribution == grouped


def test_scales_and_sensitivities_are_the_closed_forms():
    built = {b.query.id: b for b in build_plan(every_kind_plan())}
    r, k = 3, 2
    # count, L1 = r: Laplace b = r / ε
    assert built["n"].sensitivity.l1 == r
    assert built["n"].parts[0].scale == pytest.approx(r / 1.0, rel=1e-15)
    # sum of values in [0, 500]: Δ = r·500
    assert built["cost"].parts[0].sensitivity == r * 500
    # histogram with k groups: L1 = k·r, L2 = √k·r, L∞ = r
    dx = built["dx"].sensitivity
    assert (dx.l1, dx.linf) == (k * r, r)
    assert dx.l2 == pytest.approx(math.sqrt(k) * r, rel=1e-15)
    assert built["dx"].parts[0].scale == pytest.approx(k * r, rel=1e-15)
    # Gaussian on the binned histogram, ρ = 0.5: σ = L2 / √(2ρ)
    assert built["ages"].parts[0].scale == pytest.approx(math.sqrt(k) * r, rel=1e-12)
    # top-2 by counts (monotonic, L∞ = r), peeled: ε = 2 rounds · r / scale
    top: NoisyMax = built["top-dx"].mechanism
    assert (top.monotonic, top.k, top.sensitivity) == (True, 2, r)
    assert top.scale == pytest.approx(2 * r / 1.0, rel=1e-14)
    # quartiles: ε = 1.5 split in 3; the median's rank sensitivity r/2, scale 2Δ/ε_q
    median: NoisyMax = built["age-q"].parts[1].mechanism
    assert median.sensitivity == r * 0.5 and median.negate
    assert median.scale == pytest.approx(2 * (r * 0.5) / 0.5, rel=1e-14)
    # partition selection, discrete Laplace: b = k·r/ε, T the smallest whole number with
    # k·e^{−(T−r)/b}/(1 + e^{−1/b}) <= δ
    pt: PartitionThreshold = built["dx-found"].mechanism
    b = k * r / 1.0
    assert pt.scale == pytest.approx(b, rel=1e-12)
    smallest = next(t for t in range(1, 10_000)
                    if k * math.exp(-(t - r) / b) / (1 + math.exp(-1 / b)) <= 1e-7)
    assert pt.threshold == smallest
    assert pt.privacy.delta <= 1e-7


def test_a_mean_is_built_as_dpcore_noisy_mean_builds_it():
    frame = pd.DataFrame({"age": np.arange(18, 91, dtype=np.int64)})
    sum_answer, count_answer = bounded_mean_parts(frame, "age", lower=18, upper=90)
    for kind, budget in (("laplace", {"epsilon": 0.8}), ("geometric", {"epsilon": 0.8}),
                         ("gaussian", {"epsilon": 0.8, "delta": 1e-6}),
                         ("gaussian", {"rho": 0.3})):
        measure = "zcdp" if "rho" in budget else "approx" if "delta" in budget else "pure"
        query = PlanQuery("m", "mean", Mean("age", Bounds(18, 90), sum_share=0.6),
                          Noise(kind, measure, **budget))
        built = build(query, PrivacyUnit())
        reference = NoisyMean(sum_answer, count_answer, mechanism=kind, sum_share=0.6,
                              **budget)
        for ours, theirs in zip(built.parts, reference.parts, strict=True):
            assert ours.scale == theirs.scale
            assert ours.mechanism.privacy == theirs.privacy
        assert [p.name for p in built.parts] == ["sum", "count"]


@pytest.mark.parametrize("query, field", [
    (PlanQuery("s", "sum", Sum("x", Bounds(0, 2.5)), Noise("geometric", "pure", epsilon=1.0)),
     "queries[0].mechanism"),
    (PlanQuery("m", "mean", Mean("x", Bounds(0, 1)),
               Noise("clamped_laplace", "pure", epsilon=1.0, lower=0, upper=1)),
     "queries[0].mechanism.kind"),
    (PlanQuery("s", "sum", Sum("x", Bounds(0, 1)), Noise("laplace", "pure", epsilon=1e-320)),
     "queries[0].mechanism"),
])
def test_a_query_that_cannot_be_built_names_its_field(query, field):
    plan = Plan(Dataset("d"), (query,))
    with pytest.raises(PlanError) as info:
        build_plan(plan)
    assert info.value.field == field


# --------------------------------------------------------------------------------------------
# content hashes


def test_a_file_hash_is_the_sha256_of_its_bytes(tmp_path):
    data = os.urandom(identity.CHUNK_BYTES * 2 + 123)  # spans several chunks
    path = tmp_path / "data.csv"
    path.write_bytes(data)
    expected = "sha256:" + hashlib.sha256(data).hexdigest()
    assert identity.file_hash(path) == expected
    assert identity.bytes_hash(data) == expected  # an upload's bytes name the same data
    assert identity.content_hash(str(path)) == expected


def test_a_rewritten_file_is_hashed_again(tmp_path):
    path = tmp_path / "data.csv"
    path.write_bytes(b"a,b\n1,2\n")
    first = identity.file_hash(path)
    assert identity.file_hash(path) == first  # cached
    time.sleep(0.01)
    path.write_bytes(b"a,b\n1,3\n")  # same size, new content and time
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10_000_000))
    assert identity.file_hash(path) != first
    assert identity.file_hash(path) == "sha256:" + hashlib.sha256(b"a,b\n1,3\n").hexdigest()


def test_a_parquet_folder_is_known_by_its_parts(tmp_path):
    folder = tmp_path / "table"
    (folder / "year=2024").mkdir(parents=True)
    (folder / "year=2024" / "part-0.parquet").write_bytes(b"first part")
    (folder / "part-1.parquet").write_bytes(b"second part")
    (folder / "notes.txt").write_text("not part of the data")
    first = identity.file_hash(folder)
    (folder / "notes.txt").write_text("still not part of the data")
    assert identity.file_hash(folder) == first
    (folder / "part-1.parquet").rename(folder / "part-2.parquet")
    assert identity.file_hash(folder) != first
    (tmp_path / "empty").mkdir()
    with pytest.raises(OSError, match="no .parquet"):
        identity.file_hash(tmp_path / "empty")


def test_a_frame_hash_follows_values_names_and_types():
    frame = pd.DataFrame({"a": [1, 2, None], "b": ["x", "y", "z"]})
    same = pd.DataFrame({"a": [1, 2, None], "b": ["x", "y", "z"]})
    assert identity.frame_hash(frame) == identity.frame_hash(same)
    assert identity.frame_hash(frame) != identity.frame_hash(frame.assign(a=[1, 2, 3]))
    assert identity.frame_hash(frame) != identity.frame_hash(frame.rename(columns={"a": "c"}))
    assert identity.frame_hash(frame) != identity.frame_hash(frame.astype({"a": "float32"}))
    assert identity.frame_hash(frame) != identity.frame_hash(frame.iloc[::-1])
    big = pd.DataFrame({"x": np.arange(identity.FRAME_CHUNK_ROWS * 2 + 5)})
    changed = big.copy()
    changed.iloc[-1, 0] = -1  # in the last chunk
    assert identity.frame_hash(big) != identity.frame_hash(changed)
