"""AppTest of views/next_token.py through the app frame: `gpt` and the tiny decoder end to end (probabilities after
each filter, append-and-continue kept as steps and going back, the whole block, the lens, direct logit attribution
opening Inside a head), and every bad input the issue names gets a sentence, never a traceback."""
import base64
import html
import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import limits
import models
from experiments.logit_lens import decompose, encode

pytestmark = pytest.mark.usefixtures("one_thread")
CODE = "import os\nos.path."


def run(model="gpt", text=CODE, **state) -> AppTest:
    at = AppTest.from_file("../../app.py", default_timeout=120)
    at.session_state["model"], at.session_state["text"] = model, text
    for key, value in state.items():
        at.session_state[key] = value
    at.switch_page("views/next_token.py")
    return at.run()


def ok(at: AppTest) -> None:
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


def append(at: AppTest) -> AppTest:
    at.button(key="nt_go").click().run()
    at.session_state["_work_jobs"]["nt_extend"].thread.join(120)
    return at.run()


def steps(at: AppTest) -> list:
    return next(iter(at.session_state["_nt_steps"].values()))


def chart_titles(at: AppTest) -> str:
    return " ".join(c.proto.spec for c in at.get("plotly_chart"))


@pytest.mark.slow
def test_append_and_continue_is_seeded_kept_and_can_go_back():
    at = run(nt_n=4, nt_seed=3, nt_temp=1.2)
    ok(at)
    assert "before and after each filter" in chart_titles(at)
    assert any("Work: " in c.value for c in at.caption)
    ok(append(at))
    first = [c.id for c in steps(at)]
    assert len(first) == 4 and at.slider(key="nt_at").value == 4
    at.slider(key="nt_at").set_value(2).run()
    ok(at)
    assert "(11 tokens)" in " ".join(c.value for c in at.caption)  # 9 prompt tokens + 2 kept
    ok(append(at))  # from step 2: the later steps are replaced; a draw depends on (seed, position) only
    assert len(steps(at)) == 6 and [c.id for c in steps(at)][:4] == first
    again = run(nt_n=4, nt_seed=3, nt_temp=1.2)
    ok(append(again))
    assert [c.id for c in steps(again)] == first  # the same seed, the same tokens


def test_tabs_block_lens_and_attribution_for_the_tiny_decoder():
    at = run("tiny", "31415", nt_tab="The whole block")
    ok(at)
    assert "One token's path" in chart_titles(at) and "RoPE" not in " ".join(c.value for c in at.caption)
    at = run("tiny", "31415", nt_tab="Logit lens")
    ok(at)
    assert "Logit lens" in chart_titles(at)
    at = run("tiny", "31415", nt_tab="Direct logit attribution")
    ok(at)
    assert "The parts sum to" in at.success[0].value and "(difference" in at.success[0].value
    assert "Each head's direct share" in chart_titles(at)
    assert any("indirect effect" in c.value for c in at.caption)
    at.button(key="nt_open_head").click().run()
    ok(at)
    assert at.title[0].value == "Inside one head"  # the head with the largest share, on the tiny decoder
    assert at.radio(key="ih_model").value == "tiny"
    best = np.unravel_index(np.abs(np.asarray(decompose(models.load("tiny"), "31415").heads)).argmax(), (2, 4))
    assert (at.selectbox(key="ih_tiny_layer").value, at.selectbox(key="ih_tiny_head").value) == tuple(map(int, best))
    assert not [w.value for w in at.warning if "link parameters" in w.value]


@pytest.mark.parametrize("family", ["gpt-neox", "qwen2"])
def test_an_hf_decoder_from_a_folder(family, tiny_folder):
    at = run("hf:", "Attention is all you need.", hf_spec=tiny_folder(family), nt_tab="Direct logit attribution")
    ok(at)
    assert "The parts sum to" in at.success[0].value
    at = run("hf:", "Attention is all you need.", hf_spec=tiny_folder(family), nt_tab="The whole block")
    ok(at)
    assert any("RoPE rotates Q and K" in c.value for c in at.caption)


