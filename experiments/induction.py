"""What the induction model's heads do, measured: in-context learning, prefix matching, copying, knock-outs.

On fresh sequences of data/induction.py's task (seed EVAL_SEED, never trained on), per checkpoint:
- loss on the first copy and on the repeat: mean next-token cross-entropy at the targets a+1 .. a+L-1 of the first
  copy and b+1 .. b+L-1 of the repeat (the first token of each copy is unpredictable, so it is left out). The
  in-context learning score is loss(repeat) - loss(first copy): about 0 with no induction, strongly negative with.
  (Olsson et al. take loss at token 500 minus token 50 of natural text; here the repeat is what context teaches.)
- prefix matching of each head: mean attention from the repeat's token at b+j to a+j+1, the token after that
  token's earlier occurrence, for j = 0 .. L-2 (the positions whose next token the repeat predicts);
- copying of each head: Olsson et al.'s eigenvalue score Σλ / Σ|λ| of the head's OV circuit read through the
  unembedding, W_U · diag(γ_f) · W_O^h · W_V^h · ln_1(W_E + mean W_pos): 1 when every token the head attends to
  raises its own logit, -1 when it lowers it. Biases and ln_f's rescaling are left out (they do not map token to
  token).
Knock-outs gate layer-0 heads to 0 (models.gates, per call, nothing left on the model) and measure again.
Pure torch on the model; nothing here caches, draws or knows about Streamlit.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from data.induction import EVAL_SEED, repeated
from models import gates

N_EVAL = 256  # fresh sequences per measurement: ~12,000 target tokens per copy


@dataclass(frozen=True)
class Scores:
    loss_first: float           # mean loss on the first copy's predictable tokens
    loss_repeat: float          # ... on the repeat's
    prefix: np.ndarray          # [layers, heads] prefix matching
    copying: np.ndarray         # [layers, heads] OV eigenvalue copying score

    @property
    def icl(self) -> float:
        return self.loss_repeat - self.loss_first

    def as_dict(self) -> dict:
        r = lambda x: round(float(x), 4)  # noqa: E731
        return {"loss_first": r(self.loss_first), "loss_repeat": r(self.loss_repeat), "icl_score": r(self.icl),
                "prefix_matching": [[r(v) for v in row] for row in self.prefix],
                "copying": [[r(v) for v in row] for row in self.copying]}


def eval_batch(n: int = N_EVAL, seed: int = EVAL_SEED):
    """The fresh sequences every checkpoint is scored on: ids (n, 48), a, b, L (n,)."""
    return repeated(torch.Generator().manual_seed(seed), n)


def _masks(a: torch.Tensor, b: torch.Tensor, L: torch.Tensor, T: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Target positions (n, T) bool of the first copy (a+1 .. a+L-1) and of the repeat (b+1 .. b+L-1)."""
    pos = torch.arange(T)[None, :]                                           # (1, T)
    first = (pos > a[:, None]) & (pos < (a + L)[:, None])                     # (n, T)
    rep = (pos > b[:, None]) & (pos < (b + L)[:, None])                       # (n, T)
    return first, rep


def prefix_matching(att: torch.Tensor, a: torch.Tensor, b: torch.Tensor, L: torch.Tensor) -> torch.Tensor:
    """att (n, nh, T, T) -> (nh,): mean weight from query b+j to key a+j+1, j = 0 .. L-2."""
    n, nh, T, _ = att.shape
    j = torch.arange(T)[None, :]                                              # (1, T)
    valid = j < (L - 1)[:, None]                                              # (n, T)
    q = (b[:, None] + j).clamp(max=T - 1)                                     # (n, T) queries
    k = (a[:, None] + j + 1).clamp(max=T - 1)                                 # (n, T) keys
    rows = torch.arange(n)[:, None]
    w = att.permute(0, 2, 3, 1)[rows, q, k]                                   # (n, T, nh)
    return (w * valid[..., None]).sum((0, 1)) / valid.sum()                  # (nh,)


def losses(logits: torch.Tensor, ids: torch.Tensor, a, b, L) -> tuple[float, float]:
    """Mean next-token loss on the first copy's and the repeat's predictable tokens."""
    nll = F.cross_entropy(logits[:, :-1].transpose(1, 2), ids[:, 1:], reduction="none")  # (n, T-1) target t+1
    first, rep = _masks(a, b, L, ids.shape[1])
    first, rep = first[:, 1:], rep[:, 1:]                                     # (n, T-1) aligned with targets
    return float(nll[first].mean()), float(nll[rep].mean())


