"""Tests of plan/: the release plan, its kinds, build and identity."""
