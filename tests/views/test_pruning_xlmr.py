"""AppTest: the pruning lab's built-in task for XLM-R (issue: an XLMRobertaForMaskedLM was refused with "BERT-layout
encoders (BERT, RoBERTa, ELECTRA) ... have one here, and this model has none", though XLM-R is RoBERTa's layout and
keeps its masked-LM head). A tiny random XLM-R saved here gets the masked-LM task on the sidebar text, and real
pruning of its heads; an encoder laid out otherwise (DistilBERT) is refused with the reason."""
from streamlit.testing.v1 import AppTest

import models
from bench.tiny_any import save
from experiments import masked_lm, prune_tasks

TEXT = "The river bank was dirty"


def _page(folder: str) -> AppTest:
    at = AppTest.from_file("../../app.py", default_timeout=300)
    at.session_state["model"] = "hf:"
    at.session_state["hf_spec"] = folder
    at.session_state["text"] = TEXT
    at.run()
    at.switch_page("views/pruning.py").run()
    assert not at.exception, at.exception
    return at


def test_xlm_r_with_its_masked_lm_head_is_judged_by_masked_lm_and_can_be_cut(tmp_path):
    folder = save("xlm-roberta", "masked", tmp_path)
    at = _page(folder)
    assert not at.error and not any("judges heads by a task" in i.value for i in at.info), \
        [e.value for e in [*at.error, *at.info]]
    assert at.metric and at.metric[0].label == "Masked-token accuracy"
    m = models.load("hf:" + folder)
    assert masked_lm.describe(masked_lm.task(m, TEXT)[1]) in " ".join(c.value for c in at.caption)
    at.toggle(key="prune_real").set_value(True).run()
    assert not at.exception and not at.error, at.exception or [e.value for e in at.error]
    assert any(b.label == "Pruned model (.zip)" for b in at.get("download_button"))


def test_an_encoder_laid_out_otherwise_is_refused_with_the_reason(tiny_folder):
    m = models.load("hf:" + tiny_folder("distilbert"))
    assert not prune_tasks.bert_like(m)
    said = " ".join(i.value for i in _page(tiny_folder("distilbert")).info)
    assert "this model has none: its distilbert attention is laid out otherwise." in said
