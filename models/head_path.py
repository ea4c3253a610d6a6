"""What lies on a head's way from its output to a captured decoder's residual stream, for models.residual.

`gated_outputs` reads each head's output after a gate on it (AFMoE's, AXK2's, Laguna's: the gate is computed from the
layer's input, not from other heads, so head h's write is still W_O[:, h] · its gated output, exact and linear) as the
output projection reads it, by hooks on a twin sharing the model's weights (models.twin): the capture
(models.capture) records the heads' outputs before the gate. `attention_norm` finds a norm on the attention's output
(sandwich norms), `projection_norm` one on its heads' outputs before the output projection (BitNet). `unsplittable`
(and, from a modeling source, `unsplittable_source`) says in one sentence what this split does not follow. It computes
no write and does not check one (models.residual does both).
"""
from __future__ import annotations

import functools
import inspect

import torch

from limits.errors import UserError
from models import twin
from models.sites import projection


def attention_norm(layer: torch.nn.Module) -> torch.nn.Module | None:
    """The norm a layer applies to its attention's output before adding it, or None: GLM-4's post_self_attn_layernorm,
    or post_attention_layernorm where the layer also norms its MLP's output (Gemma 2/3, OLMo 2/3: sandwich norms) or
    has another norm for the MLP's input (AFMoE's pre_mlp_layernorm); elsewhere (Kolibri 1's, whose post_mlp_layernorm
    norms the MLP's output) post_attention_layernorm is the MLP's input norm."""
    if isinstance(getattr(layer, "post_self_attn_layernorm", None), torch.nn.Module):
        return layer.post_self_attn_layernorm
    if any(isinstance(getattr(layer, n, None), torch.nn.Module) for n in ("post_feedforward_layernorm",
                                                                         "pre_mlp_layernorm")):
        return getattr(layer, "post_attention_layernorm", None)
    return None


def projection_norm(attn: torch.nn.Module) -> torch.nn.Module | None:
    """The norm an attention module applies to its heads' concatenated outputs before its output projection (BitNet's
    attn_sub_norm), or None. Its scale, frozen at that concatenation as the final norm's is, makes it one factor per
    channel, so head h's write stays W_O[:, h] · (its factor's slice ⊙ its output)."""
    norm = getattr(attn, "attn_sub_norm", None)
    return norm if isinstance(norm, torch.nn.Module) else None


def gate(attn: torch.nn.Module) -> str | None:
    """The name of the attention's child that gates its heads' outputs (Laguna's g_proj, AXK2's q_gate_proj, AFMoE's
    gate_proj), or of the projection whose output also holds the gate (Qwen3-Next's and Qwen3.5's q_proj, read from
    their forward's source: `attn_output * torch.sigmoid(gate)`), or None."""
    named = next((name for name, _ in attn.named_children() if "gate" in name or name == "g_proj"), None)
    return named or ("q_proj" if _gates_in_forward(type(attn)) else None)


@functools.cache
def _gates_in_forward(cls: type) -> bool:
    """Whether an attention class's forward multiplies its heads' outputs by a sigmoid gate of its own making, read
    from its source text: a gate written otherwise is not seen, and the split's first check (models.residual
    _check_once) then refuses the model rather than misread its heads."""
    try:
        return "* torch.sigmoid(gate)" in inspect.getsource(cls.forward)
    except (OSError, TypeError):  # no source (a compiled or built-in class): no gate seen
        return False


