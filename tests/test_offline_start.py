"""No request leaves the machine when the app starts: `streamlit run app.py` (any address) and
`python3 dev.py run` (localhost or every interface) look nothing up on another server.

Each start runs in a child process with an audit hook (a ``sitecustomize`` on ``PYTHONPATH``)
that records every name look-up and every connection to an address outside the loopback.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest

import dev
from tests.conftest import ROOT

pytestmark = pytest.mark.slow

#: Runs first in every Python process of the server (and its children): records look-ups of
#: and connections to any address but the loopback, one line each, in $OUTBOUND_LOG.
RECORDER = textwrap.dedent('''
    import os, sys

    _LOG = os.environ["OUTBOUND_LOG"]
    _LOCAL = {None, "", "localhost", "0.0.0.0", "::", "::1", b"localhost"}

    def _is_local(host):
        if isinstance(host, bytes):
            host = host.decode(errors="replace")
        return host in _LOCAL or str(host).startswith("127.")

    def _record(event, args):
        if event in ("socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex",
                     "socket.gethostbyaddr"):
            host = args[0]
        elif event in ("socket.connect", "socket.sendto", "socket.sendmsg"):
            address = args[-1] if event == "socket.sendto" else args[1]
            if not isinstance(address, tuple):   # a unix socket
                return
            host = address[0]
        else:
            return
        if not _is_local(host):
            with open(_LOG, "a") as log:
                log.write(f"{event} {args!r}\\n")

    sys.addaudithook(_record)
''')


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _outbound_attempts(command: list[str], port: int, tmp_path: Path) -> list[str]:
    """Start ``command`` from the repository, wait until it answers on ``port`` and has
    printed its welcome message, stop it; return what the recorder logged."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(RECORDER)
    log = tmp_path / "outbound.log"
    log.touch()
    # .streamlit/config.toml alone decides, as for a user.
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMLIT_")}
    env |= {"PYTHONPATH": str(hook), "OUTBOUND_LOG": str(log)}
    output = tmp_path / "server.out"
    with output.open("wb") as out:
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out,
                                stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health",
                                                timeout=2) as response:
                        healthy = response.read().strip() == b"ok"
                except OSError:
                    healthy = False
                # The welcome message comes after the server's address look-ups.
                if healthy and b"view your Streamlit app" in output.read_bytes():
                    break
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"the server did not start:\n{output.read_text()[-3000:]}")
                time.sleep(0.3)
            time.sleep(2)   # an external-address look-up gives up after a second or two
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
    return log.read_text().splitlines()


def test_the_recorder_records_a_look_up(tmp_path):
    """The planted leak: a process that looks up another server's name is caught."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(RECORDER)
    log = tmp_path / "outbound.log"
    code = ("import socket\n"
            "for host in ('localhost', '127.0.0.1', 'checkip.amazonaws.com'):\n"
            "    try: socket.getaddrinfo(host, 80)\n"
            "    except OSError: pass\n")
    env = {**os.environ, "PYTHONPATH": str(hook), "OUTBOUND_LOG": str(log)}
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=60)
    lines = log.read_text().splitlines()
    assert len(lines) == 1 and "checkip.amazonaws.com" in lines[0], lines


def _streamlit_run(*options: str) -> list[str]:
    return [sys.executable, "-m", "streamlit", "run", "app.py",
            "--server.fileWatcherType", "none", *options]


def _dev_run(*options: str) -> list[str]:
    command = dev.run_command(list(options), {})
    assert command[0] == str(dev.PYTHON)
    return [sys.executable, *command[1:], "--server.fileWatcherType", "none"]


@pytest.mark.parametrize("start", [
    pytest.param(lambda port: _streamlit_run("--server.port", str(port)),
                 id="streamlit run app.py"),
    pytest.param(lambda port: _dev_run("--port", str(port)), id="dev.py run"),
    pytest.param(lambda port: _dev_run("--host", "0.0.0.0", "--port", str(port)),
                 id="dev.py run --host 0.0.0.0"),
])
def test_starting_the_app_makes_no_outbound_request(start, tmp_path):
    port = _free_port()
    assert _outbound_attempts(start(port), port, tmp_path) == []
