"""`python3 dev.py run`: the address and port it serves on (localhost by default; a host option
and the HOST/PORT variables for showing the app from a VM)."""

from __future__ import annotations

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