# what this split does not follow between a head's output and the residual: {kind} is the model type
REFUSED = {
    "scalar": "{kind} scales each whole layer's output (layer_scalar) before adding it to the residual, which this "
              "split does not follow, so its heads' writes would be misread.",
    "depth": "{kind} shrinks the residual itself at every layer (a depth-scaled residual add), which this split does "
             "not follow, so its heads' writes would be misread.",
    "hyper": "{kind} keeps several residual streams and mixes them at every layer (hyper-connections, or Gemma 3n's "
             "AltUp), so there is no one residual stream to split.",
    "blocks": "{kind} feeds each layer a learned mix of earlier blocks' outputs (block attention residuals), so there "
              "is no one residual stream to split.",
    "cycles": "{kind} runs its layers more than once for each token (recurrent cycles), so a head's write does not "
              "reach the logit as one piece of the residual.",
    "nested": "{kind}'s attention sits in a block of its own within the layers that attend (Zamba's shared "
              "transformer, which also reads the embeddings), whose MLP and projection come between the heads and the "
              "residual, which this split does not follow, so its heads' writes would be misread.",
    "post_norm": "{kind} norms the residual stream itself after every attention and MLP (post-norm, as GPT-1, TrOCR "
                 "and XLNet do), so each norm rescales all earlier writes together and no head's write reaches the "
                 "logit as one piece: pick a pre-norm decoder such as GPT-2, Llama or Qwen.",
}
# the same, as its modeling source shows it (models.architectures' table reads no loaded model)
MARKS = {"depth": ("attn_residual_add_idx",), "hyper": ("HyperConnection(", "_hyper_connection = ", "self.altup = "),
         "blocks": ("BlockAttentionResidual(",), "cycles": ("H_cycles",), "nested": ("self.shared_transf",)}


def unsplittable(layer: torch.nn.Module, kind: str) -> str | None:
    """The sentence refusing what, between a head's output and the residual, this split does not follow (REFUSED), or
    None: a scalar on the whole layer (Gemma 4's layer_scalar), a residual scaled at every layer (Beam's depth-scaled
    residual add), several residual streams (HY-V4's and Qwen4-exp's hyper-connections, Gemma 3n's AltUp), a mix of
    earlier blocks' outputs as each layer's input (Inkling 2's block attention residuals)."""
    scalar = getattr(layer, "layer_scalar", None)
    children = {type(m).__name__ for m in layer.children()}
    named = [name for name, _ in layer.named_children()]
    found = ("scalar" if scalar is not None and not torch.all(torch.as_tensor(scalar) == 1) else
             "depth" if hasattr(layer, "attn_residual_add_idx") else
             "hyper" if any(name.endswith("HyperConnection") for name in children) or any(
                 name.endswith("hyper_connection") or name == "altup" for name in named) else
             "blocks" if any(name.endswith("BlockAttentionResidual") for name in children) else None)
    return found and REFUSED[found].format(kind=kind)


def nested(lm: torch.nn.Module, attention: str) -> bool:
    """Whether the attention module named `attention` sits in a block with an MLP of its own inside its layer
    (Zamba's shared transformer: model.layers.3.shared_transf.self_attn), not in the layer itself (model.layers.3)
    or in a wrapper of norms around it (DBRX's norm_attn_norm, whose add is the residual's)."""
    parent = attention.rsplit(".", 1)[0]
    if parent.rsplit(".", 1)[-1].isdigit():
        return False
    return any(name in ("mlp", "feed_forward", "ffn") or "moe" in name or "expert" in name
               for name, _ in lm.get_submodule(parent).named_children())


def unsplittable_source(kind: str, source: str) -> str | None:
    """unsplittable() read from a family's modeling source, for a table that loads no model (layer scalars of 1 are
    not refused, so they are not read there)."""
    return next((REFUSED[key].format(kind=kind) for key, marks in MARKS.items() if any(m in source for m in marks)),
                None)


def gated_outputs(lm: torch.nn.Module, ids: torch.Tensor, calls: list) -> list[torch.Tensor]:
    """For the calls whose attention gates its heads' outputs, in order: what its output projection reads at the last
    position (H * d_v,), the heads' outputs after the gate (the capture records them before it), read by hooks on a
    twin sharing the model's weights (models.twin; one more forward pass, only where a gate is)."""
    names = []
    for call in calls:
        attn = lm.get_submodule(call.module)
        if gate(attn):
            if (proj := projection(attn)) is None:
                raise UserError(f"The attention module {type(attn).__name__} has no output projection this split "
                                "knows, so its heads' writes cannot be read.")
            names.append(call.module + "." + next(n for n, m in attn.named_modules() if m is proj))
    return twin.projection_inputs(lm, ids, names) if names else []
