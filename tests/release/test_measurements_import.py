"""No fixed second (issue 37, item 4): a plan's OpenDP measurements are built from OpenDP's
core modules, not its prelude, whose extras (scikit-learn, polars, pandas, scipy.stats) took
about a second of every release whatever the data; the names are the prelude's own objects,
so what is built is unchanged.

The import check runs in a fresh interpreter: this process has long imported everything.
"""

from __future__ import annotations

import subprocess
import sys

import opendp.prelude as prelude

from release import measurements
from tests.conftest import ROOT

#: What OpenDP's prelude imports for its extras and a plan of counts, sums, histograms,
#: thresholds, quantiles and selections does not need.
EXTRAS = ("opendp.prelude", "opendp.extras.sklearn", "sklearn", "polars", "scipy.stats")


def test_certifying_every_kind_of_query_imports_none_of_opendps_extras():
    """Every query kind and mechanism family but the synthetic table (which needs
    ``opendp.extras.mbi``): built, certified by OpenDP's maps and composed, with none of the
    prelude's extras loaded. On main the first ``dp.<name>`` imported the prelude."""
    probe = ("import sys\n"
             "from release.run import prepare\n"
             "from tests.release_fixtures import every_kind_plan\n"
             "prepared = prepare(every_kind_plan())\n"
             "assert len(prepared.certified) == len(every_kind_plan().queries)\n"
             "assert 'opendp' in sys.modules\n"
             f"print(*[m for m in {EXTRAS!r} if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == []


def test_the_core_names_are_the_preludes_own():
    """Each name read from the core modules is the very object ``opendp.prelude`` gives (the
    measurements and transformations as ``m`` and ``t``), and a name outside the core (the
    synthetic table's ``mbi``) still comes from the prelude."""
    core = measurements._core()
    assert {"m", "t", "atom_domain", "l01inf_distance", "max_divergence",
            "enable_features", "OpenDPException"} <= set(core)
    for name, value in core.items():
        assert getattr(prelude, name) is value, name
    assert measurements.dp.m.make_laplace is prelude.m.make_laplace
    assert measurements.dp.mbi is prelude.mbi
