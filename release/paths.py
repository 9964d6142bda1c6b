"""Where the ledger lives (and so every store beside it), and the ledger's error.

Below both :mod:`release.ledger` and :mod:`release.roles`: the roles file defaults to the
ledger's folder, and the ledger asks the roles who may write it, so neither can import the
other for the path.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["LEDGER_ENV", "LedgerError", "default_path", "ledger_path"]

#: The environment variable naming the ledger file.
LEDGER_ENV = "EPSILON_LAB_LEDGER"
_REPOSITORY = Path(__file__).resolve().parent.parent


class LedgerError(RuntimeError):
    """The ledger cannot be used (corrupt, locked, not writable, not a ledger); the message
    says what is wrong and what to do. Nothing was recorded or changed."""


def default_path() -> Path:
    """The ledger's default place: the user's data folder (XDG on Linux, Application Support
    on macOS, LOCALAPPDATA on Windows), in ``epsilon-lab/ledger.sqlite``."""
    home = Path.home()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or home / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = home / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or home / ".local" / "share")
    return base / "epsilon-lab" / "ledger.sqlite"


def ledger_path(path: str | os.PathLike | None = None) -> Path:
    """``path``, else ``EPSILON_LAB_LEDGER``, else :func:`default_path`; never inside the
    repository (a ledger committed by mistake would publish every plan)."""
    chosen = Path(path) if path is not None else (
        Path(os.environ[LEDGER_ENV]) if os.environ.get(LEDGER_ENV, "").strip()
        else default_path())
    resolved = chosen.expanduser().absolute()
    try:
        resolved.resolve().relative_to(_REPOSITORY)
    except ValueError:
        return resolved
    raise LedgerError(f"The ledger {str(resolved)!r} would be inside the repository "
                      f"{str(_REPOSITORY)!r}: put it elsewhere (set {LEDGER_ENV}).")
