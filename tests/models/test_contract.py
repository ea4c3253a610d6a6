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