@pytest.mark.parametrize("family", ["opt", "phi3"])
def test_a_decoder_with_no_hand_written_layout(family, tmp_path):
    """OPT and Phi-3 (fused q/k/v) were refused; their heads' writes now come from the capture's record. The heads
    chart holds one bar per head, and the parts it shows are decompose's, which sum to the model's own logit."""
    from bench.tiny_any import save

    spec = save(family, "causal", tmp_path)
    at = run("hf:", "The cat sat on", hf_spec=spec, nt_tab="Direct logit attribution")
    ok(at)
    assert "Each head's direct share" in chart_titles(at) and not at.info
    d = decompose(models.load("hf:" + spec), "The cat sat on")
    assert abs(d.total - d.logit) < 1e-4 and d.heads.shape == (2, 4)


def test_a_capped_model_says_its_parts_explain_the_logit_before_the_cap(tmp_path):
    """Gemma 2: sandwich norms (each frozen at its input) and a final softcap, which no sum of parts follows. The
    metric and the sum's sentence called the logit before the cap (0.266536) the model's own (0.173981)."""
    from bench.tiny_any import save

    spec = save("gemma2", "causal", tmp_path, final_logit_softcapping=0.2)
    at = run("hf:", "The cat sat on", hf_spec=spec, nt_tab="Direct logit attribution")
    ok(at)
    assert "Each head's direct share" in chart_titles(at)
    shown = " ".join(e.value for kind in ("info", "warning", "caption") for e in getattr(at, kind))
    assert "before the cap" in shown
    model = models.load("hf:" + spec)
    d = decompose(model, "The cat sat on")
    own = float(model.model(model.encode("The cat sat on")[0]).logits[0, -1, d.target_id].detach())  # the model's own
    assert abs(d.own - own) < 1e-5 and abs(d.own - d.logit) > 1e-2
    metric = at.metric[0]
    assert metric.label.endswith("before the cap") and metric.value == f"{d.logit:.3f}"
    assert f"{d.own:.3f}" in metric.proto.help
    success = at.success[0].value
    assert f"the logit before the cap of “{d.target}” is {d.logit:.6f}" in success
    assert f"after the cap the model's own is {d.own:.6f}" in success and "the model's own logit" not in success


@pytest.mark.parametrize("model_type, extra, sentence, embedding", [
    ("falcon", dict(parallel_attn=True), "norm → attention (4 heads, each writing its own output) and MLP side by "
     "side, both reading that one normed input → add both", "RoPE rotates Q and K"),
    ("gptj", {}, "norm → attention (4 heads, each writing its own output) and MLP side by side", "RoPE rotates"),
    ("gemma2", {}, "norm → attention (4 heads, each writing its own output) → norm → add → norm → MLP → norm → add",
     "RoPE rotates Q and K"),
    ("bloom", {}, "norm → attention (4 heads, each writing its own output) → add → norm → MLP → add",
     "ALiBi adds a penalty"),
    ("opt", {}, "norm → attention (4 heads, each writing its own output) → add → norm → MLP → add",
     "plus its learned position's"),
])
def test_the_whole_block_follows_the_models_layout(tmp_path, model_type, extra, sentence, embedding):
    """Every hf decoder was described as GPT-2: sequential pre-norm layers and a learned position added."""
    from bench.tiny_any import save

    at = run("hf:", "The cat sat on", hf_spec=save(model_type, "causal", tmp_path, **extra), nt_tab="The whole block")
    ok(at)
    block = next(m.value for m in at.markdown if "**embedding** →" in m.value)
    assert f"2 × [ {sentence}" in block
    assert any(c.value.startswith("Embedding: ") and embedding in c.value for c in at.caption)


def test_the_next_token_follows_the_text_not_an_appended_end_token(tmp_path):
    """A tokenizer that writes '<s> … </s>' made the view explain the token after '</s>'."""
    from bench.tiny_any import save

    spec = save("qwen3", "causal", tmp_path)
    at = run("hf:", "The cat sat on", hf_spec=spec)
    ok(at)
    assert any("Text so far (15 tokens)" in c.value for c in at.caption)  # '<s>' and 14 characters
    assert at.code[0].value == "<s>The cat sat on"


def test_greedy_and_filters_have_their_meanings():
    at = run(nt_temp=0.0, nt_topk=100_000, nt_topp=0.0)
    ok(at)
    assert any("Temperature 0 means greedy" in c.value for c in at.caption)
    assert any(c.value.startswith("1 of 2,052 tokens") for c in at.caption)
    at = run(nt_mode="greedy", nt_n=3)
    ok(append(at))
    assert all(c.prob == 1.0 for c in steps(at))
    logits = [c.model_prob for c in steps(at)]  # greedy: the model's own softmax of its top token
    table = next(d.value for d in at.dataframe if "model's probability" in d.value.columns)
    assert list(table["after the filters"]) == [1.0] * 3  # greedy: the filters leave only the top token
    assert list(table["model's probability"]) == [round(float(p), 4) for p in logits] and max(logits) < 1


