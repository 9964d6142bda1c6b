"""Fixtures shared by the mechanism tests: OpenDP with its contrib features on."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def opendp():
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp
