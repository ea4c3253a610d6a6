"""What each piece of a decoder writes into the residual stream at one position, computed functionally.

The residual stream at the last position is a sum: the embedding (with learned positions, if any), then per
layer each attention head's output through its slice of the output projection, the projection's bias, and what the
rest of the layer adds (its MLP, the MLP's bias included). `components` returns those pieces, the final norm and the
unembedding, for

    the tiny decoder (models.tiny)      x + attn(ln_1(x)), then + mlp(ln_2(x)); learned positions; its own blocks
    every decoder whose attention       each head's output as models.capture recorded it, through its slice of the
    goes through models.capture         attention's output projection; the rest of each layer (its MLP and its bias,
    (GPT-2, GPT-NeoX, Llama, Mistral,   whatever the layout, a parallel residual included) is what the layer added to
    Qwen, Gemma, Phi-3, OPT, ...)       the residual beyond its heads, read from the model's own residual
                                        (hidden_states, which ends before the final norm)
    Falcon, GPT-J, BLOOM, MPT,          each head's output from the model's own weights (output_attentions) and its
    CodeGen, GPT-Neo, XGLM, GPT-NeoX-   values read from the layer's modules (models.bypass), each MLP applied to what
    Japanese (they bypass the capture)  it reads; every layer's rebuilt output is checked against the model's next
                                        residual (their hidden_states end after the final norm)

Each layer reads the model's own input to it (hidden_states[l] of one forward pass, or for the tiny decoder its own
blocks run in turn) and the model's own attention weights, so the pieces are the numbers the model computed: head h's
output is W_O[:, h] · Σ_j A[h, -1, j] v[kv(h), j]. No hooks and no state on the model, so a shared cached model can be
asked concurrently. It does not split the logit (experiments.logit_lens does). A gate on each head's output computed
from the layer's input (AFMoE, AXK2, Laguna) keeps each head's write W_O[:, h] · (its gated output): those heads'
outputs are read as the output projection reads them, after the gate, by hooks on a twin sharing the weights
(models.head_path, one more forward pass), since the capture records them before it. Sandwich norms (Gemma 2/3, OLMo 2,
AFMoE) have the attention output's norm frozen at that output, as the final norm is, and BitNet's norm of its heads'
outputs before the output projection is frozen at them; a final norm whose module does not
say what it computes (Nemotron's weight + 1, OLMo's and NanoChat's without parameters) is rebuilt as the torch LayerNorm
or RMSNorm it equals (models.final_norm); a logit scale (Cohere, Granite) is carried in `scale`; a final softcap (Gemma
2) is not linear, so `logits` are then the ones before the cap, which the pieces explain. A hybrid's layers without
attention (Jamba's mamba) have no heads: what they add goes into the `mlp` of the attending layer before them, or into
`before` when no layer attends before them. Granite's and MiniCPM3's residual scales multiply the attention's writes.
It refuses in one sentence what it cannot split exactly: a post-norm decoder (GPT-1, TrOCR, XLNet, BART's decoder:
models.layout.post_norm, whose norm after each residual add rescales every earlier write), another family that
bypasses the capture, a scalar on the whole layer, a residual scaled at every layer (Beam), an attention inside a
block of its own within the layer (Zamba), several residual streams (HY-V4) or a mix of earlier blocks as a layer's
input (Inkling 2), layers run more than once (HRM-Text's cycles), a bypassing layer that adds more than its heads and
MLP as read, logits that are not the last residual through the final norm, unembedding, scale and cap. For the
captured families only the attention's write into each layer is split; the rest of the layer is read as the residual's
change beyond it, so a step between the attention and the residual that this module does not know of would be counted
there: the families it follows are tested against hooks (tests/models/test_residual_any_family.py,
test_residual_bypass.py, test_residual_gated.py), and a model's first split compares each attention module's output,
read by hooks on a twin sharing its weights (models.twin: one more forward pass, once per model), with its heads'
summed writes, refusing the model where they differ. A step outside the attention module (in the layer, between it and
the residual) is not seen by that check.

    c = components(model, ids)       # ids (1, T)
    c.embed + c.heads.sum((0, 1)) + c.attn_bias.sum(0) + c.mlp.sum(0)  # == residual, (C,)
"""
from __future__ import annotations

import dataclasses
import weakref
from dataclasses import dataclass

import torch

from limits.errors import UserError
from models import bypass, capture, final_norm, gates, head_path, layout, twin
from models.sites import projection


