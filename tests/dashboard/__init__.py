"""Tests of dashboard/ (analysis, data, exports …) without running a page."""
