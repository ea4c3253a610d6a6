"""The server's runtime: byte-bounded stores and memo (cache), work budgets and jobs (work), warm-up, preload,
the fenced Streamlit internals (streamlit_private) and the two kinds of error (errors). It knows no view."""
