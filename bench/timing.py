"""Timing helpers shared by the benchmarks: paired best-of-N timings under the same load."""

from __future__ import annotations

import time
from collections.abc import Callable


def paired_best_times(first: Callable[[], object], second: Callable[[], object],
                      repeats: int = 3, clock: Callable[[], float] = time.process_time,
                      ) -> tuple[float, float]:
    """Best-of-``repeats`` times of two runs, alternated so both see the same machine load.

    The default clock is this process's CPU time: on a shared machine wall-clock time mostly
    measures the other tenants.
    """
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeats):
        for run, bucket in ((first, times[0]), (second, times[1])):
            start = clock()
            run()
            bucket.append(clock() - start)
    return min(times[0]), min(times[1])
