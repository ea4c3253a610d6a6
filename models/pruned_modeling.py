"""The classes of a pruned model, and the slicing that makes it: shipped inside every pruned export.

This file imports torch and transformers only, because a copy of it travels in each exported folder as
`modeling_pruned.py`, with FAMILY set to the export's family ("bert", "gpt2", "llama", ...). config.json's
`auto_map` names its classes, so the folder loads wherever transformers is, without this project:

    AutoModelForSequenceClassification.from_pretrained("PRUNED/", trust_remote_code=True)
    pipeline("text-generation", model="PRUNED/", trust_remote_code=True)   # a pruned GPT-2 or Llama

transformers 5 keeps one head count for all layers and has no prune_heads, so a pruned class builds the
unpruned model from the config and slices the heads named in config.pruned_heads ({layer: [heads]}, in the
original numbering) out of Q, K, V and the output projection before the weights load (pruned_slicing.py, shipped
beside this file, holds the slicing of each layout). The weights are saved as the variant "pruned"
(model.pruned.safetensors): a stock class looks for model.safetensors and refuses the folder, where loading the pruned
tensors into an unpruned model would silently re-initialise the attention.
Thirteen layouts (LAYOUTS; attention_layers finds them by their members, SHAPES): BERT's
(encoder.layer[i].attention.self / .output.dense: BERT, RoBERTa, ELECTRA, MiniLM), GPT-2's (h[i].attn: Conv1D c_attn
holding [q | k | v] columns, c_proj rows: GPT-2, GPT-1), Llama's (layers[i].self_attn: q_proj, k_proj, v_proj, o_proj
or dense: Llama, Mistral, Qwen2, Phi, Llama 4, and with per-head sinks or norms gpt-oss, Granite-SWA, StableLM),
Phi-3's (one qkv_proj of [q | k | v] rows, o_proj), OPT's (q/k/v_proj and out_proj, no key/value groups: OPT, BioGPT,
XGLM, GPT-J, GPT-Neo), GPT-NeoX's (one query_key_value of [q_h | k_h | v_h] rows head by head, dense: GPT-NeoX,
Persimmon, GPT-NeoX-Japanese, BLOOM), Falcon's (query_key_value by key/value group: grouped, multi-query or
multi-head), CodeGen's (qkv_proj in 4 blocks of [q | v | k]), CTRL's (Wq, Wk, Wv, dense), GPT-BigCode's (a Linear
c_attn, one key/value head or one per head), MPT's (one Wqkv of [q | k | v] rows, out_proj), DBRX's (one Wqkv of [q |
k | v] rows by key/value group, out_proj, inside its norm_attn_norm) and multi-head latent attention's (MLA: q_b_proj
or q_proj, kv_b_proj, o_proj cut per head, the latents shared: DeepSeek-V2/V3/V3.2, GLM-4-MoE-Lite, GLM-MoE-DSA,
MiniCPM3, Youtu, Ling's Bailing). A hybrid (Jamba, Qwen3-Next, LFM2, Nemotron-H, MiniMax, ...) is sliced in its
attending layers alone, numbered 0, 1, ... in order as the app numbers them (layer_kinds.py, shipped beside this file,
reads which from the config); its other layers stay whole. With grouped-query attention (Llama, Phi-3, Falcon) a
key/value head goes only with every query head that reads it; a group that keeps some of its query heads keeps its
keys and values, and a layer whose groups keep unequal numbers gets silent padding heads or per-head copies, whichever
is smaller (see kv_layout). Does not fine-tune, does not prune encoder-decoders or other layouts (CPM-Ant,
LongCat-Flash's two MLAs a layer), keeps the ALiBi slope of each head it keeps (BLOOM, MPT, Falcon), refuses Doge (its
dynamic mask mixes the heads' values), and does not check that heads are independent once cut (the project does,
before it exports).
"""
from __future__ import annotations

import transformers
from torch import nn
from transformers.models.auto import configuration_auto, modeling_auto

from .layer_kinds import attending
from .pruned_slicing import (  # noqa: F401 (kept, kv_layout, layout_size, partial_groups, slice_linear: re-exported)
    LAYOUTS,
    kept,
    kv_layout,
    layout_size,
    normalise,
    partial_groups,
    slice_linear,
)

