"""Multi-head latent attention (DeepSeek-V3, Mistral 4, GLM-4-MoE-Lite) as models.circuit_layouts' pieces: Llama's
layout with the latent attention's own q, k and v (MiniCPM3's is too, but its scaled residual is not, so the check
refuses it).

Every head reads its own copy of the residual for its query, its key and its value (experiments.circuits): each
copy goes through the path's shared part and then the head's own rows (models.circuit_families.rows): the query
through q_proj (or q_a_proj, its norm, then q_b_proj's rows of the head), the key and the value through the latent
(kv_a_proj_with_mqa, its norm, then kv_b_proj's rows of the head), the key's rotary part through RoPE (rope_name:
the family's own function). The scale is the module's own (YaRN's factor included); the write is o_proj's columns
of the head (Llama's write).

What it does not do: pick a layout (models.circuit_layouts.by_shape does, by the modules' names) or check it (the
pieces must rebuild the model's logits, experiments.circuits); a query scaled by position (Mistral 4's Llama-4
scaling, 1 below its original context) is not redone, so the check refuses texts where it is not 1.

    lay = Latent(load("hf:<a DeepSeek-V3 folder>"))
    q, k, v = lay.qkv(0, x, x, x)       # x (B, H, T, C): q, k (B, H, T, nope + rope), v (B, H, T, v_head_dim)
"""
from __future__ import annotations

import sys

import torch

from models.circuit_families import Llama, project, rows

# the latent attention's modules, beside o_proj, as transformers names them (the query: q_proj or these three)
NAMES = ("kv_a_proj_with_mqa", "kv_a_layernorm", "kv_b_proj", "o_proj")
QUERY = ("q_a_proj", "q_a_layernorm", "q_b_proj")


def named(attn: torch.nn.Module) -> bool:
    """Whether an attention module holds multi-head latent attention's modules under transformers' names."""
    has = lambda n: isinstance(getattr(attn, n, None), torch.nn.Module)  # noqa: E731
    return all(map(has, NAMES)) and (has("q_proj") or all(map(has, QUERY)))


def rope_name(config) -> str:
    """The name of the family's RoPE function the latent pieces call: its interleaved one where the config says
    rope_interleave (DeepSeek-V3's and Mistral 4's default), else apply_rotary_pos_emb."""
    return "apply_rotary_pos_emb_interleave" if getattr(config, "rope_interleave", False) else "apply_rotary_pos_emb"


class Latent(Llama):
    """Llama's pieces with multi-head latent attention's q, k and v (see the module)."""

    def __init__(self, dec) -> None:
        super().__init__(dec)
        self.rope = getattr(sys.modules[type(self.base.layers[0].self_attn).__module__], rope_name(dec.config))

    def qkv(self, layer, xq, xk, xv):
        attn, norm, H = self.base.layers[layer].self_attn, self.attn_norm(layer), self.n_heads
        nope, rot, rank = attn.qk_nope_head_dim, attn.qk_rope_head_dim, attn.kv_lora_rank
        x = norm(xq)                                                        # (B, H, T, C) each head's own copy
        q = (project(x, *rows(attn.q_proj, H)) if getattr(attn, "q_proj", None) is not None else
             project(attn.q_a_layernorm(attn.q_a_proj(x)), *rows(attn.q_b_proj, H)))  # (B, H, T, nope + rot)
        q_pass, q_rot = q.split([nope, rot], -1)                            # (B, H, T, nope), (B, H, T, rot)

        def latent(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            kv, k_rot = attn.kv_a_proj_with_mqa(norm(x)).split([rank, rot], -1)  # (B, H, T, rank), (B, H, T, rot)
            return project(attn.kv_a_layernorm(kv), *rows(attn.kv_b_proj, H)), k_rot  # (B, H, T, nope + v), ...

        k_both, k_rot = latent(xk)
        v = latent(xv)[0][..., nope:]                                       # (B, H, T, v_head_dim)
        positions = torch.arange(xq.shape[2], device=xq.device)[None]       # (1, T)
        cos, sin = self.rotary(layer, xq[:, 0], positions)                  # (1, T, rot) each
        q_rot, k_rot = self.rope(q_rot, k_rot, cos, sin)                    # (B, H, T, rot) each
        return torch.cat([q_pass, q_rot], -1), torch.cat([k_both[..., :nope], k_rot], -1), v
