"""Where each family keeps its heads' outputs and its residual stream: the places models.gates hooks.

A head site is one attention layer's output projection (BERT's attention.output.dense, GPT-2's Conv1D c_proj,
Llama/Mistral/Qwen2's o_proj, GPT-NeoX's dense, T5's o, BART's out_proj, ViT's o_proj, DistilBERT's out_lin, the
decoders written here: blocks[i].attn.c_proj): its input holds the heads side by side, (B, T, H*hs), just before
they are mixed. An encoder-decoder has three stacks, listed in this order: encoder self-attention, decoder
self-attention, cross-attention; every other model has one. A residual site is a layer (block) of the main stack
(the encoder of an encoder-decoder): its first input is the residual stream (B, T, C) entering that layer.

Found from the modules' layout, not the model's name, so a model with a task head and its base model give the
same sites. Grouped-query attention needs nothing special: the projection's input has one slice per query head.
It changes nothing on the model (models.gates does the hooking) and does not cover ALBERT (its layers share
one set of weights, so one head cannot be touched in one layer alone).

    [s.name for s in head_sites(t5)]   # ['encoder 0', 'encoder 1', 'decoder 0 self', ..., 'decoder 1 cross']
"""
from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from limits.errors import UserError

COVERED = ("BERT-style encoders (BERT, RoBERTa, ELECTRA, DeBERTa-v2, DistilBERT), GPT-2, GPT-NeoX, Llama, Mistral, "
           "Qwen2, T5, BART, Marian, ViT/DeiT and the decoders written here")


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


def _site(attn: nn.Module, name: str, layer: int) -> Site:
    """The output projection and head size of one attention module, whatever the family calls them."""
    proj = _first(attn, "o_proj", "c_proj", "out_proj", "out_lin", "dense", "o", "output.dense")
    size = _first(attn, "head_size", "head_dim", "key_value_proj_dim", "attention_head_size",
                  "self.attention_head_size")
    if proj is None or size is None:
        raise UserError(f"The attention module {type(attn).__name__} has no output projection this app knows; "
                        f"head interventions cover {COVERED}.")
    return Site(name, layer, proj, int(size))


def _stacks(model) -> list[tuple[str, list[nn.Module], str, str | None]]:
    """[(stack name, its layers, self-attention attribute, cross-attention attribute or None)] of the model."""
    m = module_of(model)
    base = getattr(m, "base_model", m)
    if getattr(base, "blocks", None) is not None and all(hasattr(getattr(b, "attn", None), "c_proj")
                                                         for b in base.blocks):
        return [("layer", list(base.blocks), "attn", None)]                           # written here; nanoGPT
    if getattr(base, "h", None) is not None:
        return [("layer", list(base.h), "attn", None)]                                # GPT-2
    if getattr(base, "layers", None) is not None:                                     # Llama family, GPT-NeoX
        attr = "self_attn" if hasattr(base.layers[0], "self_attn") else "attention"
        return [("layer", list(base.layers), attr, None)]
    enc, dec = getattr(base, "encoder", None), getattr(base, "decoder", None)
    if getattr(enc, "block", None) is not None and getattr(dec, "block", None) is not None:  # T5
        return [("encoder", list(enc.block), "layer.0.SelfAttention", None),
                ("decoder", list(dec.block), "layer.0.SelfAttention", "layer.1.EncDecAttention")]
    if getattr(enc, "layers", None) is not None and getattr(dec, "layers", None) is not None:  # BART, Marian
        return [("encoder", list(enc.layers), "self_attn", None),
                ("decoder", list(dec.layers), "self_attn", "encoder_attn")]
    if getattr(enc, "layer", None) is not None:                                       # BERT layouts, ViT, DeiT
        return [("layer", list(enc.layer), "attention", None)]
    if getattr(getattr(base, "transformer", None), "layer", None) is not None:        # DistilBERT
        return [("layer", list(base.transformer.layer), "attention", None)]
    raise UserError(f"Head gates, ablation and patching cover {COVERED}; this model "
                    f"({type(m).__name__}) is laid out otherwise: pick 'gpt', 'bert' or 'tiny'.")


def head_sites(model) -> list[Site]:
    """Every attention layer's head site, stack by stack (encoder self, decoder self, then cross)."""
    sites, cross = [], []
    for stack, blocks, attr, cross_attr in _stacks(model):
        two = cross_attr is not None
        for i, block in enumerate(blocks):
            sites.append(_site(_first(block, attr), f"{stack} {i}" + (" self" if two else ""), i))
            if two:
                cross.append(_site(_first(block, cross_attr), f"{stack} {i} cross", i))
    return sites + cross


def residual_blocks(model) -> list[nn.Module]:
    """The layers of the main stack (an encoder-decoder's encoder): each one's first input is (B, T, C)."""
    return _stacks(model)[0][1]
