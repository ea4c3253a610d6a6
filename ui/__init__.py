"""Streamlit glue shared by app.py and pages/: sidebar state, cached models and traces, messages."""
