"""Absurd link values for each view's own widgets: never an exception; a number that is not finite is dropped
with the link's one notice (ui/runtime/streamlit_private.py: refuse_endless_numbers), and hosted mode shows no error
details.

Each view opens on the session's first run, as a link does, with every one of its own widget keys in the query
string. The keys are the view's literal `key="<prefix>..."` names in views/ and ui/ plus those its page holds
after a plain run (f-string keys, widgets in tabs), so a widget added later is covered too. Values rotate over
the keys: one round with values that are not finite numbers, one with empty, negative, non-numeric and huge
finite values.
"""
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import limits
from ui.views import present

ROOT = Path(__file__).resolve().parents[2]
ENDLESS = ("inf", "1e400", "-1e309", "NaN", "9" * 10_000, "-inf")
ODD = ("", "abc", "-5", "1e300", "99999999999999999999", "0x10", "1,5")
SIDEBAR = {"precision": {"model": "vit"}}  # the held-out digit is a widget of the vision model only
CASES = [(v.stem, v.prefix) for v in present() if v.prefix] + [("home", "lesson")]
LITERAL = re.compile(r'key="(\w+)"')
SOURCES = "\n".join(p.read_text() for folder in ("views", "ui") for p in sorted((ROOT / folder).glob("*.py")))


def _app() -> AppTest:
    return AppTest.from_file("../../app.py", default_timeout=180)


def _keys(stem: str, prefix: str) -> list[str]:
    """The view's own widget keys: literal ones in the source, and those a plain run of the page holds."""
    at = _app()
    for k, v in SIDEBAR.get(stem, {}).items():
        at.query_params[k] = v
    at.switch_page(f"views/{stem}.py").run()
    held = [k for k in at.session_state if k.startswith(prefix)]
    return sorted({k for k in LITERAL.findall(SOURCES) if k.startswith(prefix)} | set(held))


def _open(stem: str, params: dict) -> AppTest:
    at = _app()
    for k, v in params.items():
        at.query_params[k] = v
    return at.switch_page(f"views/{stem}.py").run()


@pytest.mark.slow  # three runs of the view: 10-60 s each on the 2-core machine
@pytest.mark.parametrize(("stem", "prefix"), CASES)
def test_absurd_values_of_a_views_own_widgets(stem, prefix):
    keys = _keys(stem, prefix)
    assert keys, f"no widget keys found for {stem}"
    for values in (ENDLESS, ODD):
        params = SIDEBAR.get(stem, {}) | {k: values[i % len(values)] for i, k in enumerate(keys)}
        at = _open(stem, params)
        assert not at.exception, (stem, params.keys(), at.exception[0].message)
        if values is not ENDLESS:
            continue
        notice = " ".join(w.value for w in at.warning if "link parameters were not used" in w.value)
        numeric = [k for k in keys if k in at.session_state and isinstance(at.session_state[k], (int, float))
                   and not isinstance(at.session_state[k], bool)]
        for key in numeric:  # a number widget on screen: the endless value was dropped, and the notice says so
            assert f"'{key}'" in notice and key not in at.query_params, (key, notice)


def test_the_issues_links_get_the_notice_not_a_traceback():
    at = _open("kv_cache", {"kv_context": "inf", "kv_layers": "1e400"})
    assert not at.exception
    notice = " ".join(w.value for w in at.warning)
    assert "'kv_context' ('inf' is not a choice here)" in notice and "'kv_layers'" in notice
    assert "kv_context" not in at.query_params and at.session_state["kv_context"] > 0


ISSUE_LINKS = [("sinks", {"sink_tokens": "inf"}), ("sinks", {"sink_w": "inf"}), ("seq2seq", {"s2s_beam": "inf"}),
               ("vision", {"vis_digit": "inf"}), ("tiled", {"eff_qblock": "inf"}), ("kv_cache", {"kv_context": "inf"}),
               ("kv_cache", {"kv_hf_tokens": "inf"}), ("precision", {"model": "vit", "quant_digit": "inf"})]


@pytest.mark.parametrize(("stem", "params"), ISSUE_LINKS)
def test_each_link_the_issue_found_a_traceback_behind_gets_the_notice(stem, params):
    """The 8 links of the hosting issue, each on its own: the number widget is on the page with a finite value, the
    link's notice names it, and the address drops it."""
    at = _open(stem, params)
    key = next(k for k in params if k != "model")
    assert not at.exception, at.exception
    assert isinstance(at.session_state[key], (int, float)) and abs(at.session_state[key]) < 1e9, key  # drawn, finite
    notice = " ".join(w.value for w in at.warning if "link parameters were not used" in w.value)
    assert f"'{key}' ('inf' is not a choice here)" in notice and key not in at.query_params, notice


def script_that_fails(root: str):
    import sys

    sys.path.insert(0, root)
    from ui.runtime import errors

    errors.hide_details()
    raise RuntimeError("secret detail at /srv/app/views/x.py")


@pytest.mark.parametrize("hosted", [True, False])
def test_hosted_mode_hides_error_details_and_logs_them(hosted, monkeypatch, capsys):
    monkeypatch.setenv(limits.ENV, "1" if hosted else "0")
    at = AppTest.from_function(script_that_fails, kwargs={"root": str(ROOT)}).run()
    shown = at.exception[0]
    assert ("secret detail" in shown.message) is not hosted
    assert bool(shown.stack_trace) is not hosted
    logged = capsys.readouterr()
    assert "secret detail at /srv/app/views/x.py" in logged.out + logged.err  # the server's log has it all


@pytest.mark.slow  # the corpus view runs MiniLM over the upload
def test_a_link_column_the_uploaded_csv_does_not_have_is_reported():
    # the Column box appears only once a CSV is uploaded: the link's notice waits for that run
    at = _open("corpus", {"corpus_source": "Upload", "corpus_column": "99"})
    assert not at.exception and not any("corpus_column" in w.value for w in at.warning)
    at.file_uploader(key="corpus_upload").upload("notes.csv", b"id,text\n1,The cat sat.\n2,Dogs bark.\n").run()
    assert not at.exception
    assert any("'corpus_column' ('99' is not a choice here)" in w.value for w in at.warning)
    assert at.selectbox(key="corpus_column").value == 0 and "corpus_column" not in at.query_params
