"""Shared pytest fixtures: the repository root and an AppTest factory for the app."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

# Every Hypothesis test is reproducible: the same examples on every run and machine (CI
# checks what ran here; see also _freeze_hypothesis_constants below), no example database,
# and no per-example deadline (a loaded machine is not a failure; speed is measured in
# bench/).
# HYPOTHESIS_PROFILE=explore draws fresh examples instead (pytest --hypothesis-seed=N to
# replay a run): for hunting bugs by hand, never in CI.
settings.register_profile("epsilon-lab", derandomize=True, database=None, deadline=None)
settings.register_profile("explore", database=None, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "epsilon-lab"))

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _freeze_hypothesis_constants() -> None:
    """Make derandomized examples independent of what else the run has imported.

    Hypothesis mixes into its examples literal constants read from the source of every local
    module in ``sys.modules`` at the time. That pool grew as other test files, lazy imports
    and AppTest pages loaded modules, so CI's full run drew different examples than a
    developer's run of one file. The pool is fixed here, once, to the constants of dpcore's
    modules (good edge values: 1e-300, 1e150, 2**62 …) and this file. Private Hypothesis API,
    pinned by requirements-dev.txt; a version that moves it fails loudly here.
    """
    import importlib
    import pkgutil
    import warnings

    from hypothesis.errors import HypothesisSideeffectWarning
    from hypothesis.internal.conjecture import providers

    import dpcore

    for info in pkgutil.iter_modules(dpcore.__path__):
        importlib.import_module(f"dpcore.{info.name}")
    with warnings.catch_warnings():  # reading the constants now, at start-up, is the point
        warnings.simplefilter("ignore", HypothesisSideeffectWarning)
        frozen = providers._get_local_constants()
    providers._get_local_constants = lambda: frozen


_freeze_hypothesis_constants()

#: Pages listed only while sign-in is on (tests/pages/test_signin.py runs them signed in).
SIGNED_IN_PAGES = ("people.py",)
#: The pages of the app as it runs by default (sign-in off): every page test runs each.
PAGE_FILES = sorted(p.name for p in (ROOT / "app_pages").glob("*.py")
                    if p.name not in SIGNED_IN_PAGES)

#: Test files and fixtures that start Spark (a JVM): marked ``spark``, left out of the fast
#: tier (``python3 dev.py test --fast``); CI runs them all.
SPARK_FILES = {"test_engine_spark.py", "test_data_folder_spark.py"}
SPARK_FIXTURES = {"shared_spark", "spark_release", "spark_engine"}


def pytest_collection_modifyitems(config, items):
    """Tiers: browser tests (tests/e2e) are ``e2e``, tests that start Spark ``spark``. The
    fast tier deselects them and the ``slow`` ones; the full run (CI) keeps every test."""
    for item in items:
        path = Path(str(item.fspath))
        if "e2e" in path.parts:
            item.add_marker(pytest.mark.e2e)
        if path.name in SPARK_FILES or SPARK_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.spark)


#: Small and quick: one core's worth of partitions, the JIT's first tier only (these jobs
#: are tiny), no whole-stage code generation (compiling it costs more than it saves here).
SPARK_TEST_CONFIG = {
    "spark.default.parallelism": "1",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.codegen.wholeStage": "false",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
}


@pytest.fixture(scope="session")
def shared_spark():
    """One small local Spark session for every Spark test of a test process (starting a JVM
    and a Spark context takes 10 to 30 s): one per process of a parallel run (dev.py). The
    app's engine is handed it too (``getOrCreate`` returns the running session, whatever
    master it asks for).

    Without Java these tests are skipped on a developer's machine and fail under CI
    (CI=true): ``.ci/run`` installs a Java runtime from Debian's packages."""
    import shutil

    if shutil.which("java") is None:
        message = "Java is not installed: Spark needs a Java 17+ runtime"
        if os.environ.get("CI") == "true":
            pytest.fail(message + " (.ci/run installs default-jre-headless)")
        pytest.skip(message)
    from engine.spark_backend import spark_session

    # Python workers (the Spark program's UDFs) run this interpreter, whose packages the
    # tests have, not the first python3 on the PATH
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = spark_session("local[2]", shuffle_partitions=1, config=SPARK_TEST_CONFIG)
    yield session
    session.stop()


def fresh_plans() -> str:
    """A new, empty plans file for the sessions started next (``EPSILON_LAB_PLANS``), and a
    new, empty dataset declarations file beside it (``EPSILON_LAB_DECLARATIONS``): no test
    finds the schema or unit another test declared."""
    folder = Path(tempfile.mkdtemp(prefix="epsilon-lab-plans-"))
    os.environ["EPSILON_LAB_DECLARATIONS"] = str(folder / "declarations.sqlite")
    path = str(folder / "plans.sqlite")
    os.environ["EPSILON_LAB_PLANS"] = path
    return path


