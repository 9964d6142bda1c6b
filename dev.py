"""Developer entry point: `python3 dev.py run` starts the app, `python3 dev.py test` tests it.

Needs only python3: each command creates ``.venv`` and installs what it needs first.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
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


def run() -> int:
    _ensure_venv("requirements.txt")
    port = os.environ.get("PORT", "8501")
    _run(PYTHON, "-m", "streamlit", "run", "app.py", "--server.address", "localhost",
         "--server.port", port)
    return 0


def test(extra: list[str]) -> int:
    _ensure_venv("requirements-dev.txt")
    _run(PYTHON, "-m", "ruff", "check", ".")
    result = subprocess.run([str(PYTHON), "-m", "pytest", *extra], cwd=ROOT)
    if result.returncode == 5:
        print("pytest collected no tests: that counts as a failure.", file=sys.stderr)
        return 1
    return result.returncode


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"run", "test"}:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        return run() if argv[0] == "run" else test(argv[1:])
    except subprocess.CalledProcessError as exc:
        return exc.returncode or 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
