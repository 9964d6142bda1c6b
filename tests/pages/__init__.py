"""AppTest tests of app_pages/: pages run in-process by streamlit.testing."""
