"""The Release plan page with a 20-query plan: time to rerun it after one row's ε is edited
(AppTest, median of several edits) and the part of it the PLD accountant takes; and the
accounting figures of issue 13 (PLD against basic, advanced and zCDP for 10, 50 and 200
releases of Laplace and Gaussian noise and a mixed plan, δ = 1e-6).

Run: ``.venv/bin/python bench/bench_plan.py`` (about a minute). Ratios, not timed asserts:
the rerun is set against the PLD accountant alone and against dp_accounting composing the
same distributions by hand in the same run.
"""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dp_accounting.pld import privacy_loss_distribution as pld  # noqa: E402

from dashboard import plan_store  # noqa: E402
from dashboard.analysis import release_plan as rp  # noqa: E402
from dpcore.accounting import account_plan  # noqa: E402
from dpcore.mechanisms.gaussian import Gaussian  # noqa: E402
from dpcore.mechanisms.laplace import Laplace  # noqa: E402
from plan import model  # noqa: E402
from plan.build import build_plan  # noqa: E402
from tests.conftest import open_app  # noqa: E402

EDUCATION = ("Bachelors", "HS-grad", "Masters", "Doctorate", "Some-college")


def twenty_queries() -> tuple[model.PlanQuery, ...]:
    """Counts, histograms, sums and a table under Laplace, geometric and Gaussian noise."""
    error = model.Target("error", alpha=50.0, beta=0.05)
    out = []
    for i in range(20):
        kind = i % 4
        noise = (model.Noise("gaussian", "approx", epsilon=0.5, delta=1e-7) if i % 3 == 0
                 else model.Noise("laplace", "pure", epsilon=0.25 + 0.05 * i))
        if kind == 0:
            query: model.QuerySpec = model.Count()
        elif kind == 1:
            query = model.Histogram("education", model.Categories(EDUCATION, "public"))
        elif kind == 2:
            query = model.Sum("age", model.Bounds(17, 90, "public"))
            error = model.Target("error", alpha=5000.0, beta=0.05)
        else:
            query = model.Crosstab("sex", "race", model.Categories(("Male", "Female"), "public"),
                                   model.Categories(("White", "Black"), "public"))
        out.append(model.PlanQuery(f"q{i}", f"Query {i}", query, noise, "statistics",
                                   target=error))
    return tuple(out)


def page_rerun_times(edits: int = 7) -> list[float]:
    at = open_app()
    key = at.session_state["dataset"].key
    queries = twenty_queries()
    at.session_state[plan_store._KEY] = {key: tuple(plan_store.Entry(q) for q in queries)}
    at.switch_page("app_pages/plan.py").run()
    assert not at.exception, [e.value for e in at.exception]
    times = []
    for i in range(edits):
        changed = list(queries)
        q = changed[i]
        changed[i] = replace(q, mechanism=replace(q.mechanism, epsilon=q.mechanism.epsilon * 1.1))
        queries = tuple(changed)
        at.session_state[plan_store._KEY] = {key: tuple(plan_store.Entry(q) for q in queries)}
        start = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - start)
        assert not at.exception, [e.value for e in at.exception]
    return times


def pld_times(repeats: int = 5) -> tuple[float, float]:
    built = build_plan(model.Plan(model.Dataset("bench"), twenty_queries()))
    releases = rp.releases_of(built)
    ours = []
    for _ in range(repeats):
        start = time.perf_counter()
        account_plan(releases, delta=1e-6)
        ours.append(time.perf_counter() - start)
    return statistics.median(ours), len(releases)


def accounting_table() -> None:
    print("\nε at δ = 1e-6: basic / advanced / zCDP / PLD (dpcore.accounting.account_plan)")
    for name, one in (("Laplace ε = 1", Laplace(sensitivity=1.0, epsilon=1.0)),
                      ("Gaussian σ = 3Δ", Gaussian(sensitivity=1.0, scale=3.0))):
        for n in (10, 50, 200):
            totals = account_plan([one] * n, delta=1e-6)
            print(f"  {n:>3} × {name:<16} " + " / ".join(
                f"{totals.of(a).epsilon:8.2f}" for a in ("basic", "advanced", "zcdp", "pld")))
    mixed = [Laplace(sensitivity=1.0, epsilon=1.0)] * 10 + [Gaussian(sensitivity=1.0,
                                                                     scale=3.0)] * 5
    totals = account_plan(mixed, delta=1e-6)
    print("  10 × Laplace + 5 × Gaussian " + " / ".join(
        f"{totals.of(a).epsilon:8.2f}" for a in ("basic", "advanced", "zcdp", "pld")))
    start = time.perf_counter()
    hand = pld.from_laplace_mechanism(1.0, value_discretization_interval=1e-3).self_compose(10)
    hand = hand.compose(pld.from_gaussian_mechanism(
        3.0, value_discretization_interval=1e-3).self_compose(5))
    print(f"  dp_accounting by hand, same plan: PLD ε = {hand.get_epsilon_for_delta(1e-6):.2f} "
          f"({time.perf_counter() - start:.2f} s)")


def main() -> int:
    times = page_rerun_times()
    median_page = statistics.median(times)
    median_pld, parts = pld_times()
    print(f"Release plan page, 20 queries ({parts} noised parts): rerun after an edit, median "
          f"of {len(times)}: {median_page:.2f} s (min {min(times):.2f}, max {max(times):.2f})")
    print(f"  of which the four accountants (PLD included): {median_pld:.3f} s "
          f"({median_pld / median_page:.0%} of the rerun)")
    accounting_table()
    return 0


if __name__ == "__main__":
    sys.exit(main())
