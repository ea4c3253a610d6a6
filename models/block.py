"""What one layer of a decoder does, in order, read from its config and its first layer's modules: how positions
enter (RoPE, ALiBi, a learned vector, nothing), whether attention and MLP run side by side off the same input
(GPT-J, GPT-NeoX, Falcon) or one after the other, and where its norms sit (before each part; also after it in Gemma
2's sandwich; after the residual add in OPT-350m; only after each part in OLMo 2).

It reads, it changes nothing and runs nothing; it does not check the model computes what it says (models.residual
does, when it splits the residual stream). Views build their sentence from it instead of comparing model names.

    of(load("hf:<a Gemma 2>"))   -> Block(positions='rotary', parallel=False, pre=True, post=True, after_add=False,
                                          norms=4)
    of(load("hf:<a falcon-7b>")) -> Block(positions='rotary', parallel=True, pre=True, ..., norms=1)
"""
from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from models import layout
from models.sites import module_of, residual_blocks

LEARNED = ("wpe", "embed_positions", "position_embeddings")  # learned position tables (GPT-2, OPT, GPT-Neo, BERT)


@dataclass(frozen=True)
class Block:
    positions: str      # "rotary" (RoPE turns Q and K), "alibi" (a bias on the scores), "learned" (added),
                        # "sinusoidal" (a fixed table, added), "none"
    parallel: bool      # attention and MLP read the same input and both add to the residual (x + attn + mlp)
    pre: bool           # a norm before attention and MLP
    post: bool          # a norm on attention's and MLP's outputs, before the add (Gemma 2's sandwich, OLMo 2)
    after_add: bool     # the norm comes after each residual add instead (post-LN: OPT-350m)
    norms: int          # the norms one layer holds
    without: tuple[str, ...] = ()  # a hybrid's: the kinds of its layers that do not attend (Jamba's "mamba")
    layers: int = 0     # a hybrid's: all its layers, those that attend and the others (0: every layer attends)


def _norms(layer: nn.Module) -> list[str]:
    return [name for name, child in layer.named_children() if "norm" in type(child).__name__.lower()
            or "norm" in name.lower() or name.startswith("ln_")]


def _positions(model, base: nn.Module) -> str:
    from models.pruned_modeling import adds_alibi  # here: it imports transformers, which reading a layer needs not

    cfg = getattr(base, "config", None) or getattr(model, "config", None)
    if adds_alibi(base):
        return "alibi"
    names = [name.rsplit(".", 1)[-1] for name, _ in base.named_modules()]
    tables = [m for name, m in base.named_modules() if name.rsplit(".", 1)[-1] in LEARNED]
    if tables:  # XGLM's, Pegasus' and Marian's embed_positions is a fixed sinusoidal table under the same name
        return "sinusoidal" if all("sinusoidal" in type(m).__name__.lower() for m in tables) else "learned"
    if layout.rotary(model) or any("rotary" in name for name in names) or any(
            getattr(cfg, field, None) for field in ("rotary_dim", "rope_parameters", "rope_theta", "rotary_pct")):
        return "rotary"
    return "none"


def of(model) -> Block:
    """The layout of `model`'s layers that attend (the first one's modules; every such layer of a decoder here has
    the same), and a hybrid's other layers by their kind."""
    base = module_of(model)
    cfg = getattr(model, "config", None) or getattr(base, "config", None)
    norms = _norms(residual_blocks(model)[0])
    parallel = bool(getattr(cfg, "parallel_attn", False) or getattr(cfg, "new_decoder_architecture", False)
                    or getattr(cfg, "use_parallel_residual", False) or len(norms) == 1)
    post = any(name.startswith("post_feedforward") for name in norms)
    pre = not post or any(name.startswith(("input_", "pre_")) for name in norms)
    after_add = getattr(cfg, "do_layer_norm_before", True) is False
    hybrid = cfg is not None and layout.attending(cfg) is not None
    return Block(_positions(model, base), parallel, pre and not after_add, post, after_add, len(norms),
                 tuple(layout.not_attending(cfg)) if hybrid else (), cfg.num_hidden_layers if hybrid else 0)
