"""What every model the registry loads offers (models.load): the contract as a type, checked by a test over
every registry key. It describes; it loads nothing and holds no model code.

    from models.contract import AttentionModel, FAMILIES
    isinstance(models.load("tiny"), AttentionModel)   # True: family, label, device, notices, attend
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

from analysis.trace import AttentionTrace

# what `family` may say: Hugging Face families, then the built-ins of models/ (views decide what to show by it)
FAMILIES = ("encoder", "decoder", "encoder-decoder", "vision", "tiny", "toy", "rnn", "induction")


@runtime_checkable
class AttentionModel(Protocol):
    family: str                 # one of FAMILIES
    label: str                  # an honest one-line description
    device: str
    notices: tuple[str, ...]    # what the user should know about this load

    def attend(self, *args, **kwargs) -> AttentionTrace:
        """Text (and a second text) -> AttentionTrace; a vision model: an image."""
        ...
