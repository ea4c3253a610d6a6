"""Edge scores and faithfulness on an encoder-decoder (BART, mBART, Marian; `seq2seq-transformer`): the graph and
the forward pass experiments.circuits uses when the model has an encoder.

The graph: senders "enc.embed", "enc.L0H1", "enc.L0.mlp" write into the encoder's stream; "dec.embed", "dec.L0H1"
(self-attention), "cross.L0H1" (cross-attention) and "dec.L0.mlp" into the decoder's. Receivers "enc.L0H1.q|k|v"
and "enc.L0.mlp" read the encoder's stream where they sit; "cross.L0H1.k|v" read the encoder's last output (every
encoder sender reaches every one of them); "dec.L0H1.q|k|v", "cross.L0H1.q", "dec.L0.mlp" and "logits" read the
decoder's. A pair is (clean source, corrupted source, answer, wrong); the decoder reads its start token only, both
runs, so the metric is logit(answer) - logit(wrong) of the first token it writes (experiments.patching's metric for
encoder-decoders), and "dec.embed" scores 0.

Each receiver has its own copy of its stream, built slot by slot (a slot: the embedding, one attention's heads, one
feed-forward): the slot's writes are added, with receiver r taking sender s's write from the corrupted run where
the edge (s, r) is cut, and then the stream's norm of that slot (post-norm: BART, Marian) runs on every copy. So
patching is exact with post-norm too: cutting every edge is the corrupted run. EAP's gradient of edge (s, r) is
∂metric/∂(r's copy just after s's slot, before that slot's norm), which is ∂metric/∂(r's input) for pre-norm.
It does not take a decoder prefix, padding, or T5.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from models.circuit_encdec import Seq2Seq


@dataclass(frozen=True)
class Graph:
    senders: list[str]       # in the order they write
    receivers: list[str]     # in the order they read
    allowed: torch.Tensor    # (S, R) bool: same stream, and the sender writes before the receiver reads
    s_slot: torch.Tensor     # (S,) the slot each sender writes in (its stream's count)
    s_enc: torch.Tensor      # (S,) bool: writes into the encoder's stream
    r_enc: torch.Tensor      # (R,) bool: reads the encoder's stream
    r_local: torch.Tensor    # (R,) the receiver's row among its stream's copies


def graph(n_enc: int, n_dec: int, n_heads: int) -> Graph:
    """graph(1, 1, 1).senders -> ['enc.embed', 'enc.L0H0', 'enc.L0.mlp', 'dec.embed', 'dec.L0H0', 'cross.L0H0',
    'dec.L0.mlp']."""
    hs = range(n_heads)
    S, R = [], []  # (name, is encoder, slot) and (name, is encoder, the last slot it reads)
    S.append(("enc.embed", True, 0))
    for layer in range(n_enc):
        S += [(f"enc.L{layer}H{h}", True, 1 + 2 * layer) for h in hs] + [(f"enc.L{layer}.mlp", True, 2 + 2 * layer)]
        R += [(f"enc.L{layer}H{h}.{p}", True, 2 * layer) for p in "qkv" for h in hs]
        R.append((f"enc.L{layer}.mlp", True, 1 + 2 * layer))
    S.append(("dec.embed", False, 0))
    for layer in range(n_dec):
        S += [(f"dec.L{layer}H{h}", False, 1 + 3 * layer) for h in hs]
        S += [(f"cross.L{layer}H{h}", False, 2 + 3 * layer) for h in hs] + [(f"dec.L{layer}.mlp", False, 3 + 3 * layer)]
        R += [(f"dec.L{layer}H{h}.{p}", False, 3 * layer) for p in "qkv" for h in hs]
        R += [(f"cross.L{layer}H{h}.q", False, 1 + 3 * layer) for h in hs]
        R += [(f"cross.L{layer}H{h}.{p}", True, 2 * n_enc) for p in "kv" for h in hs]
        R.append((f"dec.L{layer}.mlp", False, 2 + 3 * layer))
    R.append(("logits", False, 3 * n_dec))
    s_enc, s_slot = torch.tensor([e for _, e, _ in S]), torch.tensor([t for _, _, t in S])
    r_enc, r_at = torch.tensor([e for _, e, _ in R]), torch.tensor([t for _, _, t in R])
    allowed = (s_enc[:, None] == r_enc[None]) & (s_slot[:, None] <= r_at[None])  # (S, R)
    local = torch.zeros(len(R), dtype=torch.long)
    local[r_enc] = torch.arange(int(r_enc.sum()))
    local[~r_enc] = torch.arange(int((~r_enc).sum()))
    return Graph([n for n, _, _ in S], [n for n, _, _ in R], allowed, s_slot, s_enc, r_enc, local)


def graph_of(lay: Seq2Seq) -> Graph:
    return graph(lay.n_enc, lay.n_dec, lay.n_heads)


class _Stream:
    """Every receiver's copy of one stream, (n, B, T, C), with the edges cut by keep (1 or B, S, R) read from alt."""

    def __init__(self, g: Graph, enc: bool, x0: torch.Tensor, alt, keep, delta) -> None:
        self.rows = (g.r_enc == enc).nonzero()[:, 0]                        # (n,) receivers' global indices
        self.senders = (g.s_enc == enc).nonzero()[:, 0]                     # (m,) senders' global indices
        self.g, self.alt, self.keep, self.delta = g, alt, keep, delta
        self.x = x0.new_zeros(len(self.rows), *x0.shape)                    # (n, B, T, C)
        self.done = 0                                                       # this stream's senders so far

    def add(self, writes: torch.Tensor, slot: int, bias: torch.Tensor | None = None) -> None:
        """A slot's writes (m, B, T, C) into every copy (with their cut edges' corrupted writes), then its δ."""
        m, B = writes.shape[0], writes.shape[1]
        self.x = self.x + writes.sum(0)
        if bias is not None:
            self.x = self.x + bias
        if self.alt is not None:
            idx = self.senders[self.done:self.done + m]
            gap = self.alt[self.done:self.done + m] - writes                # (m, B, T, C)
            w = 1 - self.keep[:, idx][:, :, self.rows].to(gap.dtype)        # (B or 1, m, n)
            self.x = self.x + torch.einsum("bmn,mbtc->nbtc", w.expand(B, -1, -1), gap)
        if self.delta is not None:
            self.x = self.x + self.delta[slot]
        self.done += m

    def read(self, names: list[int]) -> torch.Tensor:
        """Global receiver indices -> their copies (len, B, T, C)."""
        return self.x[self.g.r_local[torch.tensor(names)]]


