"""What a visitor sees of an error no view caught: in hosted mode, that one happened; the details go to the log.

Views turn bad input into one sentence; an error none of them expected still reaches Streamlit, which shows its
type, message and traceback (server paths included) in the page. In hosted mode `client.showErrorDetails` is
"none": the page says only that an error happened and was logged, while Streamlit still writes the full
traceback to the server's log (logger `streamlit.error_util`, level ERROR, "Uncaught app execution"). On a
laptop the setting stays as configured (Streamlit's default: everything shown). It does not catch anything.

    hide_details()   # every run of app.py, before the view: follows limits.current().hosted
"""
from __future__ import annotations

import streamlit as st
from streamlit import config

import limits

OPTION = "client.showErrorDetails"
_CONFIGURED = config.get_option(OPTION)  # as config.toml, the environment or the command line set it


def hide_details() -> None:
    """Set Streamlit's error details for this process to "none" when hosted, else back to as configured."""
    want = "none" if limits.current().hosted else _CONFIGURED
    if config.get_option(OPTION) != want:
        st.set_option(OPTION, want)
