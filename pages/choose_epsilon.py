"""Placeholder until this page is built."""

import streamlit as st

st.title("choose_epsilon")
st.info("This page is being built.")
