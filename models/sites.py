"""Where each family keeps its heads' outputs and its residual stream: the places models.gates hooks.

A head site is one attention layer's output projection (BERT's attention.output.dense, GPT-2's Conv1D c_proj,
Llama/Mistral/Qwen2's o_proj, GPT-NeoX's dense, T5's o, BART's out_proj, ViT's o_proj, DistilBERT's out_lin, the
decoders written here: blocks[i].attn.c_proj): its input holds the heads side by side, (B, T, H*hs), just before
they are mixed. An encoder-decoder has three stacks, listed in this order: encoder self-attention, decoder
self-attention, cross-attention; every other model has one. A residual site is a layer (block) of the main stack
(the encoder of an encoder-decoder): its first input is the residual stream (B, T, C) entering that layer.

Found from the modules' layout, not the model's name, so a model with a task head and its base model give the same
sites: T5's and BART's two stacks by their places, two models joined as one (EncoderDecoderModel: bert2bert) by each
one's stack and the decoder layers' cross-attention, any other model's one stack as the first ModuleList of
config.num_hidden_layers layers that each hold an attention module (ATTENTION) with an output projection
(PROJECTION), a hybrid's attending layers alone (models.layout.attending, numbered as its trace is); the head size
is the module's own (HEAD_SIZE: latent attention's v_head_dim first), else the projection's input width over its
heads. Grouped-query attention needs nothing special: the projection's input has one slice per query head. It
changes nothing on the model (models.gates does the hooking) and does not cover ALBERT (its layers share one set of
weights, so one head cannot be touched in one layer alone), layers run more than once (HRM), a mixture of attention
experts (JetMoE) or two attentions a layer (LongCat-Flash): those are refused in one sentence.

    [s.name for s in head_sites(t5)]   # ['encoder 0', 'encoder 1', 'decoder 0 self', ..., 'decoder 1 cross']
"""
from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from limits.errors import UserError
from models import layout

COVERED = ("BERT-style encoders (BERT, RoBERTa, ELECTRA, DeBERTa-v2, DistilBERT), decoders with one stack of "
           "attention layers (GPT-2, GPT-Neo, GPT-NeoX, Llama, Mistral, Qwen2, OPT, BLOOM, Falcon, DeepSeek-V2/V3 "
           "and the like), T5, BART, Marian, two models joined as one encoder-decoder (bert2bert), ViT/DeiT and the "
           "decoders written here")


@dataclass(frozen=True)
class Site:
    name: str          # "layer 3", "encoder 0", "decoder 1 self", "decoder 1 cross"
    layer: int         # the layer within its stack
    proj: nn.Module    # the attention output projection; its input is (B, T, H*hs)
    head_size: int

    @property
    def heads(self) -> int:
        """Heads now (after pruning a layer may hold fewer): the projection's input width / head size."""
        width = self.proj.in_features if hasattr(self.proj, "in_features") else self.proj.weight.shape[0]  # Conv1D
        return int(width) // self.head_size


def module_of(model) -> nn.Module:
    """The torch module of a loaded model: an nn.Module as it is, else its .model (hf wrappers) or .net (tiny)."""
    if isinstance(model, nn.Module):
        return model
    for name in ("model", "net"):
        inner = getattr(model, name, None)
        if isinstance(inner, nn.Module):
            return inner
    raise UserError(f"Head interventions need a PyTorch model; {type(model).__name__} holds none: "
                    f"pick one of {COVERED}.")


def _first(obj, *names):
    for name in names:
        value = obj
        for part in name.split("."):
            value = getattr(value, part, None)
        if value is not None:
            return value
    return None


ATTENTION = ("self_attn", "attention", "attn.attention", "attn", "self_attention", "multi_head_attention",
             "self_att.self_attention", "mixer", "norm_attn_norm.attn")  # GPT-Neo's attn.attention, CTRL, CPM-Ant; DBRX
PROJECTION = ("o_proj", "c_proj", "out_proj", "out_lin", "dense", "o", "wo", "Wo", "attention_out", "output.dense")
HEAD_SIZE = ("v_head_dim", "head_size", "head_dim", "key_value_proj_dim", "attention_head_size",
             "self.attention_head_size", "dim_head")        # v_head_dim first: latent attention's values
HEADS = ("num_heads", "num_attention_heads", "n_head", "n_heads", "self.num_attention_heads")


def projection(attn: nn.Module) -> nn.Module | None:
    """An attention module's output projection (PROJECTION: whatever the family calls it), or None."""
    proj = _first(attn, *PROJECTION)
    return proj if isinstance(proj, nn.Module) and hasattr(proj, "weight") else None


def _width(proj: nn.Module) -> int:
    return int(proj.in_features if hasattr(proj, "in_features") else proj.weight.shape[0])  # Conv1D: (in, out)


def _site(attn: nn.Module | None, name: str, layer: int, config=None) -> Site:
    """The output projection and head size of one attention module, whatever the family calls them: the size
    attribute if it has one, else the projection's input width over its heads (the module's, else the config's)."""
    proj = projection(attn) if isinstance(attn, nn.Module) else None
    if proj is None:
        raise UserError(f"The attention module {type(attn).__name__} has no output projection this app knows; "
                        f"head interventions cover {COVERED}.")
    width, size = _width(proj), _first(attn, *HEAD_SIZE)
    heads = _first(attn, *HEADS) or getattr(config, "num_attention_heads", None)
    if not isinstance(size, int) and isinstance(heads, int) and heads and width % heads == 0:
        size = width // heads
    if not isinstance(size, int) or not size or width % size:
        raise UserError(f"The output projection of {type(attn).__name__} ({width} wide) does not split into heads "
                        f"this app can read; head interventions cover {COVERED}.")
    return Site(name, layer, proj, size)


