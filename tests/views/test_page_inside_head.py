"""AppTest of views/inside_head.py through the app frame: toy, tiny decoder and BERT heads, checked
against torch's own attention and the model's own weights."""
import base64
import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from streamlit.testing.v1 import AppTest

from models.toy import build

TEXT = "The river bank was dirty"


def run(**state) -> AppTest:
    """views/inside_head.py through the app frame, with the sidebar text and the page's widgets preset."""
    at = AppTest.from_file("../../app.py", default_timeout=90)
    at.session_state["text"] = TEXT
    for key, value in state.items():
        at.session_state[key] = value
    at.switch_page("views/inside_head.py")
    return at.run()


def figure(at: AppTest, title_start: str) -> dict:
    """The figure, or the panel of a row of steps (one figure, a title annotation per panel), so titled:
    {"layout": {"xaxis", "yaxis", ...}, "data": [its trace]}."""
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        if spec["layout"].get("title", {}).get("text", "").startswith(title_start):
            return spec
        for i, note in enumerate(spec["layout"].get("annotations", [])):
            if note["text"].startswith(title_start) and len(spec["data"]) > i:
                suffix = "" if i == 0 else str(i + 1)
                axes = {a: spec["layout"][f"{a}{suffix}"] for a in ("xaxis", "yaxis")} | {"title": note["text"]}
                return {"layout": axes, "data": [spec["data"][i]]}
    raise AssertionError(f"no figure titled {title_start!r}")


def z_of(spec: dict) -> np.ndarray:
    """The first trace's z, decoded from plotly's typed-array form when it uses one."""
    z = spec["data"][0]["z"]
    if isinstance(z, dict):
        shape = [int(n) for n in str(z["shape"]).split(",")]
        return np.frombuffer(base64.b64decode(z["bdata"]), dtype=z["dtype"]).reshape(shape).astype(np.float64)
    return np.array(z, dtype=np.float64)


def test_toy_final_output_on_the_page_equals_torch_sdpa():
    at = run(ih_model="toy", ih_toy_head=1, ih_causal=True)
    assert not at.exception and not at.error
    z = z_of(figure(at, "A·V"))
    head = build(causal=True).head_qkv(TEXT, 0, 1)  # the page's defaults: d_model 8, 2 heads, seed 0
    q, k, v = (torch.from_numpy(t)[None] for t in (head.q, head.k, head.v))
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)[0].numpy()
    np.testing.assert_allclose(z, ref, atol=1e-5)
    assert any("scaled_dot_product_attention" in s.value for s in at.success)
    assert [c.value.count("  # ") for c in at.code] == [9]  # one block, a line per panel (How it works)
    assert not any("variance d_k" in m.value for m in at.markdown)  # the side sections wait for their tab
    at.session_state["ih_tab"] = "Why divide by √d_k"
    at.run()
    assert any("variance d_k" in m.value for m in at.markdown) and not at.exception
    assert not any(c.proto.spec.count("A·V") for c in at.get("plotly_chart"))  # the steps' tab is not drawn
    at.session_state["ih_tab"] = "What the causal mask does"
    at.run()
    assert any("causal mask: token i sees tokens" in c.proto.spec for c in at.get("plotly_chart"))


def test_head_choices_always_divide_d_model():
    at = run(ih_model="toy", ih_d_model=4)
    assert not at.exception
    assert list(at.selectbox(key="ih_heads").options) == ["1", "2", "4"]


def test_tiny_decoder_shows_its_answer_and_causal_steps():
    at = run(ih_model="tiny", ih_digits="31415", ih_tiny_layer=1, ih_tiny_head=2)
    assert not at.exception and not at.error
    assert any("11345" in c.value for c in at.caption)
    mask = z_of(figure(at, "mask"))
    assert mask.shape == (11, 11) and np.isnan(mask[np.triu_indices(11, k=1)]).all()


@pytest.mark.parametrize("digits", ["hello", "3.14"])
def test_tiny_decoder_explains_letters(digits):
    at = run(ih_model="tiny", ih_digits=digits)
    assert not at.exception
    assert "only sorts digits" in at.error[0].value and "31415" in at.error[0].value


