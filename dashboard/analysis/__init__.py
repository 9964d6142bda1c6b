"""Cached computations behind the pages: small summaries of simulations, keyed by dataset."""
