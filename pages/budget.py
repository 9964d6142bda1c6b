"""Placeholder until this page is built."""

import streamlit as st

st.title("budget")
st.info("This page is being built.")
