"""A real OpenID Connect provider for the browser tests: npm's ``oidc-provider`` (pinned in
``tests/e2e/oidc/package.json`` and its lock file) run by Node.js on the loopback address, with
its own login form and test accounts (``oidc/provider.mjs``).

``npm ci`` installs it the first time (``node_modules`` is not committed); Debian's ``nodejs``
and ``npm`` are installed by ``.ci/run``. Without them the tests are skipped here and fail
under CI (``CI=true``), as for Chromium.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import _drain, _free_port

FOLDER = Path(__file__).resolve().parent / "oidc"


def _need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        message = f"{tool} is not installed (apt-get install nodejs npm)"
        if os.environ.get("CI") == "true":
            pytest.fail(message + ": CI must run the sign-in tests (.ci/run installs it)")
        pytest.skip(message)
    return path


def install() -> None:
    """``npm ci`` in the provider's folder unless its packages are there (the lock file's)."""
    if (FOLDER / "node_modules" / "oidc-provider" / "package.json").exists():
        return
    npm = _need("npm")
    done = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel", "error"],
                          cwd=FOLDER, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        pytest.fail(f"npm ci failed in {FOLDER}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")


@contextlib.contextmanager
def running_provider(accounts: dict[str, dict[str, str]], *, client_id: str,
                     client_secret: str, redirect_uri: str) -> Iterator[str]:
    """Start the provider with ``accounts`` (login → {"email", "name"}) and one client; yield
    its issuer URL (``/.well-known/openid-configuration`` below it); stop it afterwards."""
    node = _need("node")
    install()
    port = _free_port()
    env = {**os.environ, "OIDC_PORT": str(port), "OIDC_CLIENT_ID": client_id,
           "OIDC_CLIENT_SECRET": client_secret, "OIDC_REDIRECT_URI": redirect_uri,
           "OIDC_ACCOUNTS": json.dumps(accounts)}
    proc = subprocess.Popen([node, "provider.mjs"], cwd=FOLDER, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    lines: list[str] = []
    reader = threading.Thread(target=_drain, args=(proc.stdout, lines), daemon=True)
    reader.start()
    issuer = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    try:
        while True:
            try:
                with urllib.request.urlopen(issuer + "/.well-known/openid-configuration",
                                            timeout=2) as response:
                    if json.load(response)["issuer"] == issuer:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                reader.join(timeout=5)
                pytest.fail(f"the OpenID Connect provider did not start:\n{''.join(lines)}")
            time.sleep(0.2)
        yield issuer
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        reader.join(timeout=10)