def test_a_token_to_explain_keeps_its_space_and_reads_the_charts_labels():
    expected = decompose(models.load("gpt"), CODE, " the").target_id  # the text ' the', its leading space kept
    for typed in (" the", "␣the", "Ġthe"):
        at = run(nt_target=typed, nt_tab="Direct logit attribution")
        ok(at)
        assert at.metric[0].label == "Logit of “␣the”", typed
    assert models.load("gpt").tokenizer.convert_ids_to_tokens(expected) == "Ġthe"
    titles = [html.unescape(json.loads(c.proto.spec)["layout"].get("title", {}).get("text", ""))
              for c in at.get("plotly_chart")]
    assert "Each head's direct share of the logit of '␣the'" in titles  # whole: the click hint is a caption now
    assert any("Click a head in the grid" in c.value for c in at.caption)


@pytest.mark.slow
def test_bad_input_gets_a_sentence():
    at = run("bert")
    assert not at.exception and "text encoder" in at.info[0].value
    at.button(key="nt_to_gpt").click().run()
    ok(at)
    assert at.session_state["model"] == "gpt"
    at = run("vit")
    assert not at.exception and "reads images" in at.info[0].value and at.button(key="nt_to_tiny")
    at = run(text="   ")
    assert not at.exception and "Type a text" in at.info[0].value
    at = run(text="x" * 3000)  # far past the 128 positions
    ok(at)
    assert any("Truncated to 128 tokens" in w.value for w in at.warning)
    assert "fills the model's 128 positions" in " ".join(i.value for i in at.info)
    at = run("tiny", "hello")
    assert not at.exception and "only sorts digits" in at.error[0].value
    at = run(nt_target="not one token at all")
    assert not at.exception and "not one" in at.error[0].value


def test_hosted_caps_the_appended_tokens(monkeypatch):
    monkeypatch.setenv(limits.ENV, "1")
    at = run(text="def")
    ok(at)
    assert at.number_input(key="nt_n").max == min(limits.HOSTED.new_tokens, 128 - 2)  # '<s>def' leaves 126
    assert any(f"of {limits.HOSTED.request_gflop:.0f} allowed" in c.value for c in at.caption)


def _values(y) -> np.ndarray:
    """A plotly array from the figure's JSON: a list, or {'dtype', 'bdata'} (base64)."""
    if isinstance(y, dict):
        return np.frombuffer(base64.b64decode(y["bdata"]), dtype=np.dtype(y["dtype"]))
    return np.asarray(y, dtype=np.float64)


def test_inside_a_head_splits_one_query_key_score_per_dimension():
    at = AppTest.from_file("../../app.py", default_timeout=120)
    at.session_state["model"] = "tiny"
    for key, value in {"ih_model": "tiny", "ih_digits": "31415", "ih_tiny_layer": 1, "ih_tiny_head": 2,
                       "ih_tab": "One query · one key", "ih_nq": 6, "ih_nk": 3}.items():
        at.session_state[key] = value
    at.switch_page("views/inside_head.py").run()
    ok(at)
    fig = json.loads(at.get("plotly_chart")[-1].proto.spec)
    products = _values(fig["data"][0]["y"])
    data = models.load("tiny").head_qkv("31415", 1, 2)  # the independent path: the model's own q and k
    q, k = data.q[6].astype(np.float64), data.k[3].astype(np.float64)
    assert np.allclose(products, q * k, atol=1e-6) and len(products) == 16
    assert f"= Σ {q @ k:+.3f}" in fig["layout"]["title"]["text"]
    assert any("the causal mask" not in c.value and "products" in c.value for c in at.caption)


def test_a_head_picked_in_the_boxes_opens_inside_a_head():
    at = run("tiny", "31415", nt_tab="Direct logit attribution")
    ok(at)
    at.selectbox(key="nt_pick_layer").set_value(0).run()
    at.selectbox(key="nt_pick_head").set_value(3).run()
    at.button(key="nt_open_head").click().run()
    ok(at)
    assert (at.selectbox(key="ih_tiny_layer").value, at.selectbox(key="ih_tiny_head").value) == (0, 3)



