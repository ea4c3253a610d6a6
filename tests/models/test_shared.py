"""models.shared: one instance per (model, device, dtype, checkpoint) while any caller holds it, nothing kept alive
once nobody does; models.load always builds a new one."""
import gc
import weakref

import pytest

import models


@pytest.fixture(autouse=True)
def own_registry(monkeypatch):
    """A registry of this test's own: what earlier tests in this process still hold (the app's model store) is not
    in it, so what is handed out, loaded or dropped here is this test's alone."""
    monkeypatch.setattr(models, "_LIVE", weakref.WeakValueDictionary())


def test_a_held_model_is_handed_out_again_and_a_dropped_one_is_not_kept():
    first = models.shared("toy")
    assert models.shared("toy", "cpu", "float32") is first
    assert models.load("toy") is not first  # load() is a caller's own copy, to change if it likes
    gone = weakref.ref(first)
    del first
    gc.collect()
    assert gone() is None  # the registry held nothing alive
    assert models.shared("toy") is not None


def test_a_checkpoint_by_its_key_and_by_its_argument_is_one_model():
    model = models.shared("induction@1100")
    assert models.shared("induction", checkpoint=1100) is model
    assert models.shared("induction") is not model  # the last checkpoint


def test_the_lesson_answers_read_the_instance_the_app_holds(monkeypatch):
    from classroom import answers

    loads = []
    real = models.load
    monkeypatch.setattr(models, "load", lambda *a, **k: loads.append(a) or real(*a, **k))
    bert = models.shared("bert")  # as the app's model store holds it
    answers._bert_trace.cache_clear()
    trace = answers._bert_trace()
    assert trace.tokens[0] == "[CLS]" and models.shared("bert") is bert
    assert loads == [("bert", "cpu", "float32", None)]  # the store's one load; the answer loaded nothing
