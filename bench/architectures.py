"""families (the count over architectures): every architecture transformers' auto mappings build as a tiny random
model offline (bench.tiny_any: causal LM, masked LM, sequence classifier, seq2seq LM), loaded the way a user's
folder is (models.load("hf:<folder>")), and checked against an independent path:

- exact: attend()'s weights equal the model's own eager output_attentions (transformers' class, loaded apart)
  within 1e-6, every stack (an encoder-decoder's cross, encoder and decoder attention);
- dla_ok (causal LMs): experiments.logit_lens.decompose's parts sum to the logit a plain forward gives, within 1e-4;
- patching_ok (causal LMs): experiments.patching.patch_heads runs, and its clean logit difference equals a plain
  forward's within 1e-4;
- export_ok (causal LMs): one head pruned and exported (models.pruned_hf.export), reloaded by transformers from the
  folder's own code (trust_remote_code), equals the model gated here within 1e-5.
refused: {model_type: the sentence models.load or attend() said}; not_built: architectures whose tiny
config cannot be built offline (remote code, multimodal inputs, a required size this builder does not set), with the
error's first words. What it does not do: time anything (bench.families times load and attend), or try vision.
"""
from __future__ import annotations

import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch

TEXT = "abcab"              # one token a character: the clean prompt of the patching pair, and every model's text
CORRUPT, ANSWER, WRONG = "abdab", "c", "d"
GAP, DLA_GAP, EXPORT_GAP = 1e-6, 1e-4, 1e-5
GROWTH = 6 << 30            # bytes the sweep may map beyond what the process held when it started


def candidates(quick: bool) -> list[tuple[str, str]]:
    """(model_type, kind) for every architecture of the four auto mappings, once each; quick: a Llama."""
    from transformers.models.auto import modeling_auto

    from bench.tiny_any import KINDS

    if quick:
        return [("llama", "causal")]
    # each architecture once, as the model it is most often shared as: a seq2seq LM before a causal LM (BART, mBART,
    # Pegasus also have a decoder-only class, rarely shared), a masked LM, a classifier
    from models.hf import families

    kinds = {}
    for kind in ("seq2seq", "causal", "masked", "classifier"):
        for t in sorted(getattr(modeling_auto, KINDS[kind])):
            kinds.setdefault(t, "causal" if kind == "classifier" and families.causal_lm(t) else kind)  # Mistral 4
    return sorted(kinds.items())


def _stacked(attentions) -> np.ndarray:
    return torch.stack(attentions, 1)[0].float().numpy()  # (L, H, Tq, Tk)


def _prompt(tok, text: str, family: str) -> dict:
    """The tokenizer's own encoding of `text` as tensors; a decoder's less the special tokens the tokenizer appends
    after the text (a decoder reads the text and predicts what follows it, not what follows an appended '</s>')."""
    enc = tok(text, return_tensors="pt")
    ids = enc["input_ids"][0].tolist()
    while family == "decoder" and ids and ids[-1] in tok.all_special_ids:
        ids.pop()
    return {k: v[:, :len(ids)] for k, v in enc.items()}


def _exact(m, folder: str, model_type: str, kind: str) -> bool:
    """attend() against the architecture's own eager output_attentions, loaded apart."""
    from transformers import AutoTokenizer

    from bench.tiny_any import model_class
    from models import layout

    tok = AutoTokenizer.from_pretrained(folder)
    ref = model_class(model_type, kind).from_pretrained(folder, attn_implementation="eager").eval()
    ref.config.default_language = layout.only_language(ref.config) or getattr(ref.config, "default_language", None)
    enc = _prompt(tok, TEXT, m.family)
    with torch.no_grad():
        if m.family == "encoder-decoder":  # a speech model's language model, in the seq2seq mapping, is a decoder
            tr = m.attend(TEXT, text_b="ab")
            fed = torch.tensor([[m.start, *tok(text_target="ab", add_special_tokens=False)["input_ids"]]])
            out = ref(**enc, decoder_input_ids=fed, output_attentions=True)
            pairs = [(tr.weights, out.cross_attentions), (tr.parts["encoder"].weights, out.encoder_attentions),
                     (tr.parts["decoder"].weights, out.decoder_attentions)]
        else:
            tr = m.attend(TEXT)
            want = ref(**enc, output_attentions=True).attentions
            kept = layout.attending(ref.config)  # a hybrid whose other layers return weights of their own (MiniMax)
            pairs = [(tr.weights, [want[i] for i in kept] if kept and len(want) > len(kept) else want)]
    return all(got.shape == _stacked(want).shape and float(np.abs(got - _stacked(want)).max()) <= GAP
               for got, want in pairs)