FAMILY = ""        # the copy in an exported folder names its family here; this project's copy stays empty
VARIANT = "pruned"  # the weights file: model.pruned.safetensors
AUTOS = {  # Auto class -> transformers' mapping from model_type to that head's class name
    "AutoModel": "MODEL_MAPPING_NAMES",
    "AutoModelForSequenceClassification": "MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES",
    "AutoModelForTokenClassification": "MODEL_FOR_TOKEN_CLASSIFICATION_MAPPING_NAMES",
    "AutoModelForMaskedLM": "MODEL_FOR_MASKED_LM_MAPPING_NAMES",
    "AutoModelForCausalLM": "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES",
    "AutoModelForQuestionAnswering": "MODEL_FOR_QUESTION_ANSWERING_MAPPING_NAMES",
}




def head_positions(model: nn.Module) -> list[list[int]] | None:
    """Each layer's original head at each query position (-1: a silent head) of a Llama-style model, its layers
    unpruned where never sliced; None for other layouts (their positions are the kept heads in order)."""
    try:
        layout, attentions = attention_layers(model)
    except ValueError:
        return None
    if layout not in GROUPED:
        return None
    return [list(getattr(a, "head_of", None) or range(a.config.num_attention_heads)) for a in attentions]


def heads_at(plan: dict, layer: int, n_heads: int, positions: list[list[int]] | None = None) -> list[int]:
    """The original head at each position of `layer` once `plan` ({layer: [heads]}, original numbering) was cut from
    n_heads: the layer's `positions` where the model says which heads it holds (head_positions: Llama-style), else
    the kept heads in order, and [-1] (one silent head) when the layer lost them all. The one place this is decided.
    ({"0": [1]}, 0, 4) -> [0, 2, 3];  ({"0": [1]}, 1, 4) -> [0, 1, 2, 3];  ({0: [0, 1]}, 0, 2) -> [-1]"""
    if positions is not None:
        return list(positions[layer])
    gone = set(normalise(plan).get(layer, ()))
    return [h for h in range(n_heads) if h not in gone] or [-1]


def original_plan(model: nn.Module, plan: dict) -> dict[int, list[int]] | None:
    """The heads of the original model a Llama-style model lacks once `plan` (positions as it is now) goes too:
    its earlier cuts and the plan's, in the original numbering; None for other layouts. {} -> the earlier cuts."""
    positions = head_positions(model)
    if positions is None:
        return None
    plan, n = normalise(plan), model.config.num_attention_heads
    held = [{h for p, h in enumerate(at) if h >= 0 and p not in plan.get(layer, [])}
            for layer, at in enumerate(positions)]
    return {layer: gone for layer, keep in enumerate(held) if (gone := [h for h in range(n) if h not in keep])}


# the layouts that keep each layer's head positions (head_of) on its attention
GROUPED = ("Llama", "Phi-3", "Falcon", "DBRX")


def attention_layers(model: nn.Module) -> tuple[str, list[nn.Module]]:
    """(layout name, each layer's attention module) of a model real pruning can slice; ValueError otherwise, with
    the sentence that says why (ALIBI, CROSS_HEAD, or REFUSED for a layout not in SHAPES)."""
    base = _base(model)
    blocks = getattr(getattr(base, "encoder", None), "layer", None)
    if blocks is not None and all(hasattr(getattr(b, "attention", None), "self") for b in blocks):
        return "BERT", [b.attention for b in blocks]
    if getattr(base, "h", None) is not None and all(hasattr(getattr(b, "attn", None), "c_attn") and not isinstance(
            b.attn.c_attn, nn.Linear) and hasattr(b.attn, "split_size") for b in base.h):  # Conv1D: GPT-2, GPT-1
        return "GPT-2", [b.attn for b in base.h]
    if getattr(base, "encoder", None) is not None:  # an encoder-decoder: its cross-attention is not sliced
        raise ValueError(REFUSED)
    blocks = getattr(base, "layers", None) or getattr(getattr(base, "decoder", None), "layers", None) or \
        getattr(base, "h", None) or getattr(base, "blocks", None)     # h: GPT-J, GPT-Neo, CodeGen, Falcon; MPT
    config = getattr(model, "config", None) or getattr(base, "config", None)
    ids = attending(config) if blocks else None   # a hybrid: its attending layers alone, numbered as the app does
    blocks = blocks if ids is None else [blocks[i] for i in ids]
    attentions = [_attention(b) for b in blocks or []]
    if attentions and all(a is not None for a in attentions):
        for part, why in CROSS_HEAD.items():
            if any(hasattr(a, part) for a in attentions):
                raise ValueError(why)
        for layout, parts in SHAPES.items():
            if all(_fits(a, part) for a in attentions for part in parts):
                if adds_alibi(model) and layout not in ALIBI_KEPT:
                    raise ValueError(ALIBI)
                return layout, attentions
    raise ValueError(ALIBI if adds_alibi(model) else REFUSED)


