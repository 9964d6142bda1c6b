"""The fixed text of the exported programs as Python files that ruff lints and tests import:
opendp_program.py, spark_program.py and the code they share (common.py). release.programs
fills each program's PLAN block with the plan's literals and its SHARED block with
common.py's shared code; importing a template runs no release.
"""