def _attention_name(layer: nn.Module) -> str | None:
    """The first of ATTENTION that this layer holds as a module with an output projection, or None."""
    return next((a for a in ATTENTION if isinstance(_first(layer, a), nn.Module)
                 and isinstance(_first(_first(layer, a), *PROJECTION), nn.Module)), None)


def _stack(base: nn.Module) -> tuple[list[nn.Module], str] | None:
    """The layer stack of a one-stack model and its attention's attribute: the first ModuleList (modules() order)
    whose every entry holds the same attention module, with config.num_hidden_layers entries where the config says
    (HRM's two stacks of 2 run 16 times: refused, a gate there would act on every pass); a hybrid's layers that attend
    alone (models.layout.attending: Jamba's attention layers, not its mamba ones, numbered as its trace numbers them).
    None if there is none."""
    config = getattr(base, "config", None)
    n = getattr(config, "num_hidden_layers", None)
    kept = layout.attending(config) if isinstance(n, int) else None
    for mod in base.modules():
        if not isinstance(mod, nn.ModuleList) or len(mod) != (n if isinstance(n, int) else len(mod)) or not len(mod):
            continue
        layers = list(mod) if kept is None else [mod[i] for i in kept]
        names = {_attention_name(layer) for layer in layers}
        if layers and None not in names and len(names) == 1:
            return layers, names.pop()
    return None


CROSS = ("crossattention", "encoder_attn", "cross_attn")  # a decoder layer's attention over the encoder's output


def _joined(enc, dec) -> list[tuple[str, list[nn.Module], str, str | None]] | None:
    """The stacks of two models joined as one encoder-decoder (EncoderDecoderModel: bert2bert, bert2gpt2): the
    encoder's one stack, and the decoder's, whose layers also hold a cross-attention; None for any other model."""
    if not (isinstance(enc, nn.Module) and isinstance(dec, nn.Module) and hasattr(enc, "base_model")
            and hasattr(dec, "base_model")):
        return None
    e, d = _stack(enc.base_model), _stack(dec.base_model)
    cross = next((a for a in CROSS if d and isinstance(_first(d[0][0], a), nn.Module)), None)
    if e is None or d is None or cross is None:
        return None
    return [("encoder", e[0], e[1], None), ("decoder", d[0], d[1], cross)]


def _stacks(model) -> list[tuple[str, list[nn.Module], str, str | None]]:
    """[(stack name, its layers, self-attention attribute, cross-attention attribute or None)] of the model."""
    m = module_of(model)
    base = getattr(m, "base_model", m)
    if getattr(base, "blocks", None) is not None and all(hasattr(getattr(b, "attn", None), "c_proj")
                                                         for b in base.blocks):
        return [("layer", list(base.blocks), "attn", None)]                           # written here; nanoGPT
    enc, dec = getattr(base, "encoder", None), getattr(base, "decoder", None)
    if getattr(enc, "block", None) is not None and getattr(dec, "block", None) is not None:  # T5
        return [("encoder", list(enc.block), "layer.0.SelfAttention", None),
                ("decoder", list(dec.block), "layer.0.SelfAttention", "layer.1.EncDecAttention")]
    if getattr(enc, "layers", None) is not None and getattr(dec, "layers", None) is not None:  # BART, T5Gemma
        cross = next((a for a in CROSS if len(dec.layers) and isinstance(_first(dec.layers[0], a), nn.Module)), None)
        return [("encoder", list(enc.layers), "self_attn", None),
                ("decoder", list(dec.layers), "self_attn", cross or "encoder_attn")]
    joined = _joined(enc, dec)
    if joined is not None:
        return joined
    found = _stack(base)            # GPT-2, Llama family, NeoX, OPT, BLOOM, Falcon, BERT layouts, ViT, DistilBERT...
    if found is None:
        raise UserError(f"Head gates, ablation and patching cover {COVERED}; this model "
                        f"({type(m).__name__}) is laid out otherwise: pick 'gpt', 'bert' or 'tiny'.")
    return [("layer", found[0], found[1], None)]


def head_sites(model) -> list[Site]:
    """Every attention layer's head site, stack by stack (encoder self, decoder self, then cross)."""
    sites, cross = [], []
    config = getattr(module_of(model), "config", None)
    for stack, blocks, attr, cross_attr in _stacks(model):
        two = cross_attr is not None
        for i, block in enumerate(blocks):
            sites.append(_site(_first(block, attr), f"{stack} {i}" + (" self" if two else ""), i, config))
            if two:
                cross.append(_site(_first(block, cross_attr), f"{stack} {i} cross", i, config))
    return sites + cross


def residual_blocks(model) -> list[nn.Module]:
    """The layers of the main stack (an encoder-decoder's encoder): each one's first input is (B, T, C)."""
    return _stacks(model)[0][1]
