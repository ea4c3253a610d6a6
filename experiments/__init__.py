"""Code that runs a model (or a kernel) to measure it; nothing here draws or imports streamlit."""
