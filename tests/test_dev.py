"""`python3 dev.py run`: the address and port it serves on (localhost by default; a host option
and the HOST/PORT variables for showing the app from a VM). `python3 dev.py test`: the pytest
command of each tier, on two processes, and which tests share a process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import dev


def served_on(argv: list[str], env: dict[str, str] | None = None) -> tuple[str, str]:
    command = dev.run_command(argv, env or {})
    assert command[1:-4] == ["serve.py", "run", "app.py"]   # streamlit run, modules preloaded
    options = dict(zip(command[-4::2], command[-3::2], strict=True))
    return options["--server.address"], options["--server.port"]


def test_localhost_by_default():
    assert served_on([]) == ("localhost", "8501")


def test_host_option_serves_every_interface():
    assert served_on(["--host", "0.0.0.0"]) == ("0.0.0.0", "8501")
    assert served_on(["--host", "0.0.0.0", "--port", "8600"]) == ("0.0.0.0", "8600")


def test_host_and_port_from_the_environment():
    assert served_on([], {"HOST": "0.0.0.0", "PORT": "9000"}) == ("0.0.0.0", "9000")


def test_options_win_over_the_environment():
    assert served_on(["--host", "127.0.0.1"], {"HOST": "0.0.0.0"})[0] == "127.0.0.1"


@pytest.mark.parametrize("argv", [["--port", "http"], ["--port", "70000"], ["--host", " "],
                                  ["--bind", "x"]])
def test_bad_options_stop_with_a_usage_message(argv, capsys):
    with pytest.raises(SystemExit) as stopped:
        dev.run_command(argv, {})
    assert stopped.value.code == 2
    assert "dev.py run" in capsys.readouterr().err


def test_readme_documents_the_host_option_and_the_first_run():
    readme = (dev.ROOT / "README.md").read_text()
    assert "python3 dev.py run --host 0.0.0.0" in readme
    assert "HOST" in readme and "PORT" in readme
    assert "first run" in readme


def test_tests_may_cache_bytecode_and_keep_the_rest_of_the_environment():
    """`dev.py test` lets Python write __pycache__ (git ignores it): with the variable set,
    each test process compiled the project and rewrote every test module again."""
    env = {"PYTHONDONTWRITEBYTECODE": "1", "EPSILON_LAB_LEDGER": "/tmp/l.sqlite", "PATH": "/bin"}
    assert dev.test_environment(env) == {"EPSILON_LAB_LEDGER": "/tmp/l.sqlite", "PATH": "/bin"}
    assert "__pycache__/" in (dev.ROOT / ".gitignore").read_text().splitlines()


def test_every_tier_runs_on_two_processes_and_the_arguments_come_last():
    full = dev.test_command(["-k", "selection"])
    fast = dev.test_command(["--fast", "-n", "0"])
    for command in (full, fast):
        assert command[:3] == [str(dev.PYTHON), "-m", "pytest"]
        assert command[command.index("-n") + 1] == "2"
        assert command[command.index("--dist") + 1] == "loadfile"   # module fixtures once
    assert full[-2:] == ["-k", "selection"] and fast[-2:] == ["-n", "0"]   # the last -n wins
    assert "--fast" not in fast
    assert fast[fast.index("-m", 3) + 1] == "not e2e and not spark and not slow"
    assert "-m" not in full[3:]                                            # CI: every test


def own_environment() -> dict[str, str]:
    """This environment for a pytest run of its own: without the PYTEST_* variables of the
    run this test is part of (in a parallel run, its process's PYTEST_XDIST_WORKER)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}


#: Prints the process each test ran in, to $WHERE_LOG.
WHERE_PLUGIN = """
import os

def pytest_runtest_logreport(report):
    if report.when == "call" and "PYTEST_XDIST_WORKER" in os.environ:   # not the controller
        with open(os.environ["WHERE_LOG"], "a") as log:
            log.write(f"{os.environ.get('PYTEST_XDIST_WORKER')} {report.nodeid}\\n")
"""


@pytest.mark.slow
def test_the_tests_of_a_file_share_a_process_and_its_module_fixtures(tmp_path):
    """Two files of ten tests each, every test counting the builds of a module-scoped
    fixture: on two processes each file runs in one process and builds its fixture once
    (``--dist load`` spreads each file over both and fails this)."""
    (tmp_path / "where_plugin.py").write_text(WHERE_PLUGIN)
    for name in ("a", "b"):
        (tmp_path / f"test_{name}.py").write_text(
            "import pytest\n\nBUILT = []\n\n\n@pytest.fixture(scope='module')\n"
            "def shared():\n    BUILT.append(1)\n\n\n"
            "@pytest.mark.parametrize('i', range(10))\n"
            "def test_it(shared, i):\n    assert len(BUILT) == 1\n")
    log = tmp_path / "where.log"
    env = {**own_environment(), "PYTHONPATH": str(tmp_path), "WHERE_LOG": str(log)}
    command = dev.test_command([])[1:3] + dev.PARALLEL + [
        "-p", "where_plugin", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
        "-c", os.devnull, "-q", "test_a.py", "test_b.py"]
    done = subprocess.run([sys.executable, *command], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    ran = [line.split() for line in log.read_text().splitlines()]
    assert len(ran) == 20
    for name in ("test_a.py", "test_b.py"):
        assert len({worker for worker, test in ran if test.startswith(name)}) == 1
    assert {worker for worker, _ in ran} <= {"gw0", "gw1"}


TIMED_TEST = """
import os
import time

import pytest


def timed(name):
    start = time.monotonic()
    time.sleep({seconds})
    with open(os.environ["TIMES_LOG"], "a") as log:
        log.write(f"{{name}} {{start}} {{time.monotonic()}}\\n")

"""


@pytest.mark.slow
def test_a_test_marked_alone_runs_while_no_other_test_runs(tmp_path):
    """A test marked ``alone`` (tests/conftest.py) in one file, eight short tests in another:
    on two processes the two files start together, yet no other test runs during the
    ``alone`` one (without the lock, the other process runs its tests beside it)."""
    (tmp_path / "test_alone.py").write_text(
        TIMED_TEST.format(seconds=2) + "@pytest.mark.alone\ndef test_it():\n"
        "    timed('alone')\n")
    (tmp_path / "test_others.py").write_text(
        TIMED_TEST.format(seconds=0.5) + "@pytest.mark.parametrize('i', range(8))\n"
        "def test_it(i):\n    timed(f'other{i}')\n")
    log = tmp_path / "times.log"
    env = {**own_environment(), "PYTHONPATH": str(dev.ROOT), "TIMES_LOG": str(log)}
    command = [*dev.test_command([])[1:3], *dev.PARALLEL, "-p", "tests.conftest",
               "-p", "no:cacheprovider", "--rootdir", str(tmp_path), "-c", os.devnull, "-q",
               "-W", "ignore::pytest.PytestUnknownMarkWarning", "test_alone.py",
               "test_others.py"]
    done = subprocess.run([sys.executable, *command], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    times = {name: (float(a), float(b)) for name, a, b in
             (line.split() for line in log.read_text().splitlines())}
    assert len(times) == 9
    start, end = times.pop("alone")
    beside = [name for name, (a, b) in times.items() if a < end and b > start]
    assert not beside, f"ran beside the alone test: {beside}"
