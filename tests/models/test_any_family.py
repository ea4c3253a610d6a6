"""models.load("hf:" + folder).attend(text) on architectures that are not wired by hand: tiny random models of
transformers' auto mappings, saved with a one-character tokenizer (bench/tiny_any.py), give attention equal
to the model's own eager output_attentions within 1e-6, through models.capture where the family uses transformers'
registry and through output_attentions where it bypasses it.

Not tried here, and why: architectures that need remote code (never run), multimodal or speech ones (read as text
they are refused: models.hf.families._NOT_TEXT), and vision beyond ViT and DeiT (their image processors differ)."""
import threading

import numpy as np
import pytest
import torch
from transformers import AutoTokenizer

import models
from bench.tiny_any import model_class, save
from models import capture

pytestmark = pytest.mark.usefixtures("one_thread_per_module")  # tests/conftest.py

TEXT = "Attention is all you need."
# (model_type, kind, family, routed through the registry)
NEW = [
    ("opt", "causal", "decoder", True), ("phi3", "causal", "decoder", True), ("gemma", "causal", "decoder", True),
    ("gemma2", "causal", "decoder", True), ("qwen3", "causal", "decoder", True), ("biogpt", "causal", "decoder", True),
    ("gpt_neo", "causal", "decoder", False), ("olmo", "causal", "decoder", True),
    ("falcon", "causal", "decoder", False), ("gptj", "causal", "decoder", False), ("bloom", "causal", "decoder", False),
    ("xlm-roberta", "masked", "encoder", True), ("camembert", "masked", "encoder", True),
    ("mbart", "seq2seq", "encoder-decoder", True), ("pegasus", "seq2seq", "encoder-decoder", True),
    ("encoder-decoder", "seq2seq", "encoder-decoder", True),  # EncoderDecoderModel: two BERTs joined (bert2bert)
    ("phi3", "classifier", "decoder", True), ("xlm-roberta", "classifier", "encoder", True),  # the head is left out
]
GAP = 1e-6


def prompt(tok, text: str, family: str) -> dict:
    """The tokenizer's own encoding of `text`; a decoder's without the special tokens its tokenizer appends after
    the text (an end token: the decoder predicts what follows the text, not what follows '</s>')."""
    enc = tok(text, return_tensors="pt")
    ids = enc["input_ids"][0].tolist()
    while family == "decoder" and ids and ids[-1] in tok.all_special_ids:
        ids.pop()
    return {k: v[:, :len(ids)] for k, v in enc.items()}


def stacked(attentions) -> np.ndarray:
    return torch.stack(attentions, 1)[0].numpy()  # (L, H, Tq, Tk)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    made = {}

    def get(model_type: str, kind: str) -> str:
        if (model_type, kind) not in made:
            made[model_type, kind] = save(model_type, kind, tmp_path_factory.mktemp(model_type.replace("-", "_")))
        return made[model_type, kind]

    return get


@pytest.mark.parametrize(("model_type", "kind", "family", "routed"), NEW)
def test_attend_equals_eager_output_attentions(model_type, kind, family, routed, folders):
    folder = folders(model_type, kind)
    m = models.load("hf:" + folder)
    assert m.family == family and capture.installed(m.model) == routed
    tok = AutoTokenizer.from_pretrained(folder)
    ref = model_class(model_type, kind).from_pretrained(folder, attn_implementation="eager").eval()
    enc = prompt(tok, TEXT, family)
    if kind == "seq2seq":
        tr = m.attend(TEXT, text_b="Yes.")
        fed = torch.tensor([[m.start, *tok(text_target="Yes.", add_special_tokens=False)["input_ids"]]])
        with torch.no_grad():
            out = ref(**enc, decoder_input_ids=fed, output_attentions=True)
        pairs = [(tr.weights, out.cross_attentions), (tr.parts["encoder"].weights, out.encoder_attentions),
                 (tr.parts["decoder"].weights, out.decoder_attentions)]
    else:
        tr = m.attend(TEXT)
        with torch.no_grad():
            out = ref(**enc, output_attentions=True)
        pairs = [(tr.weights, out.attentions)]
        assert tr.tokens == tok.convert_ids_to_tokens(enc["input_ids"][0].tolist())
    for got, expected in pairs:
        expected = stacked(expected)
        assert got.shape == expected.shape and float(np.abs(got - expected).max()) <= GAP


def test_a_new_decoder_writes_and_attends_over_what_it_wrote(folders):
    m = models.load("hf:" + folders("opt", "causal"))
    tr = m.attend(TEXT, new_tokens=3)
    assert tr.weights.shape[-1] == len(tr.tokens) and tr.output is not None
    assert np.triu(tr.weights, k=1).max() == 0  # no token sees the future


def test_concurrent_attend_on_one_loaded_model_matches_one_at_a_time(folders):
    m = models.load("hf:" + folders("qwen3", "causal"))
    texts = ["The river bank.", "A cat sat on the mat today.", "Hi", "Money in the bank, and more."]
    alone = [m.attend(t).weights for t in texts]
    got: dict[int, list] = {i: [] for i in range(len(texts))}
    start = threading.Barrier(len(texts))

    def work(i: int) -> None:
        start.wait()
        for _ in range(3):
            got[i].append(m.attend(texts[i]).weights)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, runs in got.items():
        assert len(runs) == 3 and all(np.array_equal(w, alone[i]) for w in runs)


def test_speech_and_multimodal_architectures_are_refused_with_one_sentence(tmp_path):
    from transformers import Wav2Vec2Config

    Wav2Vec2Config(num_hidden_layers=1).save_pretrained(tmp_path / "w2v")
    with pytest.raises(ValueError, match="is a model of type wav2vec2, which this app does not show: it shows text"):
        models.load(f"hf:{tmp_path / 'w2v'}")


@pytest.mark.parametrize(("model_type", "kind"), [("opt", "causal"), ("mbart", "seq2seq"),
                                                  ("encoder-decoder", "seq2seq")])
def test_the_heads_view_draws_a_family_not_wired_by_hand(model_type, kind, folders):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file("../../app.py", default_timeout=180)
    at.session_state["text"] = "The cat sat on the mat."
    at.session_state["model"] = "hf:"
    at.session_state["hf_spec"] = folders(model_type, kind)
    at.session_state["heads_new"] = 0
    at.run()
    at.switch_page("views/heads.py").run()
    assert not at.exception and not at.error and at.get("plotly_chart")
    assert any(model_type in c.value for c in at.caption)


def test_roberta_style_positions_leave_room_for_their_offset(tmp_path):
    """XLM-R numbers positions from padding_idx + 1: with 64 position embeddings and a tokenizer that allows 64
    tokens, a 64-token text indexed position 64 ('index 64 is out of bounds'); here padding_idx is 0, so 63 fit,
    and a long text is cut to them."""
    from bench.tiny_any import save

    model = models.load(f"hf:{save('xlm-roberta', 'masked', tmp_path)}")
    assert model.max_tokens == 64 - (model.model.embeddings.padding_idx + 1) == 63
    trace = model.attend("word " * 40)
    assert len(trace.tokens) == 63