def test_bert_head_matches_the_models_own_weights():
    at = run(ih_model="bert", ih_bert_layer=2, ih_bert_head=4)
    assert not at.exception and not at.error
    assert any("model's Q and K equals the model's own attention weights" in s.value for s in at.success)
    assert figure(at, "softmax")["layout"]["yaxis"]["ticktext"][0] == "[CLS]"
    k, v, x = (figure(at, f"{n}  (")["layout"] for n in ("K", "V", "X"))
    assert k["title"].endswith("× 32) · rows: key tokens") and v["title"].endswith("× 32) · rows: value tokens")
    assert k["xaxis"]["ticktext"] == ["0", "8", "16", "24"]  # 32 dimensions a head, in a third of the width
    assert x["xaxis"]["ticktext"][:3] == ["0", "32", "64"]  # 384 across the whole width


def test_empty_text_asks_for_a_sentence():
    at = run(ih_model="toy", text="  ")
    assert not at.exception and "Type a sentence" in at.info[0].value


def test_a_sliding_window_decoder_opens_past_its_window_with_the_window_drawn(tmp_path):
    """A Qwen2 windowing layer 1 to 4 tokens, on a text longer than that: the page draws the head (it refused
    before), says the window on the windowed layer only, and its check against the model's weights holds."""
    from bench.tiny_any import save
    from tests.views.view_at import open_linked

    folder = save("qwen2", "causal", tmp_path, use_sliding_window=True, sliding_window=4, max_window_layers=1)
    for layer, windowed in ((0, False), (1, True)):
        at = open_linked("inside_head", model="hf:", hf_spec=folder, text="a longer text than four",
                         ih_bert_layer=f"L{layer}")
        assert not at.exception and not at.error, [e.value for e in at.error]
        hidden = np.isnan(z_of(figure(at, "mask")))  # (T, T): the mask step's -inf, drawn as gaps
        T = hidden.shape[0]
        assert T > 4 and (hidden == ~np.tri(T, T, 0, bool) | (np.tri(T, T, -4, bool) & windowed)).all(), layer


def test_a_decoder_with_no_hand_written_layout_opens_from_the_capture(tmp_path):
    """An OPT (its q scaled inside q_proj) was refused; its head now comes from the capture's record: the page's
    softmax step is the model's own weights, and no scaling is applied twice."""
    import models
    from bench.tiny_any import save
    from tests.views.view_at import open_linked

    folder = save("opt", "causal", tmp_path)
    at = open_linked("inside_head", model="hf:", hf_spec=folder, text=TEXT, ih_bert_layer="L1", ih_bert_head="H2")
    assert not at.exception and not at.error and not at.info, [e.value for e in at.error]
    own = models.load("hf:" + folder).head_qkv(TEXT, 1, 2).model_weights
    np.testing.assert_allclose(z_of(figure(at, "softmax")), own, atol=1e-3)


@pytest.mark.parametrize("family, normed", [("qwen3", True), ("olmo2", True), ("mistral", False)])
def test_the_caption_names_q_and_k_norms_where_the_model_has_them(family, normed, tmp_path):
    """Qwen3 and OLMo 2 norm Q and K after their projections (the page's Q is q_norm(X·W_Q), rotated); the caption
    says so there, and only there. The Q shown is the normed one: q_norm applied to X·W_Q equals it on row 0 (no
    rotation at position 0), the bare projection does not."""
    import models
    from bench.tiny_any import save
    from tests.views.view_at import open_linked

    folder = save(family, "causal", tmp_path)
    at = open_linked("inside_head", model="hf:", hf_spec=folder, text=TEXT, ih_bert_layer="L1", ih_bert_head="H0")
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("q and k norms" in c.value for c in at.caption) == normed
    shown = " ".join(c.value for c in at.code)   # How it works' torch lines: the model's own Q line
    assert ("q = rope(norm_q(x @ w_q))" if normed else "q = rope(x @ w_q)") in shown
    if family == "qwen3":
        m = models.load("hf:" + folder)
        d = m.head_qkv(TEXT, 1, 0)
        attn = m.model.model.layers[1].self_attn
        with torch.no_grad():
            bare = attn.q_proj(torch.as_tensor(d.x[:1])).view(1, -1, attn.head_dim)[0, 0]  # (hd,) head 0, row 0
            normed_q = attn.q_norm(bare)
        np.testing.assert_allclose(d.q[0], normed_q.numpy(), atol=1e-5)
        assert np.abs(d.q[0] - bare.numpy()).max() > 1e-2
