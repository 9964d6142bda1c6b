"""Datasets as the dashboard sees them: the engine relation behind every page, the true
answers and column facts computed by the engine, and the server's data folder."""
