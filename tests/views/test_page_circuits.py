"""AppTest: the Circuits view on the built-in gpt and induction models, the induction path in its table, bad input."""
import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import limits
import models
from tests.views.view_at import finished, open_linked
from viz.circuits import NODES as NODE_TRACE


def _app(**params) -> AppTest:
    return open_linked("circuits", 300, **params)


def _done(at: AppTest) -> AppTest:
    return finished(at, "circuits", 300)


def _heads(m, text: str, seg: int = 10) -> tuple[int, int]:
    """The layer-0 head that most attends to the previous token, and the layer-1 head that most attends to the
    token after the earlier copy (as bench.circuits finds them, from attention, not from edges)."""
    w = m.attend(text).weights                                              # (L, H, T, T)
    T, half = w.shape[-1], seg // 2
    prev = int(np.argmax([np.diagonal(w[0, h], -1).mean() for h in range(w.shape[1])]))
    back = [(t, t - seg + 1) for t in range(T - half, T)]
    return prev, int(np.argmax([np.mean([w[1, h, q, k] for q, k in back]) for h in range(w.shape[1])]))


def test_induction_shows_the_circuit_with_the_previous_token_to_induction_key_edge():
    from data.circuit_tasks import repeats

    at = _done(_app(model="induction"))
    assert not at.exception and not at.error
    assert [h.value for h in at.header] == ["The circuit", "Faithfulness", "EAP against exact patching"]
    assert len(at.get("plotly_chart")) == 3 and len(at.title) == 1
    prev, ind = _heads(models.load("induction"), repeats(1)[0][0])
    table = at.dataframe[0].value
    assert list(table.columns) == ["sender", "receiver", "score"] and len(table) == 20
    assert (f"L0H{prev}", f"L1H{ind}.k") in set(zip(table.sender, table.receiver))
    assert "area under the curve" in at.markdown[0].value
    assert not at.warning  # its pairs separate: no word that faithfulness says little


def test_tiny_sorts_digits():
    at = _done(_app(model="tiny"))
    assert not at.exception and not at.error and len(at.get("plotly_chart")) == 3
    assert any("sorting digits" in c.value for c in at.caption)
    assert not at.warning


def test_pairs_whose_corrupted_run_keeps_the_answer_get_a_word_that_faithfulness_says_little():
    """A pair whose corrupted text hardly moves the answer (a name that does not decide the bracket): with no edge
    clean the model keeps most of its logit difference, so faithfulness near 1 means little (Patching warns of the
    same gap); with one pair, mean ablation is corrupt ablation; a threshold no edge reaches says so."""
    at = AppTest.from_file("../../app.py", default_timeout=300)
    for key, value in (("model", "gpt"), ("circ_task", "Pairs from a CSV file"), ("circ_ablation", "mean"),
                       ("circ_keep", "|score| ≥ threshold"), ("circ_threshold", "100")):
        at.query_params[key] = value
    at.run()
    _csv(at, 'clean,corrupt,answer,wrong\n"x = sum(values","y = sum(values",),]\n')
    at = _done(at.switch_page("views/circuits.py").run())
    assert not at.exception and not at.error, [e.value for e in at.error]
    warned = " ".join(w.value for w in at.warning)
    assert "With no edge clean (every edge reading the mean of the corrupted runs) the model already keeps" in warned
    assert "says little here" in warned
    assert any("mean ablation equals corrupt ablation" in c.value for c in at.caption)
    assert any("No edge reaches |score| ≥ 100" in i.value for i in at.info)


def test_gpt_brackets_and_eap_ig():
    at = _done(_app(model="gpt", circ_pairs="2", circ_method="EAP-IG", circ_steps="2", circ_top="10"))
    assert not at.exception and not at.error and len(at.get("plotly_chart")) == 3
    assert len(at.dataframe[0].value) == 10 and "top **10** edges" in at.markdown[0].value
    assert at.header[-1].value == "EAP-IG against exact patching"  # the method picked, not always EAP
    assert not at.warning  # the brackets' pairs separate
    check = at.get("plotly_chart")[-1].proto.spec
    assert "EAP-IG's estimate against exact patching" in check and "EAP-IG estimate of the metric" in check


def _csv(at: AppTest, text: str) -> None:
    from streamlit.runtime.uploaded_file_manager import UploadedFile, UploadedFileRec

    rec = UploadedFileRec(file_id="f", name="pairs.csv", type="text/csv", data=text.encode())
    at.session_state["circ_csv"] = UploadedFile(rec, None)