@dataclass(frozen=True)
class Components:
    tokens: list[str]
    embed: torch.Tensor        # (C,) token embedding, plus the learned position's where the model has one
    heads: torch.Tensor        # (L, H, C) each head's write, without the output projection's bias
    attn_bias: torch.Tensor    # (L, C) the attention output projection's bias (zeros when it has none)
    mlp: torch.Tensor          # (L, C) what each layer adds beyond its heads and their bias: its MLP, bias included
    norm: torch.nn.Module      # the final norm (LayerNorm or RMSNorm), applied to the last residual
    unembed: torch.nn.Module   # the language-model head: (C,) -> (V,)
    logits: torch.Tensor       # (V,) the logits the pieces explain at the last position: the model's own, before
    #                            a final cap (Gemma 2's c · tanh(z / c)) where it has one
    scale: float = 1.0         # what the model multiplies the unembedding by (Cohere's logit_scale, 1 / Granite's
    #                            logits_scaling)
    cap: float | None = None   # the final softcap c, or None
    hybrid: bool = False       # some layers do not attend: each attending layer's `mlp` also holds the layers
    #                            without attention after it, up to the next that attends
    before: torch.Tensor | None = None  # (C,) a hybrid's layers without attention before its first that attends

    def read(self, residual: torch.Tensor) -> torch.Tensor:
        """The model's own logits (..., V) of a residual (..., C): final norm, unembedding, scale and cap."""
        z = self.unembed(self.norm(residual)) * self.scale
        return z if self.cap is None else self.cap * torch.tanh(z / self.cap)