def open_app(page: str | None = None, *, dataset: str | None = None, timeout: float = 120,
             plans: str | os.PathLike | None = None):
    """An AppTest of app.py run once with defaults, then on ``dataset`` and ``page`` if given.

    Every rerun executes app.py (sidebar included) and then the page, as on a server. Its
    saved plans are in ``plans``, else in a new, empty file (a session keeps the file it
    started with): no test sees the plans another test saved.
    """
    if plans is None:
        fresh_plans()
    else:
        os.environ["EPSILON_LAB_PLANS"] = str(plans)
    from streamlit import config
    from streamlit.testing.v1 import AppTest

    # Tests want the real error text; users get the redacted one from config.toml.
    config.set_option("client.showErrorDetails", "full")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    if dataset is not None:
        at.selectbox(key="dataset_choice").select(dataset)
        at.run()
    if page is not None:
        at.switch_page(f"app_pages/{page}")
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture
def app():
    """``open_app`` as a fixture: ``at = app("statistics.py")``."""
    return open_app


@pytest.fixture(autouse=True, scope="session")
def _a_ledger_of_the_test_session(tmp_path_factory):
    """No test records a release in the user's own ledger: the session (and the app servers
    it starts) use one in a temporary folder. Tests that need their own set it themselves."""
    os.environ["EPSILON_LAB_LEDGER"] = str(tmp_path_factory.mktemp("ledger") / "ledger.sqlite")


@pytest.fixture(autouse=True, scope="session")
def _sessions_open_on_adult():
    """The tests written before the teaching defaults (issue 35) read Adult's figures: every
    new session of the test run (AppTest and the app servers it starts) opens on Adult, as a
    server with ``EPSILON_LAB_DEFAULT_DATASET`` does. The teaching tests unset it."""
    os.environ["EPSILON_LAB_DEFAULT_DATASET"] = "Adult (UCI census income)"


def _scan_installed_components_once() -> None:
    """Every new AppTest scans the metadata of every installed package for Streamlit
    components (a quarter of a CPU second per AppTest here). The installed packages do not
    change during a test run: the scan runs once per process and its answer is reused.
    Patched only once the tests have imported streamlit (a dpcore-only run never does)."""
    if "streamlit" not in sys.modules:
        return
    from streamlit.components.v2 import manifest_scanner

    scan = manifest_scanner.scan_component_manifests
    if getattr(scan, "scanned_once", False):
        return
    found: list = []

    def scan_once(max_workers: int | None = None) -> list:
        if not found:
            found.append(scan(max_workers))
        return list(found[0])

    scan_once.scanned_once = True
    scan_once.__wrapped__ = scan
    manifest_scanner.scan_component_manifests = scan_once


def _compile_each_script_once() -> None:
    """Every AppTest run starts with empty script caches, so app.py and the page are compiled
    again on every run (a few ms each, twice a run; a server compiles them once). The code
    compiled from a script's text is reused for the same text: a changed file is compiled
    anew. Patched only once the tests have imported streamlit."""
    if "streamlit" not in sys.modules:
        return
    from streamlit import config
    from streamlit.runtime.scriptrunner import script_cache

    cache = script_cache.ScriptCache
    if getattr(cache.get_bytecode, "compiled_once", False):
        return
    original = cache.get_bytecode
    compiled: dict[tuple[str, str, bool], object] = {}

    def get_bytecode(self, script_path: str):
        path = os.path.abspath(script_path)
        with script_cache.open_python_file(path) as f:
            key = (path, f.read(), bool(config.get_option("runner.magicEnabled")))
        if key not in compiled:
            compiled[key] = original(cache(), path)    # a fresh cache: compiled from the file
        return compiled[key]

    get_bytecode.compiled_once = True
    get_bytecode.__wrapped__ = original
    cache.get_bytecode = get_bytecode


def pytest_runtest_setup(item):
    """Before the test's fixtures (a module-scoped one may start an AppTest)."""
    _scan_installed_components_once()
    _compile_each_script_once()


@pytest.fixture(scope="session")
def _lock_of_the_run(tmp_path_factory) -> Path | None:
    """A file the processes of a parallel run lock (``alone``), or None in a serial run. In
    the run's own temporary folder: another run (another worktree) never waits for it."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return None
    return tmp_path_factory.getbasetemp().parent / "alone.lock"   # popen-gw0/.. is the run's


@pytest.fixture(autouse=True)
def _alone_or_beside_others(request, _lock_of_the_run):
    """A test marked ``alone`` (a concurrency test that times its steps) runs while no other
    test runs: it takes the run's lock for itself, every other test shares it, so the other
    process waits between two tests. Serial runs take no lock."""
    if _lock_of_the_run is None:
        yield
        return
    import fcntl

    alone = request.node.get_closest_marker("alone") is not None
    with open(_lock_of_the_run, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        yield
    # closing the file released the lock


@pytest.fixture(autouse=True)
def _plans_of_each_test():
    """Each test starts with no saved plan (an app started without ``open_app`` too)."""
    fresh_plans()


@pytest.fixture
def downloads(monkeypatch):
    """The bytes of every download button the app draws, by file name (AppTest keeps them in
    a storage it drops after each run)."""
    from streamlit.runtime import memory_media_file_storage as storage

    seen: dict[str, bytes] = {}
    original = storage.MemoryMediaFileStorage.load_and_get_id

    def keep(self, path_or_data, mimetype, kind, filename=None):
        if filename is not None:
            seen[filename] = path_or_data
        return original(self, path_or_data, mimetype, kind, filename)

    monkeypatch.setattr(storage.MemoryMediaFileStorage, "load_and_get_id", keep)
    return seen