def _last_logits(m, text: str) -> torch.Tensor:
    """The plain forward's logits at the last position of `text` (V,): a decoder's LM, or the causal LM an encoder
    keeps (a BERT-style causal LM), each without the special tokens its tokenizer appends after the text."""
    lm = m.next_token_model
    ids = _prompt(m.tokenizer, text, "decoder")["input_ids"]
    with torch.no_grad():
        return lm(input_ids=ids).logits[0, -1].double()


def _dla(m) -> bool:
    from experiments import logit_lens

    d = logit_lens.decompose(m, TEXT)  # the parts explain the logit before a final cap; d.own is after it
    return abs(sum(d.parts.values()) - d.logit) <= DLA_GAP and \
        abs(d.own - float(_last_logits(m, TEXT)[d.target_id])) <= DLA_GAP


def _patching(m) -> bool:
    from experiments.patching import patch_heads

    p = patch_heads(m, TEXT, CORRUPT, ANSWER, WRONG)
    logits = _last_logits(m, TEXT)
    ia, iw = (m.tokenizer.convert_tokens_to_ids(t) for t in (ANSWER, WRONG))
    return bool(np.isfinite(p.scores).any()) and abs(p.clean_diff - float(logits[ia] - logits[iw])) <= DLA_GAP


def _export(m, folder: Path) -> tuple[str, list]:
    """One head pruned and exported; (the folder, the gated model's logits on TEXT) for _reloaded to compare."""
    from experiments.pruning import exact_gap
    from models.gates import gated, head_counts, mask
    from models.prune import pruned_copy
    from models.pruned_hf import export

    lm = m.next_token_model  # a decoder's, or the causal LM a BertLMHeadModel's load kept
    if lm is None:
        from limits.errors import UserError

        raise UserError(f"loaded as an {m.family} without its causal-LM head: nothing to export")
    plan = {0: [1]}
    pruned = pruned_copy(lm, plan)
    exact_gap(lm, pruned, plan, m.tokenizer, [TEXT])  # the app's check before it exports: a sentence if not
    export(pruned, plan, str(folder), m.tokenizer)
    ids = m.tokenizer(TEXT, return_tensors="pt")["input_ids"]
    with torch.no_grad(), gated(lm, mask(head_counts(lm), plan)):
        return str(folder), lm(input_ids=ids).logits[0].tolist()


# a fresh Python whose path holds only the standard library and site-packages: each folder is built from its own
# modeling_pruned.py (trust_remote_code), never from this project, with the eager attention the app loads every model
# with (an ALiBi Falcon's sdpa path adds its biases once where its eager path adds them twice: transformers' own
# model differs between the two)
OUTSIDE = """
import json, sys
import torch, transformers
assert not any(m == "models" or m.startswith("models.") for m in sys.modules)
out = {}
for folder in json.loads(sys.stdin.read()):
    try:
        model = transformers.AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True,
                                                                  attn_implementation="eager").eval()
        tok = transformers.AutoTokenizer.from_pretrained(folder)
        with torch.no_grad():
            out[folder] = model(**tok(TEXT, return_tensors="pt")).logits[0].tolist()
    except Exception as err:
        out[folder] = type(err).__name__
print("RESULT", json.dumps(out))
"""


def _reloaded(exports: dict[str, tuple[str, list]]) -> dict[str, bool | str]:
    """{model_type: reloaded outside the project equals the gated logits within EXPORT_GAP, or why not}."""
    import json
    import subprocess
    import sys

    if not exports:
        return {}
    script = OUTSIDE.replace("TEXT", repr(TEXT))
    run = subprocess.run([sys.executable, "-I", "-c", script], input=json.dumps([f for f, _ in exports.values()]),
                         capture_output=True, text=True, timeout=600, check=True)
    got = json.loads(run.stdout[run.stdout.rindex("RESULT ") + len("RESULT "):].splitlines()[0])
    out = {}
    for model_type, (folder, want) in exports.items():
        logits = got[folder]
        out[model_type] = (logits if isinstance(logits, str) else
                           bool(np.abs(np.array(logits) - np.array(want)).max() <= EXPORT_GAP))
    return out


def _check(name: str, fn, *args):
    """(fn's result, None), or (None, the sentence of a UserError or the type of any other error)."""
    from limits.errors import UserError

    try:
        return fn(*args), None
    except UserError as err:
        return None, str(err)
    except Exception as err:  # noqa: BLE001 (a family this check cannot run on: counted, named, never raised)
        return None, f"{name}: {type(err).__name__}: {str(err)[:80]}"