def _attention(block: nn.Module) -> nn.Module | None:
    """A decoder block's attention module: self_attn, attention, self_attention (Falcon), attn (GPT-J) or
    multi_head_attention (CTRL), and the module inside GPT-Neo's attn (attn.attention) that holds the projections."""
    block = getattr(block, "norm_attn_norm", block)  # DBRX: its norms and attention in one wrapper
    found = next((m for name in ("self_attn", "attention", "self_attention", "attn", "multi_head_attention", "mixer")
                  if isinstance(m := getattr(block, name, None), nn.Module)), None)
    inner = getattr(found, "attention", None)
    return inner if isinstance(inner, nn.Module) else found


def _base(model: nn.Module) -> nn.Module:
    """The module under a task head (base_model), or the model's .model where base_model is the model itself."""
    base = getattr(model, "base_model", model)
    if base is model and isinstance(getattr(model, "model", None), nn.Module):  # a prefix it does not use: Llama 4
        base = model.model
    return base


def adds_alibi(model: nn.Module) -> bool:
    """Whether a model adds ALiBi biases to its attention scores: its config says so (Falcon's alibi, MPT's
    attn_config.alibi, an object or a dict) or, where it says nothing, its model builds them (BLOOM's
    build_alibi_tensor). The one test the pruned export's refusal and models.block's positions both use; it does
    not look at the scores.  adds_alibi(<a BLOOM or MPT>) -> True;  adds_alibi(<a Llama, GPT-2 or Falcon>) -> False"""
    base = _base(model)
    config = getattr(model, "config", None) or getattr(base, "config", None)
    attn_config = getattr(config, "attn_config", None)
    flags = [getattr(config, "alibi", None),
             attn_config.get("alibi") if isinstance(attn_config, dict) else getattr(attn_config, "alibi", None)]
    if any(f is not None for f in flags):
        return any(flags)
    return any("alibi" in name for name in dir(type(base)))


def _fits(attention: nn.Module, part: str) -> bool:
    """Whether an attention module has the member `part` names ("a|b": either; "!a": not a); a module member
    must be an nn.Linear (a projection of its own class is sliced otherwise)."""
    if part.startswith("!"):
        return not hasattr(attention, part[1:])
    found = [getattr(attention, p, None) for p in part.split("|")]
    return any(m is not None and (not isinstance(m, nn.Module) or isinstance(m, nn.Linear)) for m in found)


# each decoder layout's attention, by the members that name it ("a|b": either, "!a": not a); the first that fits
# is taken. An OPT-style module with kdim (TrOCR) reshapes its output with its input's width: not sliced
SHAPES = {"Llama": ("q_proj", "k_proj", "v_proj", "o_proj|dense|out_proj", "num_key_value_groups", "head_dim"),
          "Phi-3": ("qkv_proj", "o_proj", "num_key_value_groups", "num_key_value_heads", "head_dim"),
          "OPT": ("q_proj", "k_proj", "v_proj", "out_proj", "num_heads|num_attention_heads", "head_dim", "!kdim",
                  "!num_key_value_groups"),
          "Falcon": ("query_key_value", "dense", "num_heads", "num_kv_heads", "head_dim", "new_decoder_architecture"),
          "GPT-NeoX": ("query_key_value", "dense", "head_size|head_dim"),
          "CodeGen": ("qkv_proj", "out_proj", "num_attention_heads", "head_dim", "!num_key_value_groups"),
          "CTRL": ("Wq", "Wk", "Wv", "dense", "num_heads", "head_dim"),
          "GPT-BigCode": ("c_attn", "c_proj", "multi_query", "kv_dim", "num_heads", "head_dim", "embed_dim"),
          "MLA": ("q_b_proj|q_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj", "qk_head_dim", "qk_nope_head_dim",
                  "v_head_dim", "num_heads"),
          "MPT": ("Wqkv", "out_proj", "n_heads", "head_dim"),
          "DBRX": ("Wqkv", "out_proj", "num_heads", "num_key_value_heads", "num_key_value_groups", "hidden_size",
                   "head_dim")}
