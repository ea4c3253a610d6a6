"""The suite's AppTest hang guard (tests/conftest.py): a script slower than the timeout a test gives still finishes,
so what a test checks is the work, never this machine's speed."""
from streamlit.testing.v1 import AppTest

SLOW = """
import time
import streamlit as st
time.sleep(1.5)
st.write("finished")
"""


def test_a_script_slower_than_its_timeout_still_finishes():
    at = AppTest.from_string(SLOW, default_timeout=0.5).run(timeout=0.5)
    assert not at.exception and at.markdown[0].value == "finished"
