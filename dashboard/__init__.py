"""Streamlit-facing helpers of Epsilon Lab: datasets, charts, controls and session state."""
