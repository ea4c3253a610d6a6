"""The slicing of one attention layer per layout, for models.pruned_modeling: shipped beside it in every pruned export.

This file imports torch and transformers only: a copy travels in each exported folder as pruned_slicing.py, which
modeling_pruned.py imports relatively (transformers copies a remote-code file's relative imports with it). Each
_slice_<layout>(attention, heads) removes `heads` (positions of the layer as it is) from one attention module in
place: its Q, K, V rows, its output projection's columns, and what the module reads its head count from; LAYOUTS
names each layout's. A layer that loses every head keeps one silent head (zero output columns). Does not find the
layers (attention_layers in models.pruned_modeling does), and does not check that the heads left compute what they
did (the project does).
"""
from __future__ import annotations

import copy

import torch
from torch import nn
from transformers.pytorch_utils import Conv1D


def normalise(plan: dict) -> dict[int, list[int]]:
    """Plan with int layers, sorted unique heads, empty layers dropped. {'1': [3, 0, 3]} -> {1: [0, 3]}"""
    return {int(k): sorted({int(h) for h in v}) for k, v in plan.items() if len(v)}


def slice_linear(linear: nn.Linear, index: torch.Tensor, dim: int) -> nn.Linear:
    """A new Linear keeping rows (dim=0: output features) or columns (dim=1: input features) `index`."""
    w = linear.weight.detach().index_select(dim, index).clone()
    out = nn.Linear(w.shape[1], w.shape[0], bias=linear.bias is not None, device=w.device, dtype=w.dtype)
    out.weight.data.copy_(w)
    if linear.bias is not None:
        out.bias.data.copy_(linear.bias.detach() if dim == 1 else linear.bias.detach()[index])
    return out


def slice_conv1d(conv: Conv1D, index: torch.Tensor, outputs: bool) -> Conv1D:
    """GPT-2's Conv1D (weight (in, out)) keeping output features `index` (outputs=True) or input features."""
    w = conv.weight.detach().index_select(1 if outputs else 0, index).clone()      # (in, out)
    out = Conv1D(w.shape[1], w.shape[0]).to(device=w.device, dtype=w.dtype)
    out.weight.data.copy_(w)
    out.bias.data.copy_(conv.bias.detach()[index] if outputs else conv.bias.detach())
    return out


def kept(heads: list[int], n: int, hs: int, device) -> tuple[torch.Tensor, int, bool]:
    """Feature index of the heads kept, their count and whether none was (then head 0 stays, silenced)."""
    keep = [h for h in range(n) if h not in heads]
    index = torch.cat([torch.arange(h * hs, (h + 1) * hs) for h in keep or [0]]).to(device)
    return index, len(keep or [0]), not keep


def kv_layout(removed: list[int], group_of: list[int]) -> tuple[list[int], list[int], int]:
    """(the original query head at each query position, -1 for a silent one; the key/value group of each k/v row;
    query heads per k/v row) of one layer whose query head h reads key/value group group_of[h], after `removed`.
    transformers repeats each k/v row for `groups` consecutive query heads (repeat_kv), so groups must be equal.
    Two exact layouts, the one with fewer parameters chosen (layout_size; a tie goes to padding, the smaller cache):
    padding: each kept group keeps one k/v row and m = the most query heads any group keeps, a group that keeps
    fewer filled with silent heads (zero output columns), never more than unpruned; copies: each kept query head
    gets its own copy of its group's k/v row (groups 1). All removed: one silent head.
    ([0, 1], [0, 0, 1, 1]) -> ([2, 3], [1], 2); ([0], [0, 0, 1, 1]) -> ([1, -1, 2, 3], [0, 1], 2);
    ([0, 1, 2, 4, 5, 6], [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]) -> ([3, 7, 8, 9, 10, 11], [0, 1, 2, 2, 2, 2], 1)"""
    keep = [h for h in range(len(group_of)) if h not in removed]
    if not keep:
        return [-1], [group_of[0]], 1
    by_group: dict[int, list[int]] = {}
    for h in keep:
        by_group.setdefault(group_of[h], []).append(h)
    m = max(map(len, by_group.values()))
    padded = [h for heads in by_group.values() for h in heads + [-1] * (m - len(heads))]
    copies = [group_of[h] for h in keep]
    if layout_size(padded, list(by_group)) <= layout_size(keep, copies):
        return padded, list(by_group), m
    return keep, copies, 1