REFUSED = ("Heads can be cut out of BERT-style encoders (BERT, RoBERTa, ELECTRA), GPT-2, GPT-1, Llama-style (Llama, "
           "Mistral, Qwen2, Phi, gpt-oss, StableLM, LFM2, and the attending layers of hybrids such as Jamba and "
           "Qwen3-Next), Phi-3, OPT-style (OPT, BioGPT, XGLM, GPT-J, GPT-Neo), "
           "GPT-NeoX-style, BLOOM, Falcon, CodeGen, CTRL, GPT-BigCode, MPT and latent-attention (DeepSeek-V2/V3, "
           "MiniCPM3, GLM-4-MoE-Lite) and DBRX decoders; this model is laid out otherwise, so only its gates apply.")
# the layouts whose attention takes its ALiBi rows as arguments _keep_slopes cuts: BLOOM's `alibi` (batch by head),
# MPT's `position_bias` (a row per head), Falcon's `alibi` and the mask its model adds the biases to (batch, head, ...)
ALIBI_KEPT = {"GPT-NeoX": ("alibi",), "MPT": ("position_bias",), "Falcon": ("alibi", "attention_mask")}
ALIBI = ("This model adds ALiBi biases whose slopes it computes from each head's index and the head count, so with "
         "heads cut out its other heads would get other slopes and compute something else: only its gates apply.")
CROSS_HEAD = {"dt_proj": "This model's dynamic attention mask reads every key/value head's values through one "
                         "projection (dt_proj), so cutting heads out would change the other heads' masks: only its "
                         "gates apply.",
              "r_proj": "This model's attention adds relative-position logits from a projection with rows for every "
                        "head (r_proj, Inkling's), which the slicing does not cut, so a cut model would not be the "
                        "gated one: only its gates apply."}


def slice_heads(model: nn.Module, plan: dict) -> nn.Module:
    """Remove plan's heads in place from an unpruned model of a layout in LAYOUTS; returns the model. A layer that
    loses every head keeps one with zero output columns (transformers cannot run zero heads), which contributes
    exactly nothing."""
    plan = normalise(plan)
    if not plan:
        return model
    layout, attentions = attention_layers(model)
    for layer, heads in plan.items():
        LAYOUTS[layout](attentions[layer], heads)
    if adds_alibi(model):
        _keep_slopes(model, attentions, plan, ALIBI_KEPT[layout])
    return model


def _keep_slopes(model: nn.Module, attentions: list[nn.Module], plan: dict, names: tuple[str, ...]) -> None:
    """ALiBi kept per head (BLOOM, MPT, Falcon): the model builds one bias for every head of its config, a slope each by
    the head's index and count, and hands it to every layer's attention (`names`: BLOOM's `alibi`, rows batch by head;
    MPT's `position_bias`, a row per head; Falcon's `alibi` and the mask it adds them to); each cut layer's attention
    takes the rows of the heads it keeps (`alibi_heads`, original numbers; head 0's for the silent head a layer that
    lost every head keeps, or that pads a group of a grouped layer), so each keeps its own slope. Cut again (plan by
    positions now), the kept numbers compose. A part of the model's definition, the same on every call."""
    n = model.config.num_attention_heads
    for layer, heads in plan.items():
        attn = attentions[layer]
        had = getattr(attn, "alibi_heads", None)
        before = had or list(range(n))     # a list: the model may be built on the meta device
        # grouped (Falcon's): its positions, a silent one reading head 0's row; else the heads kept, in order
        attn.alibi_heads = ([max(h, 0) for h in attn.head_of] if getattr(attn, "head_of", None) else
                            [h for p, h in enumerate(before) if p not in heads] or before[:1])
        if had is None:
            attn.register_forward_pre_hook(_kept_rows(n, names), with_kwargs=True)


