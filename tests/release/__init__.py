"""Tests of release/: real releases with OpenDP, the ledger, the programs, the CLI."""
