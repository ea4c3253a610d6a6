"""Every model the registry offers keeps the contract (models.contract.AttentionModel), and says its family
itself: views decide by it, never by a class name."""
import pytest

import models
from models.contract import FAMILIES, AttentionModel


@pytest.mark.parametrize("name", models.available())
def test_every_registry_model_keeps_the_contract(name):
    model = models.load(name, "cpu", "float32")
    assert isinstance(model, AttentionModel), name
    assert model.family in FAMILIES and isinstance(model.label, str) and model.label


def test_a_class_name_decides_nothing():
    from ui.family import family

    class Renamed:  # a model that says what it is, whatever its class is called
        family = "tiny"

    assert family(Renamed()) == "tiny"


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