def _kept_rows(n: int, names: tuple[str, ...]):
    """The hook that hands an attention the ALiBi rows of its `alibi_heads` out of the rows of all n heads, in each
    argument `names` names (a mask without a row per head, Falcon's without ALiBi, is left as it is)."""
    def kept_rows(module, args, kwargs):
        out = dict(kwargs)
        for name in names:
            bias = kwargs.get(name)  # BLOOM: (B * n, 1, keys); MPT: (n, 1, keys); Falcon: (B, n, 1 or queries, keys)
            if bias is None or (bias.dim() == 4 and bias.shape[1] != n):
                continue
            rows = bias.reshape(-1, n, *bias.shape[-2:])[:, module.alibi_heads]   # (B or 1, kept, 1 or q, keys)
            out[name] = rows.reshape(*bias.shape[:-3], -1, *bias.shape[-2:])
        return args, out
    return kept_rows


def _pruned(base: type, config_class: type) -> type:
    """A subclass of transformers' `base` that slices config.pruned_heads out as it is built and reads the
    "pruned" weights variant. Its weights are initialised as `base`'s are: transformers takes a class defined outside
    its package for remote code whose init it cannot follow and skips a module whose own tensors all loaded, which
    left a buffer filled by a parent's init (Falcon-H1's mup_vector) uninitialised."""
    def __init__(self, config, *args, **kwargs):
        base.__init__(self, config, *args, **kwargs)
        slice_heads(self, getattr(config, "pruned_heads", None) or {})

    @classmethod
    def from_pretrained(cls, *args, **kwargs):
        kwargs.setdefault("variant", VARIANT)
        return super(klass, cls).from_pretrained(*args, **kwargs)

    klass = type(f"Pruned{base.__name__}", (base,), {"config_class": config_class, "__init__": __init__,
                                                     "from_pretrained": from_pretrained, "__module__": __name__,
                                                     "is_custom_code": classmethod(lambda cls: False)})
    return klass


def classes(family: str) -> dict[str, type]:
    """{"AutoConfig": PrunedBertConfig, "AutoModel": PrunedBertModel, ...} for a family ('bert'): model_type
    'pruned-<family>', and a pruned class for each head transformers has for that family."""
    if family not in configuration_auto.CONFIG_MAPPING_NAMES:
        raise ValueError(f"Unknown model family {family!r}: a pruned export names its family in config.json.")
    base_config = configuration_auto.CONFIG_MAPPING[family]
    config = type(f"Pruned{base_config.__name__}", (base_config,),
                  {"model_type": f"pruned-{family}", "__module__": __name__})
    # save_pretrained writes a family's checkpoint names (a mixture of experts' experts one by one, where the model
    # fuses them; GPT-NeoX's head as embed_out): the pruned model_type and classes read them back through the
    # family's own conversion, kept by model_type or by class name
    from transformers import conversion_mapping

    def follow(name: str, pruned: str) -> None:
        found = conversion_mapping.get_checkpoint_conversion_mapping(name)
        if found is not None:
            conversion_mapping.register_checkpoint_conversion_mapping(pruned, found, overwrite=True)

    follow(family, f"pruned-{family}")
    out = {"AutoConfig": config}
    for auto, mapping in AUTOS.items():
        name = getattr(modeling_auto, mapping).get(family)
        # Mistral 4's, named only as an image-text-to-text class: read here, not from models.hf.families
        # (causal_lm_class), as this file runs in an exported folder without the project
        if name is None and auto == "AutoModelForCausalLM":
            name = modeling_auto.MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES.get(family)
            name = name if name and name.endswith("ForCausalLM") else None
        if name is not None and hasattr(transformers, name):
            out[auto] = _pruned(getattr(transformers, name), config)
            follow(name, out[auto].__name__)
    return out


if FAMILY:  # the copy inside an exported folder: the names config.json's auto_map points at
    globals().update({cls.__name__: cls for cls in classes(FAMILY).values()})
