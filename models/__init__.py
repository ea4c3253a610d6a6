"""Model registry: available() names what can be loaded, load() builds it on a device.

Each entry is a module with `load(name, device, dtype) -> model` (one saved across its training, 'induction',
also takes checkpoint=), imported only when asked for, so importing this package is cheap. A model has `.label`
(honest one-line description), `.device`, and `.attend(text, text_b=None) -> AttentionTrace` (a vision model:
`.attend(image)`). The built-ins 'gpt', 'vit' and 'seq2seq-transformer' are Hugging Face folders under
models/weights/, loaded like any 'hf:' folder and listed only while their folder is there.
Nothing here keeps a model alive: the app's stores do. shared() hands out the instance someone already holds instead
of a second copy (a weak registry), for callers that only read the model.
"""
from __future__ import annotations

import functools
import importlib
import importlib.util
import logging
import threading
import weakref

from analysis.trace import AttentionTrace
from limits.errors import UserError
from models.folders import HF_BUILTINS, HF_UNLISTED, WEIGHTS, builtin_folder  # noqa: F401 (the registry's names)

__all__ = ["AttentionTrace", "available", "builtin_folder", "defer_torchao", "load", "shared", "supported", "HF_PREFIX"]

HF_PREFIX = "hf:"

# registry key -> module that defines load(name, device, dtype)
_MODULES = {
    "bert": "models.hf",
    "toy": "models.toy",
    "tiny": "models.tiny",
    "seq2seq-bahdanau": "models.seq2seq",
    "seq2seq-luong": "models.seq2seq",
    **{name: "models.hf" for name in HF_BUILTINS},
    "induction": "models.induction",
}
# models saved at several points of their training: load(name, checkpoint=step) picks one (None: the last), as does
# the key "name@step" (the sidebar's model, so a link or a view can open one checkpoint in any view)
_CHECKPOINTED = {"induction"}
CHECKPOINT_MARK = "@"


def checkpoint_key(name: str) -> tuple[str, int] | None:
    """('induction', 1100) for 'induction@1100' when that checkpoint ships (its file is looked for; nothing loads),
    else None: checkpoint_key('induction@1100') -> ('induction', 1100); checkpoint_key('bert') -> None."""
    base, mark, step = (name or "").partition(CHECKPOINT_MARK)
    if not mark or base not in _CHECKPOINTED or not step.isdigit() or len(step) > 9:
        return None

    return (base, int(step)) if (WEIGHTS / base / f"step_{int(step):05d}.safetensors").is_file() else None
# loadable by name for the views that need them, but not offered in the sidebar's model list
_UNLISTED = {
    "seq2seq-none": "models.seq2seq",
    "reverse-attention": "models.seq2seq",
    "reverse-none": "models.seq2seq",
    **{name: "models.hf" for name in HF_UNLISTED},
}


class _TorchaoImportNoise(logging.Filter):
    """transformers imports torchao when it loads any model. On a CPU build of torch, torchao's two CUDA-only
    extensions fail to load (logged as a warning each, harmless: nothing here uses them), and torchao registers
    enums the way torch now calls deprecated; those lines alone are dropped, every other warning stays."""

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        return not ((msg.startswith("Failed to load") and "torchao/_C_" in msg)
                    or ("register_constant() on Enum subclasses" in msg))


logging.getLogger("torchao").addFilter(_TorchaoImportNoise())
logging.getLogger("torch.utils._pytree").addFilter(_TorchaoImportNoise())


_TORCHAO_LOCK = threading.Lock()


