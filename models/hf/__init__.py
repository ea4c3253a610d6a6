"""Hugging Face models of every family the app shows, from any folder or hub id, and the built-ins made that way.

    load_any("./folder")   encoders (models.hf.encoders.Encoder), decoders (decoders.Decoder), encoder-decoders
                           (encdec.EncoderDecoder) and vision transformers (vision.Vision), picked by the
                           config's model_type (a text architecture not wired by hand: by transformers' auto
                           mappings); any other family gets one sentence naming what is supported
    load("gpt")            registry entry: 'bert' is the packaged MiniLM; 'gpt', 'vit' and
                           'seq2seq-transformer' are folders under models/weights/ (models.folders.builtin_folder)

Every model has .label, .device, .family ("encoder", "decoder", "encoder-decoder", "vision") and
.attend(). Loading rules (safetensors only, no remote code, eager attention) are in models.hf.common.
The encoder's names (Encoder, load_encoder, minilm_path, check_text, has_mlm_head, pruned_plan) stay
importable from here.
"""
from __future__ import annotations

from limits.errors import UserError
from models.hf.common import check_text, family_of, minilm_path, name_of, read_config
from models.hf.encoders import Encoder, has_mlm_head, load_encoder, pruned_plan
from models.hf.reach import hub_folder, where

__all__ = ["Encoder", "check_text", "has_mlm_head", "load", "load_any", "load_encoder", "minilm_path",
           "pruned_plan"]


def load_any(spec: str, device: str = "cpu", dtype: str = "float32", name: str | None = None,
             hub_only: bool = False):
    """The model at a folder or hub id, by its family; ValueError with one sentence if it cannot be shown.
    hub_only (hosted mode): spec is a hub id and nothing else: a server folder of that name is never read."""
    if hub_only:
        folder = hub_folder(spec)
        model = load_any(folder, device, dtype, name=name)
        model.label = model.label.replace(name_of(folder), spec, 1)
        return model
    spec, local = where(spec)
    family = family_of(read_config(spec, local), spec)
    if family == "encoder":
        return load_encoder(spec, device, dtype, local=local)
    if family == "decoder":
        from models.hf.decoders import load_decoder

        return load_decoder(spec, device, dtype, local=local, name=name)
    if family == "encoder-decoder":
        from models.hf.encdec import load_encdec

        return load_encdec(spec, device, dtype, local=local, name=name)
    from models.hf.vision import load_vision

    return load_vision(spec, device, dtype, local=local, name=name)


def load(name: str = "bert", device: str = "cpu", dtype: str = "float32"):
    """Registry entry: 'bert' (the packaged MiniLM) or a built-in folder ('gpt', 'vit', 'seq2seq-transformer')."""
    from models.folders import builtin_folder
    from models.hf import encoders

    if name == "bert":
        return encoders.load(name, device, dtype)
    folder = builtin_folder(name)
    if not (folder / "config.json").is_file():
        raise UserError(f"The built-in '{name}' is not in this copy of the app (models/weights/{folder.name}/ is "
                        f"missing): pick another model, or train it with its script in train/.")
    return load_any(str(folder), device, dtype, name=name)
