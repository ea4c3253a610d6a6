"""The KV view's real-decoder section: what the built-in gpt writes with its cache, kept once for every visitor."""
import torch

from ui import cache, kv_hf


def test_the_written_tokens_are_greedy_generate_and_are_computed_once():
    dec = cache.model("gpt", "cpu", "float32")
    run = kv_hf._write("gpt", "cpu", "float32", "The river", 6)
    ids, _ = dec.encode("The river", room=6)
    with torch.no_grad():  # transformers' own greedy generate, the independent path
        out = dec.model.generate(ids, max_new_tokens=6, do_sample=False, eos_token_id=None, pad_token_id=0)
    assert run.written == out[0, ids.shape[1]:].tolist()
    assert run.positions == list(range(ids.shape[1], ids.shape[1] + 6))
    assert run.norms.shape == (2 * dec.n_layers, ids.shape[1] + 5)  # the last token is never fed back
    assert kv_hf._write("gpt", "cpu", "float32", "The river", 6) is run  # a second visitor gets the kept result
