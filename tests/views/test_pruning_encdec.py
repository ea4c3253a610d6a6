"""AppTest of the pruning lab on an encoder-decoder: a tiny random T5 written here is judged by its target's
next-token prediction (teacher forcing on held-out paraphrase pairs), its heads gated in each stack; the metric with
heads off equals the same measure taken by hand with transformers' own loss path and a hook written here."""
import pytest
import torch
from streamlit.testing.v1 import AppTest

from bench import tiny_families
from experiments import encdec_task
from tests.views.view_at import open_view


def _page(folder) -> AppTest:
    return open_view("pruning", model="hf:", hf_spec=str(folder), text="The train leaves at seven.", prune_score=8,
                     prune_eval=10)


@pytest.mark.slow
def test_t5_heads_are_judged_by_the_targets_next_token_prediction(tmp_path, one_thread):
    folder = tiny_families.write("t5", tmp_path / "t5")
    at = _page(folder)
    assert not at.error, [e.value for e in at.error]
    said = " ".join(c.value for c in at.caption)
    assert "Task: the target's next-token prediction" in said
    assert "held-out paraphrase pairs: the second sentence as the target of the first, teacher forcing" in said
    rows = next(c.value for c in at.caption if c.value.startswith("Rows: "))
    assert "L0 = encoder 0" in rows and "decoder 0 self" in rows and "decoder 0 cross" in rows
    names = at.multiselect(key="prune_off").options
    assert len(names) == 3 * 2 * 4  # encoder, decoder self, cross × 2 layers × 4 heads
    at.multiselect(key="prune_off").set_value(["L0 H1", "L4 H2"]).run()   # encoder 0 head 1, decoder 0 cross head 2
    assert not at.exception, at.exception
    shown = at.metric[0].value

    # the reference: the same pairs, transformers' model with a hook written here zeroing those heads' slices
    from transformers import T5ForConditionalGeneration

    model = T5ForConditionalGeneration.from_pretrained(folder, attn_implementation="eager").eval()
    from models.hf.encdec import load_encdec

    m = load_encdec(str(folder))
    batch = encdec_task.pairs(m, encdec_task.SCORE_MAX, 10)
    hs = model.config.d_kv

    def zero(head):
        def hook(_, args):
            x = args[0].clone()                                                # (B, T, H*hs)
            x[..., head * hs:(head + 1) * hs] = 0
            return (x,)
        return hook
    hooks = [model.encoder.block[0].layer[0].SelfAttention.o.register_forward_pre_hook(zero(1)),
             model.decoder.block[0].layer[1].EncDecAttention.o.register_forward_pre_hook(zero(2))]
    with torch.no_grad():
        logits = model(**batch).logits                                         # (B, T, V)
    for h in hooks:
        h.remove()
    scored = batch["labels"] != -100
    want = float((logits.argmax(-1) == batch["labels"])[scored].float().mean())
    assert shown == f"{want:.1%}", (shown, want)
    assert 0 < want < 1, want  # a random model still guesses some target tokens (padding and the end token)
