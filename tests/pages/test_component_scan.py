"""The test session's shortcut for AppTest: the scan of installed Streamlit components runs
once per process (tests/conftest.py) and answers what a fresh scan answers."""

from __future__ import annotations

from streamlit.components.v2 import manifest_scanner

from tests.conftest import open_app


def test_each_apptest_sees_the_components_a_fresh_scan_finds():
    open_app()
    scan = manifest_scanner.scan_component_manifests
    assert getattr(scan, "scanned_once", False)   # the shortcut is in place
    fresh = scan.__wrapped__()
    assert [(m.name, root) for m, root in scan()] == [(m.name, root) for m, root in fresh]
    open_app()   # a second AppTest runs with the answer reused
    assert manifest_scanner.scan_component_manifests is scan


def test_a_script_is_compiled_once_per_text_and_anew_when_it_changes(tmp_path):
    from streamlit.runtime.scriptrunner.script_cache import ScriptCache

    open_app()
    assert getattr(ScriptCache.get_bytecode, "compiled_once", False)   # the shortcut is in place
    script = tmp_path / "page.py"
    script.write_text("x = 1\n", encoding="utf-8")
    first = ScriptCache().get_bytecode(str(script))
    assert ScriptCache().get_bytecode(str(script)) is first     # another AppTest's cache
    namespace: dict = {}
    exec(first, namespace)
    assert namespace["x"] == 1
    script.write_text("x = 2\n", encoding="utf-8")
    changed = ScriptCache().get_bytecode(str(script))
    exec(changed, namespace)
    assert namespace["x"] == 2
    assert changed.co_filename == first.co_filename == str(script)