def layout_size(head_of: list[int], kv: list[int]) -> int:
    """Parameters of a layer's attention in head-size units per model width: q rows and o columns per query
    position, k and v rows per k/v row. Unpruned Llama-2-7B: ([0..31], [0..7]) -> 80."""
    return 2 * len(head_of) + 2 * len(kv)


def partial_groups(plan: dict, n_heads: int, n_kv: int) -> dict[int, list[int]]:
    """{layer: [key/value groups]} that lose some but not all of their query heads: their keys and values stay.
    ({0: [0, 2, 3]}, 4, 2) -> {0: [0]}"""
    group = n_heads // n_kv
    out = {layer: [g for g in range(n_kv) if 0 < sum(h // group == g for h in heads) < group]
           for layer, heads in normalise(plan).items()}
    return {layer: gs for layer, gs in out.items() if gs}


def _rows(heads: list[int], size: int, device) -> torch.Tensor:
    """Feature index of whole heads of `size` features. ([1, 3], 2) -> [2, 3, 6, 7]"""
    return torch.cat([torch.arange(h * size, (h + 1) * size) for h in heads]).to(device)


def _slice_bert(attention: nn.Module, heads: list[int]) -> None:
    sa, out = attention.self, attention.output
    hs = sa.attention_head_size
    index, n, empty = kept(heads, sa.num_attention_heads, hs, sa.query.weight.device)
    sa.query, sa.key, sa.value = (slice_linear(m, index, 0) for m in (sa.query, sa.key, sa.value))
    out.dense = slice_linear(out.dense, index, 1)
    if empty:  # a zero value and zero output columns: this head adds nothing, as all-gates-0 would
        for p in (sa.value.weight, sa.value.bias, out.dense.weight):
            p.data.zero_()
    sa.num_attention_heads, sa.all_head_size = n, n * hs


def _slice_gpt2(attn: nn.Module, heads: list[int]) -> None:
    """GPT-2 and GPT-1: a Conv1D c_attn whose columns are [q | k | v], split at split_size, and c_proj; the module's
    head count (num_heads, GPT-1's n_head) and split_size are set."""
    count = "num_heads" if hasattr(attn, "num_heads") else "n_head"
    hs, width = attn.split_size // getattr(attn, count), attn.split_size
    index, n, empty = kept(heads, getattr(attn, count), hs, attn.c_attn.weight.device)
    attn.c_attn = slice_conv1d(attn.c_attn, torch.cat([index, index + width, index + 2 * width]), True)
    attn.c_proj = slice_conv1d(attn.c_proj, index, False)
    if empty:
        attn.c_proj.weight.data.zero_()                                     # (hs, C): the silent head writes 0
    setattr(attn, count, n)
    attn.split_size = n * hs


def _grouped(attn: nn.Module, heads: list[int], n: int, kv_n: int) -> tuple[list[int], list[int], list[int]]:
    """(the query position now of each new query position, the k/v row now of each new k/v row, each new query
    position's original head) of a grouped-query layer losing query positions `heads` of the layer as it is (a silent
    one is no head: removing it changes nothing); a silent head reads position 0 (any: its output is 0).
    The layout is kv_layout's for the original heads still kept, so pruning again gives the layout one cut of the
    combined plan gives. head_of (original head per query position, -1 silent), kv_of (group per k/v row) and
    num_key_value_groups are set on the module, for that and for showing the heads at their original indices."""
    head_of = getattr(attn, "head_of", None) or list(range(n))
    kv_of = getattr(attn, "kv_of", None) or list(range(kv_n))
    still = {o for p, o in enumerate(head_of) if o >= 0 and p not in set(heads)}
    new_of, kv, groups = kv_layout([h for h in range(n) if h not in still], [h // (n // kv_n) for h in range(n)])
    position = {o: p for p, o in enumerate(head_of) if o >= 0}      # original head -> its query position now
    row = {g: r for r, g in enumerate(kv_of)}                        # group -> a k/v row that holds it now
    attn.num_key_value_groups, attn.head_of, attn.kv_of = groups, new_of, kv
    return [position.get(o, 0) for o in new_of], [row.get(g, 0) for g in kv], new_of


def _silence(out: nn.Linear, positions: list[int], hs: int) -> None:
    """Zero the output projection's columns (C, hs) of the silent query positions (-1): they write 0."""
    for p, o in enumerate(positions):
        if o < 0:
            out.weight.data[:, p * hs:(p + 1) * hs] = 0


def _slice_gate(attn: nn.Module, at: list[int], n: int, hs: int = 0) -> None:
    """An output gate (g_proj: LFM3, Ling 3.0, Laguna) of one logit per query head, or of one per head and dimension
    (`hs` rows a head: Laguna's elementwise gating), n positions before the cut, keeps the rows of positions `at`."""
    gate = getattr(attn, "g_proj", None)
    if isinstance(gate, nn.Linear) and gate.out_features == n:
        attn.g_proj = slice_linear(gate, torch.tensor(at, device=gate.weight.device), 0)
    elif isinstance(gate, nn.Linear) and hs and gate.out_features == n * hs:
        attn.g_proj = slice_linear(gate, _rows(at, hs, gate.weight.device), 0)


def _slice_llama(attn: nn.Module, heads: list[int]) -> None:
    """Llama, Mistral, Qwen2 (o_proj), Phi (dense) and LFM2 (out_proj): separate q/k/v projections, grouped keys and
    values (as many
    as k_proj holds before the first cut, which may be more than the config says); with their per-head parts: a sink
    logit per query head (gpt-oss, Granite-SWA), a norm per query and per k/v head (StableLM's qk_layernorm), the
    head counts a module reshapes with (StableLM's num_heads), values and outputs of their own head size
    (MiMo-V2-Flash's v_head_dim), a query head's output gate in its q_proj rows (Qwen3-Next, Qwen3.5: [q | gate] per
    head) or in a g_proj of one row per head (LFM3)."""
    out = next(name for name in ("o_proj", "dense", "out_proj") if hasattr(attn, name))
    hs, device = attn.head_dim, attn.q_proj.weight.device
    vs = getattr(attn, "v_head_dim", None) or hs
    # the layer's own heads before any cut, as its projections hold them (MiMo-V2-Flash's sliding layers have twice
    # the config's key/value heads); a query head's rows in q_proj: hs, or its query and its output gate (Qwen3-Next)
    attn.heads_unpruned = getattr(attn, "heads_unpruned", None) or (getattr(attn, out).in_features // vs,
                                                                    attn.k_proj.out_features // hs)
    now = len(getattr(attn, "head_of", None) or range(attn.heads_unpruned[0]))        # query positions before
    qs = attn.q_proj.out_features // now
    q_at, kv_at, new_of = _grouped(attn, heads, *attn.heads_unpruned)
    attn.q_proj = slice_linear(attn.q_proj, _rows(q_at, qs, device), 0)
    _slice_gate(attn, q_at, now, vs)
    setattr(attn, out, slice_linear(getattr(attn, out), _rows(q_at, vs, device), 1))
    _silence(getattr(attn, out), new_of, vs)
    attn.k_proj = slice_linear(attn.k_proj, _rows(kv_at, hs, device), 0)
    attn.v_proj = slice_linear(attn.v_proj, _rows(kv_at, vs, device), 0)
    if isinstance(getattr(attn, "sinks", None), nn.Parameter):                  # (H,): one logit per query head
        attn.sinks = nn.Parameter(attn.sinks.detach()[q_at].clone())
    for norm, at in (("q_layernorm", q_at), ("k_layernorm", kv_at)):
        if isinstance(getattr(getattr(attn, norm, None), "norms", None), nn.ModuleList):
            per_head = getattr(attn, norm)
            per_head.norms = nn.ModuleList([copy.deepcopy(per_head.norms[p]) for p in at])  # a silent head: a copy
            per_head.num_heads = len(at)
    for name, count in (("num_heads", len(new_of)), ("num_key_value_heads", len(kv_at))):
        if isinstance(getattr(attn, name, None), int):
            setattr(attn, name, count)


class LayerConfig:
    """The model's config as one layer sees it: the attributes set on it its own (num_attention_heads of a layer
    that reshapes with the config's count), every other read the model's config (attention implementation, ...).
    Not a PretrainedConfig: nothing saves it; config.pruned_heads rebuilds it when the model loads."""

    def __init__(self, shared, **own):
        self.__dict__.update(own, _shared=shared)

    def __getattr__(self, name):
        if name.startswith("__") or name == "_shared":  # copy/pickle probe before __dict__ is filled
            raise AttributeError(name)
        return getattr(self.__dict__["_shared"], name)


def _slice_phi3(attn: nn.Module, heads: list[int]) -> None:
    """Phi-3: one qkv_proj whose rows are [q | k | v], o_proj, grouped keys and values. Phi-3 splits q from k at
    config.num_attention_heads * head_dim, so the layer gets its own count (LayerConfig)."""
    shared = getattr(attn.config, "_shared", attn.config)
    n = shared.num_attention_heads
    kv_n = getattr(shared, "num_key_value_heads", None) or n
    width_q, width_kv = attn.config.num_attention_heads * attn.head_dim, attn.num_key_value_heads * attn.head_dim
    q_at, kv_at, new_of = _grouped(attn, heads, n, kv_n)                # widths above: before this cut
    device = attn.o_proj.weight.device
    q, kv_rows = _rows(q_at, attn.head_dim, device), _rows(kv_at, attn.head_dim, device)
    rows = torch.cat([q, width_q + kv_rows, width_q + width_kv + kv_rows])
    attn.qkv_proj, attn.o_proj = slice_linear(attn.qkv_proj, rows, 0), slice_linear(attn.o_proj, q, 1)
    _silence(attn.o_proj, new_of, attn.head_dim)
    attn.num_key_value_heads = len(attn.kv_of)
    attn.config = LayerConfig(shared, num_attention_heads=len(new_of))


def _slice_dbrx(attn: nn.Module, heads: list[int]) -> None:
    """DBRX: one Wqkv whose rows are [q | k | v] (grouped keys and values), out_proj. It splits q from k at its
    hidden_size and reshapes by head_dim, so hidden_size, num_heads and num_key_value_heads are set to what it keeps."""
    hd, device = attn.head_dim, attn.out_proj.weight.device
    attn.heads_unpruned = getattr(attn, "heads_unpruned", None) or (attn.num_heads, attn.num_key_value_heads)
    width_q, width_kv = attn.hidden_size, attn.num_key_value_heads * hd   # before this cut
    q_at, kv_at, new_of = _grouped(attn, heads, *attn.heads_unpruned)
    q, kv_rows = _rows(q_at, hd, device), _rows(kv_at, hd, device)
    attn.Wqkv = slice_linear(attn.Wqkv, torch.cat([q, width_q + kv_rows, width_q + width_kv + kv_rows]), 0)
    attn.out_proj = slice_linear(attn.out_proj, q, 1)
    _silence(attn.out_proj, new_of, hd)
    attn.num_heads, attn.num_key_value_heads, attn.hidden_size = len(new_of), len(attn.kv_of), len(new_of) * hd


def _slice_opt(attn: nn.Module, heads: list[int]) -> None:
    """OPT, BioGPT, XGLM, GPT-J, GPT-Neo: separate q/k/v projections (biases or none), out_proj, one key/value head
    per query head; the module reshapes with its num_heads (num_attention_heads: GPT-J), set here. GPT-J's partial
    rotary turns the first rotary_dim features of every head alike, so whole heads go exactly."""
    hs, count = attn.head_dim, "num_heads" if hasattr(attn, "num_heads") else "num_attention_heads"
    index, n, empty = kept(heads, getattr(attn, count), hs, attn.q_proj.weight.device)
    attn.q_proj, attn.k_proj, attn.v_proj = (slice_linear(m, index, 0) for m in (attn.q_proj, attn.k_proj, attn.v_proj))
    attn.out_proj = slice_linear(attn.out_proj, index, 1)
    if empty:
        attn.out_proj.weight.data.zero_()                                   # (C, hs): the silent head writes 0
    setattr(attn, count, n)
    if hasattr(attn, "embed_dim"):
        attn.embed_dim = n * hs


def _slice_ctrl(attn: nn.Module, heads: list[int]) -> None:
    """CTRL: Wq, Wk, Wv (biases) reshaped with -1 heads of head_dim, and dense; num_heads set."""
    index, n, empty = kept(heads, attn.num_heads, attn.head_dim, attn.Wq.weight.device)
    attn.Wq, attn.Wk, attn.Wv = (slice_linear(m, index, 0) for m in (attn.Wq, attn.Wk, attn.Wv))
    attn.dense = slice_linear(attn.dense, index, 1)
    if empty:
        attn.dense.weight.data.zero_()                                      # (C, hs): the silent head writes 0
    attn.num_heads = n


def _slice_mpt(attn: nn.Module, heads: list[int]) -> None:
    """MPT: one Wqkv of [q of every head | k | v] rows, cut in three as it runs, and out_proj; n_heads set (its scale
    came from the head size, which a cut keeps). Its ALiBi rows are cut by the pruned model (_keep_slopes)."""
    hs, n = attn.head_dim, attn.n_heads
    index, n_new, empty = kept(heads, n, hs, attn.Wqkv.weight.device)
    attn.Wqkv = slice_linear(attn.Wqkv, torch.cat([index + part * n * hs for part in range(3)]), 0)
    attn.out_proj = slice_linear(attn.out_proj, index, 1)
    if empty:
        attn.out_proj.weight.data.zero_()                                  # (C, hs): the silent head writes 0
    attn.n_heads = n_new


def _slice_bigcode(attn: nn.Module, heads: list[int]) -> None:
    """GPT-BigCode (StarCoder): a Linear c_attn of [q of every head | k | v] rows with one key/value head
    (multi_query), split at embed_dim, or of [q_h | k_h | v_h] head by head; c_proj. Its num_heads, embed_dim and
    num_key_value_groups (query heads per key/value head) are set."""
    hs, n = attn.head_dim, attn.num_heads
    index, n_new, empty = kept(heads, n, hs, attn.c_proj.weight.device)
    if attn.multi_query:
        rows = torch.cat([index, attn.embed_dim + torch.arange(2 * hs, device=index.device)])
    else:
        keep = [h for h in range(n) if h not in heads] or [0]
        rows = _rows([3 * h + part for h in keep for part in range(3)], hs, index.device)
        attn.kv_heads, attn.kv_dim = n_new, n_new * hs
    attn.c_attn = slice_linear(attn.c_attn, rows, 0)
    attn.c_proj = slice_linear(attn.c_proj, index, 1)
    if empty:
        attn.c_proj.weight.data.zero_()                                     # (C, hs): the silent head writes 0
    attn.num_heads, attn.embed_dim = n_new, n_new * hs
    attn.num_key_value_groups = n_new if attn.multi_query else 1


def _slice_neox(attn: nn.Module, heads: list[int]) -> None:
    """GPT-NeoX, Persimmon, GPT-NeoX-Japanese: one query_key_value whose rows are [q_h | k_h | v_h] head by head
    (reshaped with -1 or the module's own head count), dense."""
    hs = getattr(attn, "head_size", None) or attn.head_dim
    count = "num_heads" if hasattr(attn, "num_heads") else "num_attention_heads"
    total = getattr(attn, count, None) or attn.query_key_value.weight.shape[0] // (3 * hs)
    index, n, empty = kept(heads, total, hs, attn.query_key_value.weight.device)
    keep = [h for h in range(total) if h not in heads] or [0]                  # each kept head (or head 0)
    fused = _rows([3 * h + part for h in keep for part in range(3)], hs, index.device)  # its q, k, v rows
    attn.query_key_value = slice_linear(attn.query_key_value, fused, 0)
    attn.dense = slice_linear(attn.dense, index, 1)
    if empty:
        attn.dense.weight.data.zero_()
    if hasattr(attn, count):
        setattr(attn, count, n)


def _slice_falcon(attn: nn.Module, heads: list[int]) -> None:
    """Falcon: one query_key_value laid out by key/value group, [q_g0 .. q_g(G-1) | k_g | v_g] for each group g, in
    all three of its forms: grouped (new_decoder_architecture), multi-query (one group: [q_0 .. q_n-1 | k | v]) and
    multi-head (groups of one: [q_h | k_h | v_h]); dense. The groups are kept as Llama's are (kv_layout), and the
    module's num_heads and num_kv_heads, which it reshapes with, set (an ALiBi Falcon's rows: pruned_modeling)."""
    cfg, hs = attn.config, attn.head_dim
    n = cfg.num_attention_heads
    kv_n = cfg.num_kv_heads if cfg.new_decoder_architecture else (1 if cfg.multi_query else n)
    g_now = attn.num_heads // (attn.num_heads if not (cfg.new_decoder_architecture or cfg.multi_query)
                               else attn.num_kv_heads)                        # query heads per group as it is
    q_at, kv_at, new_of = _grouped(attn, heads, n, kv_n)
    g_new = attn.num_key_value_groups

    def q(p: int) -> int:  # the fused block of query position p now
        return (p // g_now) * (g_now + 2) + p % g_now

    blocks = [b for r, k in enumerate(kv_at)                                  # each group's q, then its k and v
              for b in [q(p) for p in q_at[r * g_new:(r + 1) * g_new]] + [k * (g_now + 2) + g_now + i for i in (0, 1)]]
    attn.query_key_value = slice_linear(attn.query_key_value, _rows(blocks, hs, attn.dense.weight.device), 0)
    attn.dense = slice_linear(attn.dense, _rows(q_at, hs, attn.dense.weight.device), 1)
    _silence(attn.dense, new_of, hs)
    attn.num_heads = len(new_of)
    if cfg.new_decoder_architecture or not cfg.multi_query:
        attn.num_kv_heads = len(kv_at)


def _slice_codegen(attn: nn.Module, heads: list[int], parts: int = 4) -> None:
    """CodeGen: one qkv_proj that its forward cuts into `parts` (its mp_num, 4) equal blocks of [q | v | k] rows, the
    query heads of block b being b * H/parts ... (b + 1) * H/parts - 1, and out_proj. Any head may sit in any block (its
    q, v and k rows move together), so the kept heads go in order and the last block is filled with silent heads up
    to a multiple of `parts`. head_of (original head per position, -1 silent) is kept on the module, so that a second
    cut leaves the layout one cut of the combined plan gives."""
    hs, n = attn.head_dim, attn.num_attention_heads
    head_of = getattr(attn, "head_of", None) or list(range(n))
    keep = [p for p, o in enumerate(head_of) if o >= 0 and p not in set(heads)]
    pad = -len(keep) % parts or (parts if not keep else 0)
    at = keep + [keep[0] if keep else 0] * pad                                # a silent head reads any head's rows
    per, per_new = n // parts, len(at) // parts                               # heads per block, now and after

    def rows(p: int, part: int) -> int:  # the fused block of position p's q (0), v (1) or k (2) rows
        return (p // per) * 3 * per + part * per + p % per

    blocks = [rows(p, part) for b in range(parts) for part in range(3) for p in at[b * per_new:(b + 1) * per_new]]
    device = attn.out_proj.weight.device
    attn.qkv_proj = slice_linear(attn.qkv_proj, _rows(blocks, hs, device), 0)
    attn.out_proj = slice_linear(attn.out_proj, _rows(at, hs, device), 1)
    attn.head_of = [head_of[p] for p in keep] + [-1] * pad
    _silence(attn.out_proj, attn.head_of, hs)
    attn.num_attention_heads = len(at)


def _slice_mla(attn: nn.Module, heads: list[int]) -> None:
    """Multi-head latent attention (DeepSeek-V2/V3/V3.2, GLM-4-MoE-Lite, GLM-MoE-DSA, MiniCPM3, Youtu): per head,
    qk_head_dim rows of q_b_proj (q_proj without a query LoRA), [q_nope | q_rope] each, nope + v_head_dim rows of
    kv_b_proj, [k_nope | v] each, and v_head_dim columns of o_proj; these modules reshape with -1 heads and set
    num_heads here; a gate of one logit per head (g_proj: Ling's Bailing) keeps its heads' rows. The shared parts
    stay whole: q_a_proj and kv_a_proj_with_mqa with their norms, the rope key
    every head reads, and a sparse-attention indexer (its own heads, read from the hidden state and q_a's output)."""
    q_name = "q_proj" if getattr(attn, "q_proj", None) is not None else "q_b_proj"
    kv_size = attn.qk_nope_head_dim + attn.v_head_dim
    n = attn.kv_b_proj.out_features // kv_size
    keep = [h for h in range(n) if h not in heads]
    device = attn.o_proj.weight.device
    at = keep or [0]                                                      # none kept: head 0 stays, silenced
    setattr(attn, q_name, slice_linear(getattr(attn, q_name), _rows(at, attn.qk_head_dim, device), 0))
    attn.kv_b_proj = slice_linear(attn.kv_b_proj, _rows(at, kv_size, device), 0)
    attn.o_proj = slice_linear(attn.o_proj, _rows(at, attn.v_head_dim, device), 1)
    _slice_gate(attn, at, n)
    if not keep:
        attn.o_proj.weight.data.zero_()                                   # (C, v_head_dim): the silent head writes 0
    attn.num_heads = len(at)


# each layout's slicing, by its name in attention_layers
LAYOUTS = {"BERT": _slice_bert, "GPT-2": _slice_gpt2, "Llama": _slice_llama, "Phi-3": _slice_phi3, "OPT": _slice_opt,
           "GPT-NeoX": _slice_neox, "Falcon": _slice_falcon, "CodeGen": _slice_codegen, "CTRL": _slice_ctrl,
           "GPT-BigCode": _slice_bigcode, "MLA": _slice_mla, "MPT": _slice_mpt, "DBRX": _slice_dbrx}
