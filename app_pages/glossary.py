"""Glossary page: the terms the other pages use, one heading (and URL anchor) each, with a
short plain definition (``dashboard.glossary``); the pages link a term where it first appears.
"""

from __future__ import annotations

import streamlit as st

from dashboard.glossary import TERMS

st.title("Glossary")
st.caption("The words these pages use, in a few plain sentences each. A link from another "
           "page opens the term here.")
for anchor, term in TERMS.items():
    st.subheader(term.title, anchor=anchor)
    st.markdown(term.definition)
