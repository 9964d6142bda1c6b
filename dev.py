"""Developer entry point: `python3 dev.py run` starts the app, `python3 dev.py test` tests it.

Needs only python3: each command creates ``.venv`` and installs what it needs first.

    python3 dev.py run [--host HOST] [--port PORT]   # default localhost:8501
    python3 dev.py test [pytest arguments]           # everything CI runs; two processes
    python3 dev.py test --fast [pytest arguments]    # no browser, Spark or slow tests

``--host 0.0.0.0`` serves every network interface (to show the app from a VM or to a class);
the environment variables HOST and PORT set the same, the options win over them.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
PYTHON = VENV / "bin" / "python"


def _run(*args: str | os.PathLike) -> None:
    print("+", " ".join(str(a) for a in args), flush=True)
    subprocess.run([str(a) for a in args], cwd=ROOT, check=True)


def _ensure_venv(*requirement_files: str) -> None:
    """Create .venv once and (re)install the requirement files when they change."""
    if not PYTHON.exists():
        _run(sys.executable, "-m", "venv", VENV)
        _run(PYTHON, "-m", "pip", "install", "--quiet", "--upgrade", "pip")
    digest = hashlib.sha256()
    for name in requirement_files:
        for path in (ROOT / name, ROOT / "requirements.txt"):
            digest.update(path.read_bytes())
    stamp = VENV / f".installed-{'-'.join(Path(n).stem for n in requirement_files)}"
    if stamp.exists() and stamp.read_text() == digest.hexdigest():
        return
    for name in requirement_files:
        _run(PYTHON, "-m", "pip", "install", "--quiet", "-r", ROOT / name)
    stamp.write_text(digest.hexdigest())


DEFAULT_HOST = "localhost"
DEFAULT_PORT = "8501"


def run_command(argv: list[str], env: Mapping[str, str]) -> list[str]:
    """The `streamlit run` command for ``dev.py run`` with ``argv``: host and port from the
    options, else from the HOST and PORT variables in ``env``, else localhost:8501."""
    parser = argparse.ArgumentParser(prog="python3 dev.py run",
                                     description="Start the dashboard.")
    parser.add_argument("--host", default=env.get("HOST") or DEFAULT_HOST,
                        help="address to listen on: localhost (default) or 0.0.0.0 for "
                             "every interface (env HOST)")
    parser.add_argument("--port", default=env.get("PORT") or DEFAULT_PORT,
                        help="port to listen on, default 8501 (env PORT)")
    options = parser.parse_args(argv)
    if not options.host.strip():
        parser.error("--host must not be empty")
    if not options.port.isdigit() or not 0 < int(options.port) < 65536:
        parser.error(f"--port must be a number from 1 to 65535, got {options.port!r}")
    return [str(PYTHON), "serve.py", "run", "app.py",
            "--server.address", options.host.strip(), "--server.port", options.port]


def run(argv: list[str]) -> int:
    command = run_command(argv, os.environ)   # a bad option stops here, before installing
    _ensure_venv("requirements.txt")
    _run(*command)
    return 0


#: Every run is parallel: two test processes (pytest-xdist; CI and our machines have two
#: cores), each test file on one of them, so a module-scoped fixture is built once. (Not
#: ``--dist loadgroup``: pytest-xdist 3.8 under pytest 9.2 ignores its groups, silently;
#: pytest-dev/pytest-xdist#1386.) A process shares its browser, app server and Spark session
#: among its tests (tests/conftest.py, tests/e2e/conftest.py).
PARALLEL = ["-n", "2", "--dist", "loadfile"]

#: The fast tier: what a developer runs while working (CI runs everything).
FAST = ["-m", "not e2e and not spark and not slow", "-p", "no:cacheprovider"]


def test_command(extra: list[str]) -> list[str]:
    """The pytest command for ``dev.py test [--fast] [pytest arguments]``: the arguments come
    last, so ``-n 0`` runs the tests in one process (to debug one, say)."""
    fast = "--fast" in extra
    rest = [a for a in extra if a != "--fast"]
    return [str(PYTHON), "-m", "pytest", *PARALLEL, *(FAST if fast else []), *rest]


def test_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The environment pytest runs in: ``env`` with Python's bytecode cache allowed.

    PYTHONDONTWRITEBYTECODE (set in many Docker images) makes every test process compile the
    project and rewrite the assertions of every test module again: about 12 CPU seconds per
    process, three processes in the fast tier. The cache goes to ``__pycache__/`` folders,
    which git ignores.
    """
    return {name: value for name, value in env.items() if name != "PYTHONDONTWRITEBYTECODE"}


def test(extra: list[str]) -> int:
    _ensure_venv("requirements-dev.txt")
    _run(PYTHON, "-m", "ruff", "check", ".")
    result = subprocess.run(test_command(extra), cwd=ROOT, env=test_environment(os.environ))
    if result.returncode == 5:
        print("pytest collected no tests: that counts as a failure.", file=sys.stderr)
        return 1
    return result.returncode


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"run", "test"}:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        return run(argv[1:]) if argv[0] == "run" else test(argv[1:])
    except subprocess.CalledProcessError as exc:
        return exc.returncode or 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
