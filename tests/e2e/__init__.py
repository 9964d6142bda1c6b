"""Browser tests: a real Chromium, driven by playwright, against `streamlit run app.py`."""
