"""evalbars dashboard (placeholder until the pages land)."""

import streamlit as st

st.set_page_config(page_title="evalbars", layout="wide")
st.title("evalbars")
st.write("Error bars for LLM evals. The dashboard pages are being built.")