@functools.cache
def defer_torchao() -> None:
    """transformers imports its torchao quantizer with every model class, and that module imports torchao (81 MB,
    about a second) for one function it calls only on a torchao-quantized checkpoint. Import the quantizer with
    torchao hidden from it, then put transformers' own availability check back wherever the import bound the hidden
    one (the quantizer, its quantization configs), and give the quantizer that function as a stand-in that imports
    torchao when first called. The precision view imports torchao itself when it quantizes; nothing else here needs
    it. Once per process, one thread at a time."""
    import sys

    import transformers.utils as hf_utils

    with _TORCHAO_LOCK:
        found = hf_utils.is_torchao_available

        def hidden(*args, **kwargs) -> bool:
            return False

        hf_utils.is_torchao_available = hidden
        try:
            import transformers.quantizers.quantizer_torchao as quantizer
        finally:
            hf_utils.is_torchao_available = found
            for name, module in list(sys.modules.items()):
                if name.startswith("transformers") and vars(module).get("is_torchao_available") is hidden:
                    module.is_torchao_available = found
        if not hasattr(quantizer, "flatten_tensor_state_dict"):
            def flatten_tensor_state_dict(*args, **kwargs):
                from torchao.prototype.safetensors.safetensors_support import flatten_tensor_state_dict as flatten

                return flatten(*args, **kwargs)

            quantizer.flatten_tensor_state_dict = flatten_tensor_state_dict


def supported():
    """pandas DataFrame, a row per architecture (model_type): kind, how its attention is read, and a column per view
    ("yes" or the sentence that view says): models.architectures.table."""
    from models.architectures import table

    return table()


def available() -> list[str]:
    """Registry keys whose module (and, for a built-in folder, config.json) is present, e.g. ['bert', 'toy', ...];
    'hf:<id>' is always accepted. A built-in folder is looked for on each call (it may be added later)."""
    return [k for k, mod in _MODULES.items() if _module_present(mod)
            and (k not in HF_BUILTINS or (builtin_folder(k) / "config.json").is_file())]


@functools.cache
def _module_present(name: str) -> bool:
    """Whether the module's code is here: looked up once per process (every page run asks)."""
    return importlib.util.find_spec(name) is not None


def load(name: str, device: str = "cpu", dtype: str = "float32", checkpoint: int | None = None):
    """Build model `name` on `device` (for 'induction', at a training step: None is the last checkpoint).
    Raises ValueError with one sentence a user can act on."""
    name = (name or "").strip()
    defer_torchao()
    if not name.startswith(HF_PREFIX) and CHECKPOINT_MARK in name:  # 'induction@1100'
        found = checkpoint_key(name)
        if found is None or checkpoint not in (None, found[1]):
            raise UserError(f"No model '{name[:60]}': a checkpoint is written name@step with a step that ships, "
                            f"e.g. induction@1100.")
        name, checkpoint = found
    if checkpoint is not None and name not in _CHECKPOINTED:
        raise UserError(f"Only {', '.join(sorted(_CHECKPOINTED))} ships checkpoints; load '{name}' without one.")
    if name.startswith(HF_PREFIX):
        import limits
        from models import hf

        return hf.load_any(limits.check_model_spec(name[len(HF_PREFIX):]), device, dtype,
                           hub_only=not limits.current().local_models)
    modules = {k: _MODULES[k] for k in available()} | _UNLISTED
    if name in HF_BUILTINS and name not in modules:
        modules[name] = _MODULES[name]  # its folder is missing: models.hf.load says so in one sentence
    if name not in modules:
        choices = ", ".join(available())
        raise UserError(
            f"Unknown model '{name}': choose one of {choices}, or hf:<folder or hub id> for a Hugging Face model."
        )
    module = importlib.import_module(modules[name])
    if name in _CHECKPOINTED:
        return module.load(name, device, dtype, checkpoint=checkpoint)
    return module.load(name, device, dtype)


_LIVE: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # (name, device, dtype, checkpoint) -> a model
_LIVE_LOCK = threading.Lock()


def shared(name: str, device: str = "cpu", dtype: str = "float32", checkpoint: int | None = None):
    """load(), except that a model some caller still holds (the app's model store, another reader) is returned
    instead of a second copy: the same weights in memory once. For callers that only read the model (attend,
    decode, gates in their ContextVar); one that changes it in place calls load(). Holds nothing alive itself.

        shared("bert") is shared("bert", "cpu", "float32")   # while either is referenced
        shared("induction@1100") is shared("induction", checkpoint=1100)
    """
    found = checkpoint_key(name) if checkpoint is None else None
    key = (*found, device, dtype) if found else ((name or "").strip(), checkpoint, device, dtype)
    with _LIVE_LOCK:
        model = _LIVE.get(key)
    if model is None:
        model = load(name, device, dtype, checkpoint)
        with _LIVE_LOCK:
            model = _LIVE.setdefault(key, model)
    return model