def _heads(x: torch.Tensor) -> torch.Tensor:
    return x.transpose(0, 1)                                                # (H, B, T, C) -> (B, H, T, C)


def _attend(lay, kind, layer, xq, xk, xv, causal: bool) -> torch.Tensor:
    """Each head's write (H, B, Tq, C) from its receivers' copies (H, B, T, C) each."""
    q, k, v = lay.qkv(kind, layer, _heads(xq), _heads(xk), _heads(xv))     # (B, H, T, hd) each
    scores = (q @ k.transpose(-2, -1)) * lay.scale(kind, layer)             # (B, H, Tq, Tk)
    if causal:
        T = scores.shape[-1]
        mask = torch.ones(T, T, dtype=torch.bool, device=scores.device).tril()
        scores = scores.masked_fill(~mask, float("-inf"))
    att = torch.softmax(scores.float(), -1).to(v.dtype)                     # (B, H, Tq, Tk)
    return lay.write(kind, layer, att @ v).transpose(0, 1)                  # (H, B, Tq, C)


def forward(lay: Seq2Seq, g: Graph, src: torch.Tensor, dec: torch.Tensor, embed=None, alt=None, keep=None,
            delta=None):
    """Logits at the decoder's last position (B, V) and every sender's write: (encoder's (Se, B, S, C), decoder's
    (Sd, B, T, C)). alt: such a pair from another run, read where keep (1 or B, S, R) is 0; delta: (δ enc
    (slots, n_enc_receivers, B, S, C), δ dec (slots, n_dec_receivers, B, T, C)) added after each slot (zeros, for
    gradients); embed (B, S, C) replaces the encoder's embedding write (EAP-IG)."""
    H, r_of = lay.n_heads, {n: i for i, n in enumerate(g.receivers)}
    e0 = lay.embed("enc", src) if embed is None else embed                  # (B, S, C)
    alt = alt or (None, None)
    delta = delta or (None, None)
    enc = _Stream(g, True, e0, alt[0], keep, delta[0])
    outs_e, outs_d = [e0], []

    def names(prefix, layer, part):
        return [r_of[f"{prefix}.L{layer}H{h}.{part}"] for h in range(H)]

    enc.add(e0[None], 0)
    enc.x = lay.embed_norm("enc", enc.x)
    for layer in range(lay.n_enc):
        w = _attend(lay, "enc", layer, *(enc.read(names("enc", layer, p)) for p in "qkv"), causal=False)
        outs_e += list(w)
        enc.add(w, 1 + 2 * layer, lay.bias("enc", layer))
        enc.x = lay.post("enc", layer, enc.x)
        m = lay.mlp("enc", layer, enc.read([r_of[f"enc.L{layer}.mlp"]])[0])   # (B, S, C)
        outs_e.append(m)
        enc.add(m[None], 2 + 2 * layer)
        enc.x = lay.post_mlp("enc", layer, enc.x)
    enc.x = lay.enc_final(enc.x)

    d0 = lay.embed("dec", dec).expand(e0.shape[0], -1, -1)                 # (B, T, C)
    dst = _Stream(g, False, d0, alt[1], keep, delta[1])
    outs_d.append(d0)
    dst.add(d0[None], 0)
    dst.x = lay.embed_norm("dec", dst.x)
    for layer in range(lay.n_dec):
        w = _attend(lay, "dec", layer, *(dst.read(names("dec", layer, p)) for p in "qkv"), causal=True)
        outs_d += list(w)
        dst.add(w, 1 + 3 * layer, lay.bias("dec", layer))
        dst.x = lay.post("dec", layer, dst.x)
        w = _attend(lay, "cross", layer, dst.read(names("cross", layer, "q")), enc.read(names("cross", layer, "k")),
                    enc.read(names("cross", layer, "v")), causal=False)
        outs_d += list(w)
        dst.add(w, 2 + 3 * layer, lay.bias("cross", layer))
        dst.x = lay.post("cross", layer, dst.x)
        m = lay.mlp("dec", layer, dst.read([r_of[f"dec.L{layer}.mlp"]])[0])   # (B, T, C)
        outs_d.append(m)
        dst.add(m[None], 3 + 3 * layer)
        dst.x = lay.post_mlp("dec", layer, dst.x)
    logits = lay.logits(dst.read([r_of["logits"]])[0][:, -1])             # (B, V)
    return logits, (torch.stack(outs_e), torch.stack(outs_d))


