"""What every model the registry loads offers (models.load): the contract as a type, checked by a test over
every registry key. It describes; it loads nothing and holds no model code.

    from models.contract import AttentionModel, FAMILIES
    isinstance(models.load("tiny"), AttentionModel)   # True: family, label, device, notices, predicts, attend
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from analysis.trace import AttentionTrace

if TYPE_CHECKING:
    import torch

# what `family` may say: Hugging Face families, then the built-ins of models/ (views decide what to show by it)
HF_FAMILIES = ("encoder", "decoder", "encoder-decoder", "vision")  # a transformers module in `.model`
FAMILIES = (*HF_FAMILIES, "tiny", "toy", "rnn", "induction")
# the families whose models give one head's inputs as they compute them: head_qkv(text, layer, head) -> HeadQKV
HEAD_QKV = ("encoder", "decoder", "tiny", "induction", "toy")
# what `predicts` may say: a decoder's next token; an encoder-decoder's next output token or the token a masked-LM
# head fills in at a mask; a text classifier's class (of the text, or of each token); an image classifier's class;
# None for a model loaded without a head (an encoder's embeddings, a ViT's features, the toy) or with one whose
# prediction no view explains (a question-answering span, a BERT-style causal LM's next token)
PREDICTS = ("next token", "target token", "class", "image class", None)


@runtime_checkable
class AttentionModel(Protocol):
    family: str                 # one of FAMILIES
    label: str                  # an honest one-line description
    device: str
    notices: tuple[str, ...]    # what the user should know about this load
    predicts: str | None        # one of PREDICTS: what the head kept with the model predicts
    # the transformers causal LM whose forward(input_ids=...).logits gives the next token (a decoder's model, the causal
    # LM an encoder keeps); None for every other model (the decoders written here are read through their own net)
    next_token_model: torch.nn.Module | None
    tokenizer: object | None    # a transformers tokenizer (the toy: MiniLM's `tokenizers` one); None: own alphabet
    windows: Sequence[int | None]  # each layer's sliding window in tokens, None for full attention; () where none
    kv_head_of: list[int] | None   # query head -> the key/value head it reads (grouped-query); None: one each

    def attend(self, *args, **kwargs) -> AttentionTrace:
        """Text (and a second text) -> AttentionTrace; a vision model: an image."""
        ...


def named(thing) -> str:
    """How a sentence names `thing`: a model's label (one that keeps this contract), else its type's name (what an
    api caller passed in place of a model)."""
    return thing.label if isinstance(thing, AttentionModel) else type(thing).__name__