@pytest.mark.parametrize(("csv", "said"), [
    (None, "Upload a CSV file"),
    ("", "not a CSV of pairs"),
    ("clean,corrupt,answer,wrong\n", "no pairs under its header"),
    ("a,b,c\n1,2,3\n", "The CSV's columns are a, b, c"),
    ("clean,corrupt,answer,wrong\nba ke mi ba,ba ke mi ba ke,ke,mi\n", "must line up token by token"),
])
def test_bad_csv_gets_one_sentence(csv, said):
    at = AppTest.from_file("../../app.py", default_timeout=300)
    at.query_params["model"] = "induction"
    at.query_params["circ_task"] = "Pairs from a CSV file"
    at.run()
    if csv is not None:
        _csv(at, csv)
    at.switch_page("views/circuits.py").run()
    assert not at.exception
    assert len(at.error) == 1 and said in at.error[0].value, [e.value for e in at.error]
    assert not at.get("plotly_chart")


def test_a_model_circuits_refuse_gets_a_switch_and_hosted_mode_bounds_the_work(monkeypatch):
    at = _app(model="bert")
    assert not at.exception and "Circuits follow a" in at.info[0].value  # decoder-only, or with encoder-decoders
    assert [b.key for b in at.button][:3] == ["circ_to_gpt", "circ_to_induction", "circ_to_seq2seq-transformer"]
    at.button(key="circ_to_gpt").click().run()
    assert at.sidebar.selectbox(key="model").value == "gpt"
    monkeypatch.setenv(limits.ENV, "1")
    at = _app(model="gpt", circ_pairs="64", circ_method="EAP-IG", circ_steps="100")
    assert not at.exception and "over the" in at.error[0].value and not at.get("plotly_chart")


def test_a_head_of_the_circuit_opens_in_inside_a_head_on_the_first_clean_text():
    from data.circuit_tasks import repeats

    at = _done(_app(model="induction"))
    at.selectbox(key="circ_head").set_value("L1H3").run()
    at.button(key="circ_open").click().run()
    assert not at.exception and at.title[0].value == "Inside one head"
    assert (at.selectbox(key="ih_ind_layer").value, at.selectbox(key="ih_ind_head").value) == (1, 3)
    assert at.sidebar.text_area(key="text").value == repeats(1)[0][0]


def _ranked(E):
    """edge_scores' table as the view ranks it: strongest |score| first, ties in graph order reversed."""
    return E.iloc[E.score.abs().argsort(kind="stable")[::-1]].reset_index(drop=True)


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    from tests.data.names_gpt2 import save

    return save(tmp_path_factory.mktemp("names") / "gpt2")


def _hf(folder: str, **params) -> AppTest:
    return open_linked("circuits", state={"model": "hf:", "hf_spec": folder}, **params)


def test_the_names_task_on_a_word_level_gpt2_gives_edge_scores_table(gpt2):
    from experiments.circuits import edge_scores
    from experiments.circuits_task import NAMES, names_pairs

    at = _done(_hf(gpt2, circ_task=NAMES, circ_pairs="3"))
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert NAMES in at.radio(key="circ_task").options and at.radio(key="circ_task").value == NAMES
    assert any("IOI, Wang et al. 2023" in c.value for c in at.caption)
    m = models.load("hf:" + gpt2)
    want = _ranked(edge_scores(m, names_pairs(m, 3))).head(20)
    table = at.dataframe[0].value
    assert list(zip(table.sender, table.receiver)) == list(zip(want.sender, want.receiver))
    assert np.allclose(table.score, want.score, atol=5e-5)


def test_the_names_task_is_not_offered_on_a_builtin():
    at = _app(model="gpt")
    assert "Names (indirect object)" not in at.radio(key="circ_task").options
    assert at.radio(key="circ_task").value == "Built-in task"


def test_an_answer_the_tokenizer_does_not_know_is_refused(gpt2):
    at = AppTest.from_file("../../app.py", default_timeout=300)
    at.query_params["circ_task"] = "Pairs from a CSV file"
    at.session_state["model"] = "hf:"
    at.session_state["hf_spec"] = gpt2
    at.run()
    _csv(at, "clean,corrupt,answer,wrong\nWhen Mary and John went to the store,"
             "When Mary and John went to the park, Zed, John\n")
    at.switch_page("views/circuits.py").run()
    assert not at.exception and not at.get("plotly_chart")
    assert [e.value for e in at.error] == ["The answer ' Zed' is not in this tokenizer's vocabulary, so it would be "
                                           "read as its unknown token <unk>: give a word it knows."]


def test_a_threshold_keeps_exactly_the_edges_whose_score_passes_it_with_their_faithfulness():
    from data.circuit_tasks import repeats
    from experiments.circuits import edge_scores, faithfulness

    at = _done(_app(model="induction", circ_keep="|score| ≥ threshold", circ_threshold="0.3"))
    assert not at.exception and not at.error
    m, pairs = models.load("induction"), repeats(4)
    E = edge_scores(m, pairs)
    want = E[E.score.abs() >= 0.3]
    table = at.dataframe[0].value
    assert 5 < len(want) < 20 and len(table) == len(want)  # not one of the curve's own counts: measured for it
    assert set(zip(table.sender, table.receiver)) == set(zip(want.sender, want.receiver))
    f = faithfulness(m, pairs, want)
    assert f"**{len(want)}** edges whose |score| ≥ 0.3 clean, the model keeps **{f:.2f}**" in at.markdown[0].value
    assert at.number_input(key="circ_top").disabled
    at.number_input(key="circ_threshold").set_value(1000.0).run()  # no edge passes: an empty circuit, said so
    assert not at.exception and not at.error and len(at.dataframe[0].value) == 0


