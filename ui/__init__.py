"""Streamlit glue shared by app.py and views/: sidebar state, cached models and traces, messages."""