@torch.no_grad()
def copying(net) -> np.ndarray:
    """[layers, heads]: Σλ / Σ|λ| of each head's token-to-token OV circuit (see the module docstring)."""
    emb = net.wte.weight + net.wpe.weight.mean(0)                             # (V, C)
    out = []
    for block in net.blocks:
        attn, hs = block.attn, block.attn.head_size
        x = block.ln_1(emb)                                                   # (V, C)
        w_v = attn.c_attn.weight[2 * attn.n_head * hs:]                       # (nh*hs, C) value rows
        row = []
        for h in range(attn.n_head):
            v = x @ w_v[h * hs:(h + 1) * hs].T                                # (V, hs)
            o = v @ attn.c_proj.weight[:, h * hs:(h + 1) * hs].T              # (V, C)
            m = (o * net.ln_f.weight) @ net.lm_head.weight.T                  # (V, V) token in -> logits out
            lam = np.linalg.eigvals(m.double().cpu().numpy())
            row.append(float(lam.sum().real / np.abs(lam).sum()))
        out.append(row)
    return np.array(out)


@torch.no_grad()
def forward(net, ids: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """logits (n, T, V) and per-layer attention [(n, nh, T, T)] of the net on ids (n, T)."""
    return net(ids)


@torch.no_grad()
def measure(net, batch=None, off: dict[int, list[int]] | None = None) -> Scores:
    """Scores of `net` on `batch` (default eval_batch()), with the heads in `off` ({layer: [heads]}) gated to 0."""
    ids, a, b, L = eval_batch() if batch is None else batch
    g = gates.mask([blk.attn.n_head for blk in net.blocks], off)
    with gates.gated(net, g):
        logits, atts = net(ids)                                               # (n, T, V), [(n, nh, T, T)]
    first, rep = losses(logits.float(), ids, a, b, L)
    prefix = np.stack([prefix_matching(att.float(), a, b, L).cpu().numpy() for att in atts])  # (L, nh)
    return Scores(first, rep, prefix, copying(net))


@dataclass(frozen=True)
class KnockOut:
    layer1_head: int            # the induction head: layer 1's best prefix matcher when nothing is off
    base: Scores                # nothing knocked out
    each: list[Scores]          # layer-0 head h knocked out, h = 0 .. nh-1
    all_l0: Scores              # every layer-0 head knocked out

    def table(self) -> list[dict]:
        """One row per intervention: its name, the induction head's prefix matching, the two losses."""
        rows = [("none", self.base), *((f"L0 H{h}", s) for h, s in enumerate(self.each)), ("all of L0", self.all_l0)]
        h1 = self.layer1_head
        return [{"knocked out": name, f"prefix matching of L1 H{h1}": float(s.prefix[1, h1]),
                 "loss on the repeat": s.loss_repeat, "loss on the first copy": s.loss_first} for name, s in rows]


def knock_out(net, batch=None) -> KnockOut:
    """Gate each layer-0 head to 0 in turn (then all of them) and measure the induction head and the losses."""
    batch = eval_batch() if batch is None else batch
    base = measure(net, batch)
    nh = net.blocks[0].attn.n_head
    return KnockOut(int(base.prefix[1].argmax()), base, [measure(net, batch, {0: [h]}) for h in range(nh)],
                    measure(net, batch, {0: list(range(nh))}))


def previous_token(att: torch.Tensor) -> torch.Tensor:
    """att (n, nh, T, T) -> (nh,): mean weight from each position t >= 1 to t-1 (the previous-token score)."""
    T = att.shape[-1]
    t = torch.arange(1, T)
    return att[:, :, t, t - 1].mean((0, 2))                                   # (nh,)


def knock_out_evidence(net) -> tuple[list[dict], int, list[float]]:
    """What the Induction heads view shows of knock_out(net): its table, the layer-1 induction head, and each
    layer-0 head's previous-token score [nh] on the same EVAL sequences. Runs ~2 + nh measurements (~1 s on CPU)."""
    result = knock_out(net)
    _, atts = forward(net, eval_batch()[0])
    return result.table(), result.layer1_head, previous_token(atts[0]).tolist()