@pytest.mark.parametrize("family", ["openai-gpt", "bart"])
def test_a_decoder_whose_logit_cannot_be_split_still_predicts_and_appends(family, tmp_path):
    """GPT-1 and a BART decoder alone are post-norm: the whole block, the lens and direct logit attribution say so in
    their tabs, while the probabilities and appending work (they need no split): greedy appending writes the model's
    own top token, checked against a plain forward pass."""
    import torch

    from bench.tiny_any import save

    spec = save(family, "causal", tmp_path)
    for tab in ("The whole block", "Logit lens", "Direct logit attribution"):
        at = run("hf:", "The cat sat on", hf_spec=spec, nt_tab=tab)
        ok(at)
        assert any("post-norm" in i.value for i in at.info) and not at.get("plotly_chart")
    at = run("hf:", "The cat sat on", hf_spec=spec, nt_mode="greedy", nt_n=1)
    ok(at)
    assert not at.info and len(at.get("plotly_chart")) == 1
    ok(append(at))
    m = models.load("hf:" + spec)
    ids, _ = encode(m, "The cat sat on")
    with torch.no_grad():
        top = int(m.model(input_ids=ids).logits[0, -1].argmax())
    assert [c.id for c in steps(at)] == [top]


def _greedy_apart(spec: str, text: str, n: int) -> list[int]:
    """n greedy tokens after `text` by the folder's causal LM as transformers loads it apart, each step reading the
    whole text so far (no cache), from the prompt the app reads (the text less the end mark its tokenizer appends)."""
    import torch
    import transformers

    from models.hf.writing import prompt_ids

    cls = getattr(transformers, transformers.AutoConfig.from_pretrained(spec).architectures[0])  # the class it names
    net = cls.from_pretrained(spec, attn_implementation="eager").eval()
    ids = torch.tensor([prompt_ids(models.load("hf:" + spec).tokenizer, text)])
    want = []
    with torch.no_grad():
        for _ in range(n):
            want.append(int(net(input_ids=ids).logits[0, -1].argmax()))
            ids = torch.cat([ids, torch.tensor([[want[-1]]])], 1)
    return want


@pytest.mark.parametrize("family, kind, flag", [("bert", "causal", "is_decoder"), ("xlm", "causal", "causal"),
                                                ("flaubert", "masked", "causal")])
def test_an_encoder_run_as_a_causal_lm_predicts_and_appends_and_says_why_its_logit_is_not_split(family, kind, flag,
                                                                                                  tmp_path):
    """BertLMHeadModel with is_decoder (it was refused as "a text encoder" that predicts no next token) and XLM's
    causal LM, XLMWithLMHeadModel with causal set (it was loaded without its head) and FlauBERT's (the same class as
    its masked LM; transformers maps no causal-LM class to it): their probabilities and greedy
    appending are their own causal LM's, checked against transformers' class loaded apart on the text less the end
    mark its tokenizer appends (XLM's forward takes no past_key_values, so it appends by reading the whole text
    again); the split tabs say they are post-norm."""
    from bench.tiny_any import save

    spec = save(family, kind, tmp_path, **{flag: True})
    at = run("hf:", "The cat sat on", hf_spec=spec, nt_tab="Direct logit attribution")
    ok(at)
    assert any(f"BERT-style causal LM ({family} with {flag})" in i.value and "post-norm" in i.value for i in at.info)
    at = run("hf:", "The cat sat on", hf_spec=spec, nt_mode="greedy", nt_n=3)
    ok(at)
    assert len(at.get("plotly_chart")) == 1
    ok(append(at))
    assert [c.id for c in steps(at)] == _greedy_apart(spec, "The cat sat on", 3)


def test_without_its_flag_an_encoders_causal_lm_class_reads_the_whole_text_or_is_its_masked_lm(tmp_path):
    """BertLMHeadModel without is_decoder reads the whole text, and the view says so; XLMWithLMHeadModel without
    causal is XLM's masked LM, kept as one."""
    from bench.tiny_any import save
    from models.residual import why_not

    plain = models.load("hf:" + save("bert", "causal", tmp_path / "bert"))
    assert not plain.writes and "does not set is_decoder" in why_not(plain)
    for family, kind in (("xlm", "causal"), ("flaubert", "masked")):
        masked = models.load("hf:" + save(family, kind, tmp_path / family))
        assert masked.predicts == "target token" and masked.mlm is not None and masked.task is None
