"""Where the built-in weights are: models/weights/, and the built-in Hugging Face folders in it by registry key.
A leaf of models/ (the registry and models.hf both read it); it loads nothing.
"""
from __future__ import annotations

from pathlib import Path

WEIGHTS = Path(__file__).parent / "weights"
# built-in Hugging Face folders (registry key -> folder under WEIGHTS), written by train/*.py
HF_BUILTINS = {"gpt": "gpt", "vit": "vit", "seq2seq-transformer": "seq2seq-transformer"}
# the other two layouts of `gpt` (train/gpt.py), loadable by name for the attention-sinks view only
HF_UNLISTED = {"gpt-sink": "gpt-sink", "gpt-nobos": "gpt-nobos"}


def builtin_folder(name: str) -> Path:
    """models/weights/<folder> of a built-in Hugging Face model: 'gpt' -> .../models/weights/gpt"""
    return WEIGHTS / {**HF_BUILTINS, **HF_UNLISTED}[name]