def _zeros_or(bias, like: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(like) if bias is None else bias.detach()


def _head_writes(weights: torch.Tensor, v: torch.Tensor, w_o: torch.Tensor, kv_of: list[int]) -> torch.Tensor:
    """weights (H, T) of the last query, v (H_kv, T, hd), w_o (C, H * hd) -> each head's write (H, C)."""
    H = weights.shape[0]
    z = torch.einsum("ht,htd->hd", weights, v[kv_of])               # (H, hd) each head's mixed value
    return torch.einsum("chd,hd->hc", w_o.view(w_o.shape[0], H, -1), z)  # (H, C)


def _tiny(model, ids: torch.Tensor) -> Components:
    net = model.net
    T = ids.shape[1]
    x = net.wte(ids) + net.wpe(torch.arange(T, device=ids.device))  # (1, T, C)
    embed, heads, ab, mlp = x[0, -1], [], [], []
    for i, block in enumerate(net.blocks):
        attn = block.attn
        _, _, v = attn.qkv(block.ln_1(x))                              # (1, kvh, T, hs)
        out, att = block(x, None, i)                                   # (1, T, C), (1, nh, T, T)
        group = attn.n_head // attn.n_kv_head
        heads.append(_head_writes(att[0, :, -1], v[0], attn.c_proj.weight, [h // group for h in range(attn.n_head)]))
        ab.append(_zeros_or(attn.c_proj.bias, embed))
        mid = x + attn(block.ln_1(x), None, i)[0]                      # (1, T, C)
        mlp.append(block.mlp(block.ln_2(mid[:, -1]))[0])
        x = out
    logits = net.lm_head(net.ln_f(x[:, -1]))[0]                        # (V,)
    from data.sorting import VOCAB

    return Components([VOCAB[i] for i in ids[0].tolist()], embed, torch.stack(heads), torch.stack(ab),
                      torch.stack(mlp), net.ln_f, net.lm_head, logits)


def why_not(model) -> str | None:
    """Why this model's residual stream cannot be split here, or None when it can."""
    if getattr(model, "family", None) == "tiny":
        return None
    kind = getattr(model, "family", None)
    if kind == "encoder" and getattr(model, "task_head", None) == "causal LM":
        if not model.writes:
            return model.why_not_writing()
        flag = "is_decoder" if getattr(model.config, "is_decoder", False) else "causal"  # XLM's and FlauBERT's: causal
        return (f"This is a BERT-style causal LM ({model.config.model_type} with {flag}): an encoder's layout, "
                "which norms the residual stream itself after every attention and MLP (post-norm), so each norm "
                "rescales all earlier writes together and no head's write reaches the logit as one piece. The Next "
                "token view shows its probabilities and appends with it; Pruning your own model judges its heads by "
                "its own loss.")
    if kind != "decoder":
        what = {"encoder": "a text encoder, which reads the whole text at once and predicts no next token",
                "encoder-decoder": "an encoder-decoder, whose next token also depends on a second text",
                "vision": "a vision model, which reads images"}.get(kind, "not a decoder-only language model")
        return (f"This view follows a decoder-only language model to its next token; this one is {what}: "
                "switch to the built-in GPT or the tiny decoder, or load an hf: decoder (GPT-2, Llama, OPT, Phi, "
                "Gemma, Qwen and most others).")
    if not getattr(model, "lm", False):
        return ("These weights hold no language-model head, so there is no next token to read: load a folder "
                "saved from a *ForCausalLM model.")
    cfg = model.config
    if layout.post_norm(cfg):
        return head_path.REFUSED["post_norm"].format(kind=cfg.model_type)
    if cfg.model_type in bypass.FAMILIES:
        return bypass.why_not(cfg)
    lm = getattr(model, "model", None)  # None: models.architectures' table, which says whether it is routed
    if not (capture.installed(lm) if lm is not None else getattr(model, "routed", False)):
        return (f"The residual stream is split here for decoders whose attention transformers routes through its "
                f"attention registry and for {bypass.NAMES}; {cfg.model_type} "
                "computes its own, so its heads' outputs are not recorded: pick one of those.")
    if lm is None:  # models.architectures' table: what the layers do, from the modeling source
        return head_path.unsplittable_source(cfg.model_type, getattr(model, "source", ""))
    return None


NO_WEIGHTS = ("This model computes its attention without returning its weights, so its heads' writes cannot be read: "
              "pick another model.")

def _rms_frozen(norm: torch.nn.Module, a: torch.Tensor) -> torch.Tensor:
    """The per-channel factor (C,) an RMS norm applies to a (C,): γ / rms(a), its scale frozen at a, so each piece of a
    is normed as the sum is (models.final_norm.rms_factor: γ what the norm does to ones, rms 1); UserError if the
    factor does not reproduce norm(a) up to a's dtype's rounding (_close)."""
    factor = final_norm.rms_factor(norm, a)                                   # (C,)
    if not _close(factor * a, norm(a)):
        raise UserError(f"{type(norm).__name__}, which this model applies to its attention's output, is not an RMS "
                        "norm the split can freeze, so its heads' writes cannot be read.")
    return factor


def _out_proj(attn: torch.nn.Module, width: int, C: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The attention module's output projection (models.sites.projection) as (weight (C, width), bias (C,) or None);
    UserError if it has none of that shape."""
    m = projection(attn)
    w = None if m is None else m.weight
    if w is not None and tuple(w.shape) == (width, C) and type(m).__name__ == "Conv1D":  # GPT-2-like (in, out),
        return w.detach().T, getattr(m, "bias", None)  # first: GPT-2's is square (H · hd = C), as a Linear's reads
    if w is not None and tuple(w.shape) == (C, width):
        return w.detach(), getattr(m, "bias", None)
    raise UserError(f"The attention module {type(attn).__name__} has no output projection this split knows, so its "
                    "heads' writes cannot be read.")


def _final_norm(lm) -> torch.nn.Module | None:
    """The norm the last residual goes through before the unembedding: the last norm module outside the layers as
    wide as the residual (a norm of Gemma 4's per-layer inputs, 256 wide, is not it; a norm without a weight is
    taken), None when there is none."""
    found, width = None, getattr(lm.get_output_embeddings(), "in_features", None)  # the unembedding reads the residual
    for name, m in lm.base_model.named_modules():
        weight = getattr(m, "weight", None)
        if "norm" in type(m).__name__.lower() and not any(p.isdigit() for p in name.split(".")) and (
                not isinstance(weight, torch.Tensor) or width is None or weight.shape[-1] == width):
            found = m
    return found


# model -> None, or the sentence its first split found: the attention modules' outputs against their heads' writes
_CHECKED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _check_once(lm: torch.nn.Module, ids: torch.Tensor, names: list[str], raw: list[torch.Tensor],
                less_residual: bool = False) -> None:
    """On a model's first split: UserError where an attention module returns other than its heads' summed writes and
    bias (raw, (C,) each), read by hooks on a twin sharing its weights (models.twin; one more forward pass, once), up
    to rounding of the module's output's own length. Inside a gates context (models.gates edits active) the split's
    heads are the edited ones and the twin's are not, so nothing is checked or remembered there; a verdict found
    before still stands."""
    if lm not in _CHECKED and not gates.editing():
        outs = twin.attention_outputs(lm, ids, names, less_residual)
        bad = next((name for name, o, w in zip(names, outs, raw, strict=True) if not _close(w, o)), None)
        _CHECKED[lm] = bad and (f"The attention module {bad} returns more than its heads' writes through its "
                                "output projection, a step this split does not know of, so its heads' writes would be "
                                "misread.")
    if _CHECKED.get(lm):
        raise UserError(_CHECKED[lm])


def _captured(model, ids: torch.Tensor) -> Components:
    """The pieces of a decoder routed through models.capture: heads from the recorded outputs, the rest of each layer
    as the residual's change beyond them; checked against the model's own logits (UserError where they differ)."""
    lm = model.model
    with capture.recording(lm) as calls:
        out = lm(input_ids=ids, output_hidden_states=True)
    hidden = out.hidden_states                                          # N + 1 of (1, T, C), the last before the norm
    own, attending = [c for c in calls if not c.cross], model.attending  # a hybrid's: its N layers, L attend
    if len(own) != len(attending) or len(hidden) != model.config.num_hidden_layers + 1:
        raise UserError("This model's layers did not each record one attention call, so its residual cannot be split.")
    embed, heads, ab, raw = hidden[0][0, -1], [], [], []
    C = embed.shape[0]
    if len({call.module for call in own}) < len(own):
        raise UserError(head_path.REFUSED["cycles"].format(kind=model.config.model_type))
    layers = [lm.get_submodule(call.module.rsplit(".", 1)[0]) for call in own]
    if any(head_path.nested(lm, call.module) for call in own):
        raise UserError(head_path.REFUSED["nested"].format(kind=model.config.model_type))
    if why := next(filter(None, (head_path.unsplittable(layer, model.config.model_type) for layer in layers)), None):
        raise UserError(why)
    gated = head_path.gated_outputs(lm, ids, own)
    for call, layer in zip(own, layers, strict=True):
        attn = lm.get_submodule(call.module)
        z = gated.pop(0).view(call.output.shape[1], -1) if head_path.gate(attn) else call.output[0, :, -1]  # (H, d_v)
        if (sub := head_path.projection_norm(attn)) is not None:  # BitNet: the heads' outputs normed together,
            flat = z.reshape(-1)                                   # its scale frozen at them        # (H · d_v,)
            z = (_rms_frozen(sub, flat) * flat).view(z.shape)                                    # (H, d_v)
        w_o, b_o = _out_proj(attn, z.numel(), C)
        writes, bias = torch.einsum("chd,hd->hc", w_o.view(C, z.shape[0], -1), z), _zeros_or(b_o, embed)  # (H, C)
        raw.append(writes.sum(0) + bias)                                # (C,) what the attention module returns
        if (post := head_path.attention_norm(layer)) is not None:  # sandwich norms: scale frozen at attention's output
            factor = _rms_frozen(post, writes.sum(0) + bias)            # (C,)
            writes, bias = writes * factor, bias * factor
        scale = getattr(layer, "residual_multiplier", None) or getattr(layer, "residual_scale", None) or 1.0
        writes, bias = writes * float(scale), bias * float(scale)    # Granite's, MiniCPM3's scaled residual
        heads.append(writes)
        ab.append(bias)
    if len(counts := sorted({w.shape[0] for w in heads})) > 1:  # a pruned export whose layers lost different heads
        raise UserError(f"This model's layers hold different numbers of heads ({', '.join(map(str, counts))}: heads "
                        "were cut out of some), which the split's layer × head grid does not hold: split the model it "
                        "was pruned from, whose gates the Pruning views keep.")
    _check_once(lm, ids, [call.module for call in own], raw)
    steps = torch.stack([h[0, -1] for h in hidden])                      # (N + 1, C)
    # all each attending layer adds but its heads, with a hybrid's layers without attention that follow it (up to the
    # next that attends), and those before its first; every layer attends otherwise (N = L, `before` None)
    ends = [*attending[1:], len(hidden) - 1]
    mlp = torch.stack([steps[end] - steps[a] for a, end in zip(attending, ends, strict=True)]) \
        - torch.stack(heads).sum(1) - torch.stack(ab)                      # (L, C)
    before = steps[attending[0]] - steps[0] if attending[0] else None   # (C,)
    norm, cfg = _final_norm(lm), model.config
    if norm is None:
        raise UserError(f"{cfg.model_type} has no final norm this split finds before its unembedding, so its logits "
                        "cannot be split into the residual's pieces.")
    norm = final_norm.plain(norm, steps[-1])
    scale = float(getattr(cfg, "logit_scale", None) or 1.0) / float(getattr(cfg, "logits_scaling", None) or 1.0)
    c = Components(model.tokenizer.convert_ids_to_tokens(ids[0].tolist()), embed, torch.stack(heads),
                   torch.stack(ab), mlp, norm, lm.get_output_embeddings(), out.logits[0, -1],
                   scale, getattr(cfg, "final_logit_softcapping", None), len(attending) < len(hidden) - 1, before)
    if not torch.allclose(c.read(steps[-1]), out.logits[0, -1], atol=1e-4, rtol=1e-4):
        raise UserError(f"{cfg.model_type}'s logits are not its last residual through its final norm, unembedding, "
                        "scale and cap, so they cannot be split into the residual's pieces.")
    if c.cap is None:
        return c
    return dataclasses.replace(c, logits=lm.get_output_embeddings()(norm(steps[-1])) * scale)  # (V,) before the cap


def _close(rebuilt: torch.Tensor, own: torch.Tensor) -> bool:
    """Whether a rebuilt vector (C,) or (V,) is the model's own up to its dtype's rounding: a distance under 1e-4 of
    the own one's length in float32, 2 ε in half precision (4 · 2⁻⁸ in bfloat16, whose sums in another order differ
    by ~0.4%). Not whether a small piece of it is right: a head's write is small next to the residual."""
    tol = max(1e-4, 2 * torch.finfo(own.dtype).eps)
    return float((rebuilt - own).double().norm()) <= tol * (float(own.double().norm()) + 1e-6)


def _bypassed(model, ids: torch.Tensor) -> Components:
    """The pieces of a decoder that bypasses the capture (models.bypass): heads from the model's own weights and its
    values read from its modules, each MLP applied to what it reads; every layer's rebuilt output is checked against
    the model's next residual, the last through the final norm against the model's logits, and on the model's first
    split each layer's summed heads against its attention module's output (_check_once) (UserError where any
    differs)."""
    lm, kind = model.model, model.config.model_type
    out = lm(input_ids=ids, output_attentions=True, output_hidden_states=True)
    if not out.attentions or out.attentions[0] is None:
        raise UserError(NO_WEIGHTS)
    hidden = out.hidden_states               # L + 1 of (1, T, C): each layer's input, then the final norm's output
    embed, heads, ab, mlp, read = hidden[0][0, -1], [], [], [], []
    for i in range(model.n_layers):
        h = hidden[i][0]                                                # (T, C) the layer's input
        p = bypass.layer(lm, kind, i, h)
        weights = out.attentions[i][0, :, -1].to(p.values.dtype)        # (H, T) the last query's
        heads.append(_head_writes(weights, p.values, p.w_o, list(range(weights.shape[0]))))  # (H, C)
        ab.append(_zeros_or(p.b_o, embed))
        mid = h[-1] + heads[-1].sum(0) + ab[-1]                         # (C,) after the attention
        mlp.append(p.mlp(mid))
        read.append(p)
        if i + 1 < model.n_layers and not _close(mid + mlp[-1], hidden[i + 1][0, -1]):
            raise UserError(f"{kind}'s layer {i} adds to the residual more than its heads and MLP as read here, so its "
                            "logit cannot be split into the residual's pieces.")
    named = {id(m): name for name, m in lm.named_modules()}     # each head's write checked, not only the residual
    names = [named[id(p.attention if p.writes is None else p.writes)] for p in read]
    raw = [w.sum(0) + (b if p.biased else 0) for w, b, p in zip(heads, ab, read, strict=True)]   # (C,) each
    _check_once(lm, ids, names, raw, less_residual=read[0].less_residual)
    last = mid + mlp[-1]                                                # (C,) what the final norm reads
    c = Components(model.tokenizer.convert_ids_to_tokens(ids[0].tolist()), embed, torch.stack(heads),
                   torch.stack(ab), torch.stack(mlp), bypass.final_norm(lm),
                   lm.get_output_embeddings(), out.logits[0, -1])
    if not _close(c.read(last), c.logits):
        raise UserError(f"{kind}'s logits are not its last residual through its final norm and unembedding, so they "
                        "cannot be split into the residual's pieces.")
    return c


@torch.no_grad()
def components(model, ids: torch.Tensor) -> Components:
    """The residual stream's pieces at the last position of ids (1, T); ValueError with a sentence if unsupported."""
    why = why_not(model)
    if why:
        raise UserError(why)
    if getattr(model, "family", None) == "tiny":
        return _tiny(model, ids)
    if model.config.model_type in bypass.FAMILIES:
        return _bypassed(model, ids)
    return _captured(model, ids)