def test_a_builtin_task_left_in_the_address_falls_back_on_a_model_without_one(gpt2):
    at = _hf(gpt2, circ_task="Built-in task")
    assert not at.exception and at.radio(key="circ_task").value == "Names (indirect object)"


def test_a_head_of_the_circuit_opens_in_heads_on_the_first_clean_text():
    from data.circuit_tasks import repeats

    at = _done(_app(model="induction"))
    table, options = at.dataframe[0].value, at.selectbox(key="circ_head").options
    assert options[0] in {n.split(".")[0] for n in [*table.sender, *table.receiver]} and len(options) == 8
    at.selectbox(key="circ_head").set_value("L0H2").run()
    at.button(key="circ_open_heads").click().run()
    assert not at.exception and at.title[0].value == "Every head at a glance"
    assert (at.selectbox(key="heads_layer").value, at.selectbox(key="heads_head").value) == (0, 2)
    assert at.sidebar.text_area(key="text").value == repeats(1)[0][0]



def _graph_nodes(at: AppTest) -> list[str]:
    """The names the circuit graph's node trace carries (its customdata)."""
    import json

    fig = json.loads(at.get("plotly_chart")[0].proto.spec)
    return next(t for t in fig["data"] if t.get("name") == NODE_TRACE)["customdata"]


def test_the_date_model_draws_its_encoder_decoder_and_cross_attention_with_edge_scores_table():
    from data.circuit_tasks import years
    from experiments.circuits import edge_scores

    at = _done(_app(model="seq2seq-transformer"))
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.radio(key="circ_task").value == "Built-in task" and len(at.get("plotly_chart")) == 3
    assert any("dates to ISO 8601" in c.value and "An encoder-decoder" in c.value for c in at.caption)
    nodes = _graph_nodes(at)
    assert {n.split(".")[0] for n in nodes} == {"enc", "dec", "cross", "logits"}
    assert {"enc.embed", "enc.L1H3", "enc.L1.mlp", "dec.embed", "dec.L0H0", "cross.L1H2", "dec.L1.mlp"} <= set(nodes)
    want = _ranked(edge_scores(models.load("seq2seq-transformer"), years(4))).head(20)
    table = at.dataframe[0].value
    assert list(zip(table.sender, table.receiver)) == list(zip(want.sender, want.receiver))
    assert np.allclose(table.score, want.score, atol=5e-5)
    assert "circ_open" not in [b.key for b in at.button]  # Inside a head shows decoder-only models
    assert any("Inside a head shows decoder-only models" in c.value for c in at.caption)
    heads = at.selectbox(key="circ_head")
    assert heads.options[0] in {n.rpartition(".")[0] if n[-2:] in (".q", ".k", ".v") else n
                                for n in [*table.sender, *table.receiver]}
    assert heads.options.index("enc.L1H3") < heads.options.index("dec.L0H0") < heads.options.index("cross.L0H0")
    heads.set_value("cross.L1H2").run()
    at.button(key="circ_open_heads").click().run()
    assert not at.exception and at.title[0].value == "Every head at a glance"
    assert at.radio(key="heads_part").value == "cross"
    assert (at.selectbox(key="heads_layer").value, at.selectbox(key="heads_head").value) == (1, 2)
    assert at.sidebar.text_area(key="text").value == years(1)[0][0]


def test_a_tiny_bart_folder_draws_its_stacks_on_the_patching_views_pair(tiny_folder):
    from experiments.circuits import edge_scores
    from ui.patching import IOI_LETTERS

    folder = tiny_folder("bart", layers=1)
    at = _done(_hf(folder, circ_task="The Patching view's pair"))
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert {n.split(".")[0] for n in _graph_nodes(at)} == {"enc", "dec", "cross", "logits"}
    pair = (IOI_LETTERS.clean, IOI_LETTERS.corrupt, IOI_LETTERS.answer, IOI_LETTERS.wrong)
    first = (f"the first: “{pair[0]}”, corrupted “{pair[1]}”: “{pair[2]}” against “{pair[3]}”.")  # not a tuple
    assert any(first in c.value for c in at.caption) and not any("('" in c.value for c in at.caption)
    want = _ranked(edge_scores(models.load("hf:" + folder), [pair])).head(20)
    table = at.dataframe[0].value
    assert list(zip(table.sender, table.receiver)) == list(zip(want.sender, want.receiver))
    assert np.allclose(table.score, want.score, atol=5e-5)
