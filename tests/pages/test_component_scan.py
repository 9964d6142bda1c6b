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
