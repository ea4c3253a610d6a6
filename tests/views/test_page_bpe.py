"""The BPE page, run headless: it trains, replays and compares without exceptions and says what went wrong."""
from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

# the classroom package, imported first: a view run alone puts views/ first on sys.path, where views/classroom.py
# would stand in for the package when ui.classroom imports classroom.answers
import classroom.answers  # noqa: F401
from analysis import bpe
from ui.state import DEFAULT_TEXT

PAGE = "../../views/bpe.py"


def run(**state) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=60)
    for key, value in state.items():
        at.session_state[key] = value
    return at.run()


def final_tokens(at: AppTest) -> list[str]:
    frame = next(d.value for d in at.dataframe if list(d.value.columns) == ["position", "token", "id"])
    return list(frame["token"])


def ladder(at: AppTest) -> dict:
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    return next(s for s in specs if "merges turn" in s["layout"]["title"]["text"])


def test_default_page_trains_replays_and_compares():
    at = run(text="The river bank was dirty")
    assert not at.exception and not at.error
    vocab = at.slider[0].value
    tok = bpe.train_bpe(bpe.builtin_corpus(), vocab)
    assert final_tokens(at) == tok.encode("The river bank was dirty").tokens
    table = at.dataframe[0].value
    assert len(table) == vocab - bpe.min_vocab_size(bpe.builtin_corpus())
    assert list(table["pair count"])[:3] == [m.count for m in bpe.merge_table(tok, bpe.builtin_corpus())[:3]]
    assert at.slider(key="bpe_step").value == len(bpe.merge_steps(tok, "The river bank was dirty")) - 1  # the last
    words = at.dataframe[-1].value
    assert list(words["word"]) == ["The", "river", "bank", "was", "dirty"]
    assert "the" in list(words["WordPiece (MiniLM)"])


def test_step_slider_rewinds_to_the_single_symbols():
    at = run(text="bank")
    steps = len(ladder(at)["data"][0]["text"])
    at.slider(key="bpe_step").set_value(0).run()
    assert not at.exception and not any(m.value.startswith("**Step") for m in at.markdown)
    bars = ladder(at)["data"][0]
    assert bars["y"] == [0, 0, 0, 0] and bars["text"] == list("bank") and steps > 4


def test_emoji_is_unknown_to_characters_and_encoded_by_bytes():
    at = run(text="café 🙂")
    assert not at.exception
    assert any("[UNK]: 🙂" in w.value and "Bytes" in w.value for w in at.warning)
    assert final_tokens(at)[-1] == bpe.UNK
    at.radio(key="bpe_alphabet").set_value("bytes").run()
    assert not at.exception and not at.warning
    assert at.slider[0].min == 256 and "\\xf0" in "".join(final_tokens(at))


def test_empty_paste_asks_for_text():
    at = run()
    at.radio(key="bpe_source").set_value("Paste").run()
    assert not at.exception and any("empty" in i.value for i in at.info)


@pytest.mark.parametrize("size", [3000, 1_200_000])
def test_pasted_corpus_trains_and_oversized_text_is_capped_with_a_notice(size):
    line = "the bankers bank on the river bank\n"
    at = run(bpe_source="Paste", bpe_paste=line * (size // len(line)), text="bankers")
    assert not at.exception and not at.error
    capped = [w.value for w in at.warning if "capped" in w.value]
    assert bool(capped) == (size > bpe.MAX_CORPUS_BYTES)
    assert final_tokens(at) == ["bankers"]


def test_upload_without_a_file_asks_for_one():
    at = run(bpe_source="Upload")
    assert not at.exception and any("Upload" in i.value for i in at.info)


def test_page_inside_the_app_frame_replays_the_sidebar_text():
    at = AppTest.from_file("../../app.py", default_timeout=60).run()
    text = at.text_area(key="text").value
    at.switch_page("views/bpe.py").run()  # AppTest then runs the page alone: selection() gives the default text
    assert not at.exception and not at.error and text == DEFAULT_TEXT
    assert at.text_input(key="bpe_text").value == text[:120]
    tok = bpe.train_bpe(bpe.builtin_corpus(), at.slider[0].value)
    assert final_tokens(at) == tok.encode(text[:120]).tokens


def test_a_long_replay_draws_the_start_and_the_last_steps_and_says_so():
    text = "Attention lets every word in a sentence look at every other word and decide how much of each to take."
    at = run(text=text)
    steps = bpe.merge_steps(bpe.train_bpe(bpe.builtin_corpus(), at.slider[0].value), text)
    assert len(steps) > 14  # enough merges to need the window
    bars = ladder(at)["data"][0]
    assert sorted(set(bars["y"])) == list(range(13))  # the start row and the last 12 steps
    assert bars["text"][:len(text.replace(" ", ""))] == list(text.replace(" ", ""))  # the start: single symbols
    assert any(f"steps {len(steps) - 12}–{len(steps) - 1} of {len(steps) - 1}" in c.value for c in at.caption)
    at.slider(key="bpe_step").set_value(5).run()  # early steps: all of them fit, no notice
    assert sorted(set(ladder(at)["data"][0]["y"])) == list(range(6))
    assert not any("The ladder shows" in c.value for c in at.caption)


def test_the_pair_counts_figure_is_built_once_per_server_for_a_merge_table(monkeypatch):
    """The merge table's pair counts depend on the corpus and vocabulary only: another visitor's text and a rerun
    draw the kept figure, equal to a fresh build; another vocabulary size builds its own."""
    from tests.views.kept_figures import charts, count_builds, counts, same_figure
    from ui.runtime import cache
    from viz import bpe as vbpe

    fresh = vbpe.pair_counts
    cache.STORES["results"].clear()
    built = count_builds(monkeypatch, vbpe, "pair_counts")
    first = run(text="The river bank was dirty")
    second = run(text="A heron waited in the reeds")
    second.slider(key="bpe_step").set_value(1).run()  # a rerun
    assert not first.exception and not second.exception and counts(built) == {"pair_counts": 1}
    (args, _), = built["pair_counts"]
    vocab = second.slider(key="bpe_vocab").value
    corpus = bpe.builtin_corpus()
    assert args[0] == bpe.merge_table(bpe.train_bpe(corpus, vocab, args[1]), corpus)  # the page's merge table
    assert same_figure(charts(second)[0], fresh(*args)) and charts(second)[0] == charts(first)[0]
    second.slider(key="bpe_vocab").set_value(vocab + 10).run()
    assert not second.exception and counts(built) == {"pair_counts": 2}
