"""AppTest of the pruning page with small settings: scoring, toggling heads, curve, real pruning."""
import pytest
import torch
from streamlit.testing.v1 import AppTest


@pytest.mark.slow
def test_pruning_page_small():
    at = AppTest.from_file("../../app.py", default_timeout=120)
    at.run()
    at.switch_page("views/pruning.py").run()
    assert not at.exception, at.exception
    at.slider(key="prune_score").set_value(8)
    at.slider(key="prune_eval").set_value(10).run()
    assert not at.exception, at.exception
    full = at.metric[0].value
    assert full.endswith("%") and at.metric[0].label == "Retrieval accuracy"
    assert len(at.get("plotly_chart")) == 2  # importance grid and the gated attention overview
    assert any(c.value.startswith("Patterns over 24 built-in sentences") for c in at.caption)

    at.multiselect(key="prune_off").set_value([f"L{l} H{h}" for l in range(6) for h in range(12)]).run()
    assert not at.exception, at.exception
    off = at.multiselect(key="prune_off")
    assert len(off.value) == len(off.options) == 72  # every head off
    assert "vs all heads" in at.metric[0].delta

    at.multiselect(key="prune_off").set_value(["L0 H0"]).run()
    at.slider(key="prune_seeds").set_value(2)
    at.toggle(key="prune_curve").set_value(True).run()
    assert not at.exception, at.exception
    assert any("At 40 % removed" in c.value for c in at.caption)

    at.toggle(key="prune_real").set_value(True).run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    assert list(table["batch"]) == [1, 16] and (table["pruned (ms)"] > 0).all()
    gap = next(c.value for c in at.caption if "Pruned vs gated" in c.value)
    assert float(gap.split("difference ")[1].rstrip(".")) < 1e-5


def test_pruning_page_on_another_encoder_folder(tmp_path):
    """hf:<folder>: a 2-layer, 4-head random BERT with MiniLM's tokenizer; the grid follows its shape."""
    from transformers import AutoTokenizer, BertModel

    from models.hf import minilm_path
    from tests.models.test_gates_prune import tiny_bert

    tokenizer = AutoTokenizer.from_pretrained(minilm_path())
    config = tiny_bert().config
    config.vocab_size = tokenizer.vocab_size
    torch.manual_seed(0)
    BertModel(config).eval().save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    at = AppTest.from_file("../../app.py", default_timeout=120)
    at.session_state["model"] = "hf:"
    at.session_state["hf_spec"] = str(tmp_path)
    at.run()
    at.switch_page("views/pruning.py").run()
    assert not at.exception, at.exception
    at.slider(key="prune_score").set_value(8)
    at.slider(key="prune_eval").set_value(10).run()
    assert not at.exception, at.exception
    assert len(at.multiselect(key="prune_off").options) == 8  # the folder's 2 x 4 heads
    at.multiselect(key="prune_off").set_value(["L1 H3"]).run()
    at.toggle(key="prune_real").set_value(True).run()
    assert not at.exception, at.exception
    gap = next(c.value for c in at.caption if "Pruned vs gated" in c.value)
    assert float(gap.split("difference ")[1].rstrip(".")) < 1e-5


def test_pruning_page_explains_other_models():
    at = AppTest.from_file("../../app.py", default_timeout=60)
    at.session_state["model"] = "seq2seq-luong"
    at.run()
    at.switch_page("views/pruning.py").run()
    assert not at.exception and "BERT-layout encoders" in at.info[0].value and "language-model head" in at.info[0].value
    assert {b.key for b in at.button} >= {"prune_to_bert", "prune_to_tiny"}


def test_pruning_page_judges_a_decoders_heads_by_next_token_accuracy():
    """The built-in gpt: gradient importance of the next-token loss on held-out windows, and switching a head off
    moves the next-token accuracy exactly as the gated model computed by hand; real pruning is offered (a GPT-2)."""
    import numpy as np

    import models
    from experiments import next_token_task
    from models import gates

    at = AppTest.from_file("../../app.py", default_timeout=180)
    at.session_state["model"] = "gpt"
    at.run()
    at.switch_page("views/pruning.py").run()
    assert not at.exception, at.exception
    at.slider(key="prune_score").set_value(4)
    at.slider(key="prune_eval").set_value(4).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.metric[0].label == "Next-token accuracy"
    assert any("Task: next-token prediction" in c.value for c in at.caption)
    at.multiselect(key="prune_off").set_value(["L0 H0", "L1 H2"]).run()
    assert not at.exception, at.exception
    gpt = models.load("gpt")
    held = next_token_task.windows(gpt, "gpt", 16, 4)
    with gates.gated(gpt.model, gates.mask(gates.head_counts(gpt.model), {0: [0], 1: [2]})):
        want = next_token_task.accuracy(gpt.model, held)
    assert at.metric[0].value == f"{want:.1%}"
    assert any(t.key == "prune_real" for t in at.toggle)  # exported as tests/views/test_pruning_decoder_export.py
    grads = next_token_task.score_heads(gpt, "gpt", 4)[0]
    assert grads.shape == (4, 4) and np.allclose(np.linalg.norm(grads, axis=1), 1)


def test_the_importance_grid_is_built_once_per_server_and_the_gated_map_once_per_text(monkeypatch):
    """MiniLM's importance grid depends on the paraphrase task only: a fresh link with another sentence draws the
    kept figure; the gated attention map is kept per text, and a rerun builds neither. Each equals a fresh build."""
    import ui.pruning
    import viz.heads
    import viz.pruning
    from tests.views.kept_figures import charts, count_builds, counts, same_figure
    from ui.runtime import cache

    fresh = {"importance_grid": viz.pruning.importance_grid, "overview": viz.heads.overview}
    cache.STORES["results"].clear()
    built = count_builds(monkeypatch, viz.pruning, "importance_grid")
    count_builds(monkeypatch, ui.pruning, "overview", calls=built)  # imported there by name

    def page(text: str) -> AppTest:
        at = AppTest.from_file("../../app.py", default_timeout=120)
        for key, value in {"text": text, "prune_score": 8, "prune_eval": 10}.items():
            at.session_state[key] = value
        at.run()
        at.switch_page("views/pruning.py").run()
        assert not at.exception, at.exception
        return at

    first = page("The otter slid into the river.")
    assert counts(built) == {"importance_grid": 1, "overview": 1}
    second = page("A heron waited in the reeds.")
    second.slider(key="prune_seeds").set_value(4).run()  # a rerun
    assert not second.exception and counts(built) == {"importance_grid": 1, "overview": 2}
    grid, gated = charts(second)
    assert grid == charts(first)[0] and gated != charts(first)[1]
    (grid_args, _), = built["importance_grid"]
    assert same_figure(grid, fresh["importance_grid"](*grid_args))
    assert same_figure(gated, fresh["overview"](*built["overview"][1][0]))
    second.multiselect(key="prune_off").set_value(["L0 H0"]).run()  # a head off: another grid and gated map
    assert not second.exception and counts(built) == {"importance_grid": 2, "overview": 3}
