"""What a visitor sees of an error no view caught: in hosted mode, that one happened; the details go to the log.

Views turn bad input into one sentence; an error none of them expected still reaches Streamlit, which shows its
type, message and traceback (server paths included) in the page. In hosted mode `client.showErrorDetails` is
"none": the page says only that an error happened and was logged, while Streamlit still writes the full
traceback to the server's log (logger `streamlit.error_util`, level ERROR, "Uncaught app execution"). On a
laptop the setting stays as configured (Streamlit's default: everything shown).

`report` is what app.py does with an exception a view raised: a UserError (limits.errors) is the user's, shown
as its sentence; anything else is a bug, logged with its traceback under a short id. Hosted, the visitor sees a
notice with that id to quote, never the traceback; on a laptop it is raised again, so Streamlit shows it whole.

    hide_details()   # every run of app.py, before the view: follows limits.current().hosted
    try:
        page.run()
    except Exception as err:
        report(err, page.url_path)
"""
from __future__ import annotations

import logging
import secrets

import streamlit as st
from streamlit import config

import limits
from limits.errors import UserError

OPTION = "client.showErrorDetails"
_CONFIGURED = config.get_option(OPTION)  # as config.toml, the environment or the command line set it


def hide_details() -> None:
    """Set Streamlit's error details for this process to "none" when hosted, else back to as configured."""
    want = "none" if limits.current().hosted else _CONFIGURED
    if config.get_option(OPTION) != want:
        st.set_option(OPTION, want)


_log = logging.getLogger(__name__)


def notice(ref: str) -> str:
    """'3f9a1c2e' -> the one line a visitor sees in hosted mode."""
    return (f"Something went wrong on this page. It was logged as error {ref}: quote {ref} if you report it, "
            "or try another setting.")


def report(err: Exception, where: str = "") -> str | None:
    """Show an exception a view did not catch: a UserError as its sentence (-> None). Anything else, hosted: logged
    with its traceback under a new id, and a notice with that id on the page (-> the id); on a laptop: raised
    again, and Streamlit shows it whole and logs it."""
    if isinstance(err, UserError):
        st.error(str(err))
        return None
    if not limits.current().hosted:
        raise err
    ref = secrets.token_hex(4)
    _log.error("error %s on page %r: %s", ref, where, type(err).__name__, exc_info=err)
    st.error(notice(ref), icon="⚠️")
    return ref
