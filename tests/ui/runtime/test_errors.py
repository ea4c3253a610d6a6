"""Two kinds of error (limits.errors, ui.runtime.errors): a UserError is shown as its sentence; anything else a view
did not
catch is, hosted, logged with its traceback under an id and shown as a notice with that id, never its details;
on a laptop it reaches Streamlit whole, as before."""
import re

import pytest
from streamlit.testing.v1 import AppTest

import limits
from limits.errors import UserError
from ui.classroom import lesson
from ui.runtime import errors

SECRET = "secret detail at /srv/app/views/x.py"


def test_a_user_error_is_a_value_error_and_limits_refuses_with_one():
    assert issubclass(UserError, ValueError)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(limits.ENV, "1")
        with pytest.raises(UserError, match="loads models from the hub only"):
            limits.check_model_spec("../etc")


def page(kind: str, secret: str = ""):  # run by AppTest as a script of its own: it sees only its arguments
    from limits.errors import UserError
    from ui.runtime import errors

    try:
        raise UserError("Shorten the text.") if kind == "user" else KeyError(secret)
    except Exception as err:
        errors.report(err, "x")


@pytest.mark.parametrize("hosted", [True, False])
def test_a_user_error_is_its_sentence_and_nothing_is_logged(hosted, monkeypatch, caplog):
    monkeypatch.setenv(limits.ENV, "1" if hosted else "0")
    with caplog.at_level("ERROR", logger="ui.runtime.errors"):
        at = AppTest.from_function(page, kwargs={"kind": "user"}).run()
    assert [e.value for e in at.error] == ["Shorten the text."] and not at.exception
    assert not [r for r in caplog.records if r.name == "ui.runtime.errors"]


def test_hosted_a_bug_is_a_notice_with_the_id_its_logged_traceback_carries(monkeypatch, caplog):
    monkeypatch.setenv(limits.ENV, "1")
    with caplog.at_level("ERROR", logger="ui.runtime.errors"):
        at = AppTest.from_function(page, kwargs={"kind": "bug", "secret": SECRET}).run()
    assert not at.exception and len(at.error) == 1
    ref = re.search(r"logged as error ([0-9a-f]{8})", at.error[0].value).group(1)
    assert at.error[0].value == errors.notice(ref) and SECRET not in at.error[0].value
    logged, = [r for r in caplog.records if r.name == "ui.runtime.errors"]
    assert ref in logged.getMessage() and logged.exc_info[0] is KeyError and SECRET in str(logged.exc_info[1])


def test_on_a_laptop_a_bug_reaches_streamlit_whole(monkeypatch):
    monkeypatch.setenv(limits.ENV, "0")
    at = AppTest.from_function(page, kwargs={"kind": "bug", "secret": SECRET}).run()
    assert SECRET in at.exception[0].message and at.exception[0].stack_trace and not at.error


def test_the_app_reports_what_a_view_raises(monkeypatch, caplog):
    """app.py runs every view inside report: a bug raised there (here in the lesson banner, just before the view)
    is a notice in hosted mode, and the frame around it (sidebar, link notice) is still drawn."""
    def broken(url_path):
        raise RuntimeError(SECRET)

    monkeypatch.setenv(limits.ENV, "1")
    monkeypatch.setattr(lesson, "banner", broken)
    with caplog.at_level("ERROR", logger="ui.runtime.errors"):
        at = AppTest.from_file("../../../app.py", default_timeout=120).run()
    assert not at.exception and [e.value for e in at.error if "logged as error" in e.value]
    assert at.sidebar.text_area(key="text").value and not any(SECRET in e.value for e in at.error)
    assert [r.exc_info[0] for r in caplog.records if r.name == "ui.runtime.errors"] == [RuntimeError]