@contextmanager
def _memory_cap(growth: int):
    """While open, this process may map at most `growth` bytes more than now: an architecture whose tiny config still
    asks for gigabytes (Byte Latent Transformer's patcher) fails with MemoryError, counted, instead of the machine's
    out-of-memory killer ending the whole bench."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        mapped = int(f.read().split()[0]) * resource.getpagesize()
    cap = mapped + growth if hard == resource.RLIM_INFINITY else min(hard, mapped + growth)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def as_saved(model_type: str, kind: str) -> dict:
    """What a checkpoint of this kind sets in its config beyond the tiny one: an encoder's causal LM (BertLMHeadModel
    and its kin, XLM's) runs as a decoder, is_decoder (or XLM's causal) set, as transformers asks of one used alone."""
    from bench.tiny_any import config
    from models.hf import families

    if kind != "causal" or families.auto_family(model_type) != "encoder":
        return {}
    return {"causal": True} if hasattr(config(model_type), "causal") else {"is_decoder": True}


def _text_part(model_type: str) -> bool:
    """Whether the architecture is an image-text model whose language model models.load reads alone (Gemma 3): built
    and checked whole, as a text model is."""
    from bench.tiny_any import config
    from models.hf import families

    try:
        return families.text_part(config(model_type)) is not None
    except Exception:  # noqa: BLE001 (a config this builder cannot make offline)
        return False


def measure(quick: bool = False) -> dict:
    import models
    from bench.tiny_any import config, save
    from limits.errors import UserError
    from models.hf import families

    out = {"tried": 0, "exact": 0, "refused": {}, "dla_ok": 0, "patching_ok": 0, "export_ok": 0, "causal": 0,
           "not_exact": {}, "not_built": {}, "load_failed": {}, "why_not": {"dla": {}, "patching": {}, "export": {}}}
    exports = {}
    with tempfile.TemporaryDirectory() as root, _memory_cap(GROWTH):
        todo = candidates(quick)
        for i, (model_type, kind) in enumerate(todo):
            print(f"families: {i + 1}/{len(todo)} {model_type} ({kind})", file=sys.stderr, flush=True)
            where = Path(root) / f"{i}"
            if families.auto_family(model_type) is None and not _text_part(model_type):  # refused at its config
                try:
                    config(model_type).save_pretrained(where)
                except Exception as err:  # noqa: BLE001 (a config this builder cannot make offline)
                    out["not_built"][f"{model_type}/{kind}"] = f"{type(err).__name__}: {str(err)[:80]}"
                    continue
                out["tried"] += 1
                try:
                    models.load(f"hf:{where}")
                    out["not_exact"][f"{model_type}/{kind}"] = "loaded, though not a text model"
                except UserError as err:
                    out["refused"][model_type] = str(err)
                continue
            try:
                folder = save(model_type, kind, where, **as_saved(model_type, kind))
            except Exception as err:  # noqa: BLE001 (remote code, multimodal, sizes this builder does not set)
                out["not_built"][f"{model_type}/{kind}"] = f"{type(err).__name__}: {str(err)[:80]}"
                continue
            out["tried"] += 1
            try:
                m = models.load("hf:" + folder)
            except UserError as err:
                out["refused"][model_type] = str(err)
                continue
            except Exception as err:  # noqa: BLE001 (a load that fails otherwise: a bug of ours, named here)
                out["load_failed"][model_type] = f"{type(err).__name__}: {str(err)[:80]}"
                continue
            ok, why = _check("exact", _exact, m, folder, model_type, kind)
            if why is not None and not why.startswith("exact: "):  # attend() said the user's sentence
                out["refused"][model_type] = why
                continue
            out["exact"] += bool(ok)
            if not ok:
                out["not_exact"][f"{model_type}/{kind}"] = why or "differs"
            if kind != "causal" and m.predicts != "next token":  # a speech model's language model writes too
                continue
            out["causal"] += 1
            for key, fn in (("dla", _dla), ("patching", _patching)):
                ok, why = _check(key, fn, m)
                ok = bool(ok)
                out[f"{key}_ok"] += ok
                if not ok:
                    out["why_not"][key][model_type] = why or "differs"
            made, why = _check("export", _export, m, where / "pruned")
            if made is not None:
                exports[model_type] = made
            else:
                out["why_not"]["export"][model_type] = why
        for model_type, ok in _reloaded(exports).items():
            out["export_ok"] += ok is True
            if ok is not True:
                out["why_not"]["export"][model_type] = "differs" if ok is False else f"reload: {ok}"
    return out
