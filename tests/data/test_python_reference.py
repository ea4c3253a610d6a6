import pytest

from data import python_reference as ref


def test_split_holds_out_every_tenth_topic():
    train, test = ref.split("train"), ref.split("test")
    assert list(test) == ["assert", "bitwise", "comparisons", "else", "identifiers", "numeric-types",
                          "specialattrs", "typesmethods"]
    assert not set(train) & set(test) and len(train) + len(test) == len(ref.topics()) == 78
    assert "if" not in train  # the same text as "else", which is held out
    assert test["assert"].startswith('The "assert" statement')


def test_documents_hold_docstrings_for_training_only():
    train, test = ref.documents("train"), ref.documents("test")
    assert len(test) == 8 and len(train) == 70 + len(ref.docstrings())
    assert all(len(doc) >= ref.MIN_DOCSTRING for doc in ref.docstrings().values())
    assert not any(name.split(".")[0] in ref.SKIP for name in ref.docstrings())
    assert not set(test) & set(train)


def test_unknown_split_is_refused():
    with pytest.raises(ValueError, match="train, test"):
        ref.split("validation")
