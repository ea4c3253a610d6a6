"""The views, one file each; Streamlit runs them as pages (st.navigation in app.py), never as imports."""
