"""Every model the registry offers keeps the contract (models.contract.AttentionModel and DESIGN's AttentionTrace),
and says its family itself: views decide by it, never by a class name. `breaches` is the check; stand-ins that
break the contract one way each show that it fails."""
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import models
from analysis.trace import AttentionTrace
from models.contract import FAMILIES, PREDICTS, AttentionModel

SAMPLES = {"tiny": "31415", "induction": "ba ke mi ba ke", "seq2seq-bahdanau": "Wednesday, the 3rd of March 2021",
           "seq2seq-luong": "Wednesday, the 3rd of March 2021"}  # the rest read English


def _sample(name: str):
    if name == "vit":
        from data.images import sample_digits

        return sample_digits()[0][3]
    return SAMPLES.get(name, "The river bank was dirty")


LACKS = ("lacks a member of the contract (family, label, device, notices, predicts, next_token_model, tokenizer, "
         "windows, kv_head_of or attend)")


def breaches(model, sample) -> list[str]:
    """What `model` does against the contract, one phrase each; [] when it keeps it. attend(sample) is run."""
    if not isinstance(model, AttentionModel):  # a runtime Protocol checks only that the names exist
        return [LACKS]
    found = []
    if model.family not in FAMILIES:
        found.append(f"family {model.family!r} is not one of FAMILIES")
    if not (isinstance(model.label, str) and model.label.strip()):
        found.append("label is not a non-empty string")
    if model.predicts not in PREDICTS:
        found.append(f"predicts {model.predicts!r} is not one of PREDICTS")
    if not (model.next_token_model is None or isinstance(model.next_token_model, torch.nn.Module)):
        found.append("next_token_model is neither None nor a torch module")
    if not all(w is None or isinstance(w, int) for w in model.windows):
        found.append("windows are not one int or None per layer")
    if not (model.kv_head_of is None or all(isinstance(g, int) for g in model.kv_head_of)):
        found.append("kv_head_of is neither None nor one key/value head per query head")
    if not isinstance(model.device, str):
        found.append("device is not a string")
    if not (isinstance(model.notices, tuple) and all(isinstance(n, str) for n in model.notices)):
        found.append("notices is not a tuple of strings")
    trace = model.attend(sample)
    if not isinstance(trace, AttentionTrace):
        return [*found, f"attend returned {type(trace).__name__}, not an AttentionTrace"]
    for name, t in trace.stacks().items():
        w = t.weights  # [layers, heads, query_pos, key_pos]; AttentionTrace itself checks the shape
        if w.dtype != np.float32 or w.size == 0:
            found.append(f"{name}: weights are {w.dtype} {w.shape}, not non-empty float32")
        elif not np.allclose(w.sum(-1), 1.0, atol=1e-3):
            found.append(f"{name}: rows do not sum to 1 (off by up to {np.abs(w.sum(-1) - 1).max():.3g})")
        if t.kind != "cross" and t.key_tokens != t.tokens:
            found.append(f"{name}: {t.kind} attention with key tokens other than its tokens")
        if t.kind == "causal" and w.size and np.triu(w, 1).max() > 0:
            found.append(f"{name}: causal attention looks at later tokens")
        if not (isinstance(t.notices, tuple) and all(isinstance(n, str) for n in t.notices)):
            found.append(f"{name}: the trace's notices are not a tuple of strings")
    return found


@pytest.mark.parametrize("name", models.available())
def test_every_registry_model_keeps_the_contract(name):
    assert breaches(models.load(name, "cpu", "float32"), _sample(name)) == [], name


def _stand_in(cls_name: str = "StandIn", **changes):
    """A model that keeps the contract (two tokens, one layer, one head, causal), with `changes` applied."""
    tokens = ["a", "b"]
    weights = changes.pop("weights", np.array([[[[1.0, 0.0], [0.5, 0.5]]]], np.float32))
    kind = changes.pop("kind", "causal")
    fields = dict(family="tiny", label="A stand-in", device="cpu", notices=(), predicts="next token",
                  next_token_model=None, tokenizer=None, windows=(), kv_head_of=None,
                  attend=lambda text, text_b=None: AttentionTrace(tokens, tokens, weights, kind))
    return type(cls_name, (SimpleNamespace,), {})(**(fields | changes))


def test_the_check_passes_a_stand_in_whatever_its_class_is_called():
    assert breaches(_stand_in(), "ab") == breaches(_stand_in("BertModelLookalike"), "ab") == []