def slots(lay: Seq2Seq) -> tuple[int, int]:
    """How many slots each stream has: the embedding, then per layer attention(s) and feed-forward."""
    return 1 + 2 * lay.n_enc, 1 + 3 * lay.n_dec


def eap(lay: Seq2Seq, g: Graph, src_clean, src_corrupt, dec, metric, steps: int | None) -> torch.Tensor:
    """(S, R) EAP scores of one pair (EAP-IG with `steps`: the encoder's embedding from corrupted to clean)."""
    with torch.no_grad():
        _, (ce, cd) = forward(lay, g, src_corrupt, dec)                     # corrupted writes
        _, (ke, kd) = forward(lay, g, src_clean, dec)                       # clean writes
    embed = None
    if steps is not None:
        alpha = torch.arange(1, steps + 1, dtype=ke.dtype, device=ke.device)[:, None, None] / steps
        embed = ce[0] + alpha * (ke[0] - ce[0])                             # (steps, S, C)
    B = 1 if embed is None else embed.shape[0]
    n_se, n_sd = slots(lay)
    de = torch.zeros(n_se, int(g.r_enc.sum()), B, *ke.shape[2:], dtype=ke.dtype, device=ke.device,
                     requires_grad=True)
    dd = torch.zeros(n_sd, int((~g.r_enc).sum()), B, *kd.shape[2:], dtype=kd.dtype, device=kd.device,
                     requires_grad=True)
    with torch.enable_grad():
        logits, _ = forward(lay, g, src_clean.expand(B, -1), dec, embed=embed, delta=(de, dd))
        ge, gd = torch.autograd.grad(metric(logits).sum(), (de, dd))        # (slots, n, B, T, C) each
    scores = torch.zeros(g.allowed.shape, dtype=torch.float64, device=ke.device)
    for diff, grad, enc in (((ce - ke)[:, 0], ge, True), ((cd - kd)[:, 0], gd, False)):
        s_idx = (g.s_enc == enc).nonzero()[:, 0]
        r_idx = (g.r_enc == enc).nonzero()[:, 0]
        per_slot = grad.double().mean(2)[g.s_slot[s_idx]]                   # (m, n, T, C)
        scores[s_idx[:, None], r_idx[None]] = torch.einsum("mtc,mntc->mn", diff.double(), per_slot)
    return scores * g.allowed.to(scores.device)
