"""Model registry: available() names what can be loaded, load() builds it on a device.

Each entry is a module with `load(name, device, dtype) -> model`, imported only when asked for, so
importing this package is cheap. A model has `.label` (honest one-line description), `.device`,
and `.attend(text, text_b=None) -> AttentionTrace`. Nothing here caches: the app does.
"""
from __future__ import annotations

import importlib
import importlib.util

from analysis.trace import AttentionTrace

__all__ = ["AttentionTrace", "available", "load", "HF_PREFIX"]

HF_PREFIX = "hf:"

# registry key -> module that defines load(name, device, dtype); hf also load_encoder(spec, device, dtype)
_MODULES = {
    "bert": "models.hf",
    "toy": "models.toy",
    "tiny": "models.tiny",
    "seq2seq-bahdanau": "models.seq2seq",
    "seq2seq-luong": "models.seq2seq",
}
# loadable by name for the views that need them, but not offered in the sidebar's model list
_UNLISTED = {
    "seq2seq-none": "models.seq2seq",
    "reverse-attention": "models.seq2seq",
    "reverse-none": "models.seq2seq",
}


def available() -> list[str]:
    """Registry keys whose module is present, e.g. ['bert', 'toy', ...]; 'hf:<id>' is always accepted."""
    return [k for k, mod in _MODULES.items() if importlib.util.find_spec(mod) is not None]


def load(name: str, device: str = "cpu", dtype: str = "float32"):
    """Build model `name` on `device`. Raises ValueError with one sentence a user can act on."""
    name = (name or "").strip()
    if name.startswith(HF_PREFIX):
        import limits
        from models import hf

        return hf.load_encoder(limits.check_model_spec(name[len(HF_PREFIX):]), device, dtype,
                               hub_only=not limits.current().local_models)
    modules = {k: _MODULES[k] for k in available()} | _UNLISTED
    if name not in modules:
        choices = ", ".join(available())
        raise ValueError(
            f"Unknown model '{name}': choose one of {choices}, or hf:<folder or hub id> for any BERT-like encoder."
        )
    module = importlib.import_module(modules[name])
    return module.load(name, device, dtype)
