"""What the Positional encodings view reads from an encoder: the learned table and the static word vectors are the
very weights of the loaded MiniLM (read, not recomputed), a relative-position encoder has no table, and a long
sentence is cut to DEMO_TOKENS with its full count kept."""
import types

import numpy as np
import pytest
import torch

import models
from experiments import positional as E


@pytest.fixture(scope="module")
def bert():
    return models.load("bert")


def test_the_learned_table_is_the_encoders_position_embeddings(bert):
    table = E.learned_table(bert)
    weight = bert.model.embeddings.position_embeddings.weight.detach().numpy()  # (512, 384)
    assert table.dtype == np.float32 and table.shape == (512, 384)
    np.testing.assert_array_equal(table, weight)


def test_an_encoder_with_relative_positions_has_no_table():
    from transformers import DebertaV2Config, DebertaV2Model

    config = DebertaV2Config(vocab_size=32, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                             intermediate_size=32, position_biased_input=False, relative_attention=True)
    assert E.learned_table(types.SimpleNamespace(model=DebertaV2Model(config))) is None


def test_word_vectors_are_the_embedding_rows_of_the_sentences_first_tokens(bert):
    tokens, rows, n = E.word_vectors(bert, "the man walked the dog")
    ids = bert.tokenizer("the man walked the dog", add_special_tokens=False)["input_ids"]
    assert tokens == ["the", "man", "walked", "the", "dog"] and n == 5
    torch.testing.assert_close(rows, bert.model.embeddings.word_embeddings.weight[ids].detach(), atol=0, rtol=0)
    tokens, rows, n = E.word_vectors(bert, " ".join(["dog"] * 30))
    assert len(tokens) == E.DEMO_TOKENS and rows.shape == (E.DEMO_TOKENS, 384) and n == 30