@pytest.mark.parametrize("changes, breach", [
    (dict(family="transformer"), "family 'transformer' is not one of FAMILIES"),
    (dict(label=""), "label is not a non-empty string"),
    (dict(predicts="logits"), "predicts 'logits' is not one of PREDICTS"),
    (dict(notices=["a list"]), "notices is not a tuple of strings"),
    (dict(next_token_model="gpt2"), "next_token_model is neither None nor a torch module"),
    (dict(windows=[4.5]), "windows are not one int or None per layer"),
    (dict(kv_head_of=["0"]), "kv_head_of is neither None nor one key/value head per query head"),
    (dict(attend=lambda text, text_b=None: {"weights": []}), "attend returned dict, not an AttentionTrace"),
    (dict(weights=np.array([[[[0.5, 0.0], [0.5, 0.5]]]], np.float32)), "causal: rows do not sum to 1 (off by"),
    (dict(weights=np.array([[[[0.5, 0.5], [0.5, 0.5]]]], np.float32)), "causal: causal attention looks at later"),
])
def test_the_check_fails_a_stand_in_that_breaks_the_contract(changes, breach):
    found = breaches(_stand_in(**changes), "ab")
    assert len(found) == 1 and found[0].startswith(breach), found


def test_the_check_fails_a_stand_in_without_attend():
    model = _stand_in()
    del model.attend
    assert breaches(model, "ab") == [LACKS]


# what each built-in predicts: its own head, read from the model (a decoder's unembedding, a classifier's labels)
BUILTIN_PREDICTS = {"toy": None, "tiny": "next token", "induction": "next token", "gpt": "next token", "bert": None,
                    "vit": "image class", "seq2seq-bahdanau": "target token", "seq2seq-luong": "target token",
                    "seq2seq-transformer": "target token"}


@pytest.mark.parametrize("name", models.available())
def test_every_registry_model_says_what_it_predicts(name):
    assert models.load(name, "cpu", "float32").predicts == BUILTIN_PREDICTS[name]


HEAD_INPUTS = {"toy": "the river bank", "tiny": "31415", "induction": "ba ke mi ba ke", "bert": "The river bank",
               "gpt": "The river bank was"}


@pytest.mark.parametrize("name", sorted(HEAD_INPUTS))
def test_head_qkv_is_one_typed_head_whose_shapes_agree(name):
    from analysis.trace import HeadQKV

    model = models.load(name, "cpu", "float32")
    d = model.head_qkv(HEAD_INPUTS[name], 0, 1)
    assert isinstance(d, HeadQKV), name
    T = len(d.tokens)
    assert d.x.shape[0] == T and d.q.shape == d.k.shape == d.v.shape and d.q.shape[0] == T
    assert d.model_weights is None or d.model_weights.shape == (T, T)
    assert d.causal == (model.settings.causal if name == "toy" else name != "bert")  # decoders are causal


def test_experiments_know_the_tiny_decoder_by_its_family_not_its_class_name():
    from data.sorting import VOCAB
    from experiments import logit_lens
    from models import residual

    tiny = models.load("tiny", "cpu", "float32")
    renamed = object.__new__(type("Renamed", (type(tiny),), {}))
    renamed.__dict__.update(tiny.__dict__)
    assert residual.why_not(renamed) is None
    assert logit_lens.token_names(renamed, [0, 1]) == [VOCAB[0], VOCAB[1]]


MEMBERS = ("family", "label", "device", "notices", "predicts", "lm")   # the contract's, and a decoder's head flag


def probes(source: str) -> list[str]:
    """getattr(x, "<member>", ...) and hasattr(x, "<member>") calls on a contract member in `source`: 'line: call'."""
    import ast

    found = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and node.args[1].value in MEMBERS):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_nothing_outside_models_probes_a_member_the_contract_promises():
    """Every model keeps the contract, so the views, experiments and api read its members, never probe them with a
    default (a probe hides a model that breaks the contract behind a fallback); a decoder's LM head is its
    predicts. The check finds a probe where there is one."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    assert probes('x = getattr(model, "family", None)\nif hasattr(m, "lm"): pass') == [
        '1: getattr(model, \'family\', None)', "2: hasattr(m, 'lm')"]
    found = {str(p.relative_to(root)): hits for pkg in ("app.py", "views", "ui", "classroom", "viz", "experiments",
                                                          "api", "prune", "corpus_heads", "bench")
             for p in ([root / pkg] if pkg.endswith(".py") else (root / pkg).rglob("*.py"))
             if (hits := probes(p.read_text()))}
    assert found == {}


def test_a_task_model_says_its_family_and_what_it_predicts_as_the_model_it_views(tmp_path):
    from bench.tiny_any import save
    from models import task_head

    for kind, family, predicts in (("classifier", "encoder", "class"), ("masked", "encoder", "target token")):
        folder = save("bert", kind, tmp_path / kind)
        shown, judged = models.load("hf:" + folder), task_head.load(folder)
        assert (judged.family, judged.predicts) == (shown.family, shown.predicts) == (family, predicts)
    folder = save("llama", "causal", tmp_path / "causal")
    judged = task_head.load(folder)
    assert (judged.family, judged.predicts, judged.head) == ("decoder", "next token", "causal LM")
