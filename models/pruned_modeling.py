"""The classes of a pruned model, and the slicing that makes it: shipped inside every pruned export.

This file imports torch and transformers only, because a copy of it travels in each exported folder as
`modeling_pruned.py`, with FAMILY set to the export's family ("bert", "gpt2", "llama", ...). config.json's
`auto_map` names its classes, so the folder loads wherever transformers is, without this project:

    AutoModelForSequenceClassification.from_pretrained("PRUNED/", trust_remote_code=True)
    pipeline("text-generation", model="PRUNED/", trust_remote_code=True)   # a pruned GPT-2 or Llama

transformers 5 keeps one head count for all layers and has no prune_heads, so a pruned class builds the
unpruned model from the config and slices the heads named in config.pruned_heads ({layer: [heads]}, in the
original numbering) out of Q, K, V and the output projection before the weights load. The weights are saved
as the variant "pruned" (model.pruned.safetensors): a stock class looks for model.safetensors and refuses the
folder, where loading the pruned tensors into an unpruned model would silently re-initialise the attention.
Six layouts (LAYOUTS; attention_layers finds them by their members, SHAPES): BERT's (encoder.layer[i].attention.self
/ .output.dense: BERT, RoBERTa, ELECTRA, MiniLM), GPT-2's (h[i].attn: Conv1D c_attn holding [q | k | v] columns,
c_proj rows), Llama's (layers[i].self_attn: q_proj, k_proj, v_proj, o_proj or dense; Llama, Mistral, Qwen2, Phi),
Phi-3's (one qkv_proj of [q | k | v] rows, o_proj), OPT's (q/k/v_proj and out_proj with biases, no key/value
groups: OPT, BioGPT, XGLM) and GPT-NeoX's (one query_key_value of [q_h | k_h | v_h] rows head by head, dense:
GPT-NeoX, Persimmon, GPT-NeoX-Japanese). With grouped-query attention (Llama, Phi-3) a key/value head goes only
with every query head that reads it; a group that keeps some of its query heads keeps its keys and values, and a
layer whose groups keep unequal numbers gets silent padding heads or per-head copies, whichever is smaller (see
kv_layout). Does not fine-tune, does not prune encoder-decoders or other layouts (Falcon, GPT-J, BLOOM, MPT,
multi-head latent attention), and does not check that heads are independent once cut (the project does, before
it exports).
"""
from __future__ import annotations

import torch
import transformers
from torch import nn
from transformers.models.auto import configuration_auto, modeling_auto
from transformers.pytorch_utils import Conv1D

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
    hs, width = attn.head_dim, attn.split_size
    index, n, empty = kept(heads, attn.num_heads, hs, attn.c_attn.weight.device)
    attn.c_attn = slice_conv1d(attn.c_attn, torch.cat([index, index + width, index + 2 * width]), True)
    attn.c_proj = slice_conv1d(attn.c_proj, index, False)
    if empty:
        attn.c_proj.weight.data.zero_()                                     # (hs, C): the silent head writes 0
    attn.num_heads, attn.split_size = n, n * hs


def _grouped(attn: nn.Module, heads: list[int], n: int, kv_n: int) -> tuple[torch.Tensor, torch.Tensor, list]:
    """(query rows to keep, k/v rows to keep, the new query positions' original heads) of a grouped-query layer
    losing query positions `heads` of the layer as it is (a silent one is no head: removing it changes nothing).
    The layout is kv_layout's for the original heads still kept, so pruning again gives the layout one cut of the
    combined plan gives. head_of (original head per query position, -1 silent), kv_of (group per k/v row) and
    num_key_value_groups are set on the module, for that and for showing the heads at their original indices."""
    hs = attn.head_dim
    head_of = getattr(attn, "head_of", None) or list(range(n))
    kv_of = getattr(attn, "kv_of", None) or list(range(kv_n))
    still = {o for p, o in enumerate(head_of) if o >= 0 and p not in set(heads)}
    new_of, kv, groups = kv_layout([h for h in range(n) if h not in still], [h // (n // kv_n) for h in range(n)])
    position = {o: p for p, o in enumerate(head_of) if o >= 0}      # original head -> its query position now
    row = {g: r for r, g in enumerate(kv_of)}                        # group -> a k/v row that holds it now
    device = attn.o_proj.weight.device if hasattr(attn, "o_proj") else attn.dense.weight.device
    q = _rows([position.get(o, 0) for o in new_of], hs, device)      # a silent head: any rows (its output is 0)
    kv_rows = _rows([row.get(g, 0) for g in kv], hs, device)
    attn.num_key_value_groups, attn.head_of, attn.kv_of = groups, new_of, kv
    return q, kv_rows, new_of


def _silence(out: nn.Linear, positions: list[int], hs: int) -> None:
    """Zero the output projection's columns (C, hs) of the silent query positions (-1): they write 0."""
    for p, o in enumerate(positions):
        if o < 0:
            out.weight.data[:, p * hs:(p + 1) * hs] = 0


def _slice_llama(attn: nn.Module, heads: list[int]) -> None:
    """Llama, Mistral, Qwen2 (o_proj) and Phi (dense): separate q/k/v projections, grouped keys and values."""
    cfg, out = attn.config, "o_proj" if hasattr(attn, "o_proj") else "dense"
    n = cfg.num_attention_heads
    q, kv_rows, new_of = _grouped(attn, heads, n, getattr(cfg, "num_key_value_heads", None) or n)
    attn.q_proj = slice_linear(attn.q_proj, q, 0)
    setattr(attn, out, slice_linear(getattr(attn, out), q, 1))
    _silence(getattr(attn, out), new_of, attn.head_dim)
    attn.k_proj, attn.v_proj = (slice_linear(m, kv_rows, 0) for m in (attn.k_proj, attn.v_proj))


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
    q, kv_rows, new_of = _grouped(attn, heads, n, kv_n)                # widths above: before this cut
    rows = torch.cat([q, width_q + kv_rows, width_q + width_kv + kv_rows])
    attn.qkv_proj, attn.o_proj = slice_linear(attn.qkv_proj, rows, 0), slice_linear(attn.o_proj, q, 1)
    _silence(attn.o_proj, new_of, attn.head_dim)
    attn.num_key_value_heads = len(attn.kv_of)
    attn.config = LayerConfig(shared, num_attention_heads=len(new_of))


def _slice_opt(attn: nn.Module, heads: list[int]) -> None:
    """OPT, BioGPT, XGLM: separate q/k/v projections (biases), out_proj, one key/value head per query head."""
    hs = attn.head_dim
    index, n, empty = kept(heads, attn.num_heads, hs, attn.q_proj.weight.device)
    attn.q_proj, attn.k_proj, attn.v_proj = (slice_linear(m, index, 0) for m in (attn.q_proj, attn.k_proj, attn.v_proj))
    attn.out_proj = slice_linear(attn.out_proj, index, 1)
    if empty:
        attn.out_proj.weight.data.zero_()                                   # (C, hs): the silent head writes 0
    attn.num_heads = n
    if hasattr(attn, "embed_dim"):
        attn.embed_dim = n * hs


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
    kept = [{h for p, h in enumerate(at) if h >= 0 and p not in plan.get(layer, [])}
            for layer, at in enumerate(positions)]
    return {layer: gone for layer, keep in enumerate(kept) if (gone := [h for h in range(n) if h not in keep])}


LAYOUTS = {"BERT": _slice_bert, "GPT-2": _slice_gpt2, "Llama": _slice_llama, "Phi-3": _slice_phi3, "OPT": _slice_opt,
           "GPT-NeoX": _slice_neox}
GROUPED = ("Llama", "Phi-3")  # the layouts that keep each layer's head positions (head_of) on its attention


def attention_layers(model: nn.Module) -> tuple[str, list[nn.Module]]:
    """(layout name, each layer's attention module) of a model real pruning can slice; ValueError otherwise."""
    base = getattr(model, "base_model", model)
    blocks = getattr(getattr(base, "encoder", None), "layer", None)
    if blocks is not None and all(hasattr(getattr(b, "attention", None), "self") for b in blocks):
        return "BERT", [b.attention for b in blocks]
    if getattr(base, "h", None) is not None and all(hasattr(getattr(b, "attn", None), "c_attn")
                                                    and hasattr(b.attn, "head_dim") for b in base.h):  # not GPT-1
        return "GPT-2", [b.attn for b in base.h]
    if getattr(base, "encoder", None) is not None:  # an encoder-decoder: its cross-attention is not sliced
        raise ValueError(REFUSED)
    blocks = getattr(base, "layers", None) or getattr(getattr(base, "decoder", None), "layers", None)
    attentions = [getattr(b, "self_attn", None) or getattr(b, "attention", None) for b in blocks or []]
    if attentions and all(a is not None for a in attentions):
        for layout, parts in SHAPES.items():
            if all(_fits(a, part) for a in attentions for part in parts):
                return layout, attentions
    raise ValueError(REFUSED)


def _fits(attention: nn.Module, part: str) -> bool:
    """Whether an attention module has the member `part` names ("a|b": either; "!a": not a); a module member
    must be an nn.Linear (a projection of its own class is sliced otherwise)."""
    if part.startswith("!"):
        return not hasattr(attention, part[1:])
    found = [getattr(attention, p, None) for p in part.split("|")]
    return any(m is not None and (not isinstance(m, nn.Module) or isinstance(m, nn.Linear)) for m in found)


# each decoder layout's attention, by the members that name it ("a|b": either, "!a": not a); the first that fits
# is taken. An OPT-style module with kdim (TrOCR) reshapes its output with its input's width: not sliced
SHAPES = {"Llama": ("q_proj", "k_proj", "v_proj", "o_proj|dense", "num_key_value_groups", "head_dim"),
          "Phi-3": ("qkv_proj", "o_proj", "num_key_value_groups", "num_key_value_heads", "head_dim"),
          "OPT": ("q_proj", "k_proj", "v_proj", "out_proj", "num_heads", "head_dim", "!kdim"),
          "GPT-NeoX": ("query_key_value", "dense", "head_size|head_dim")}
REFUSED = ("Heads can be cut out of BERT-style encoders (BERT, RoBERTa, ELECTRA), GPT-2, Llama-style (Llama, Mistral, "
           "Qwen2, Phi), Phi-3, OPT-style (OPT, BioGPT, XGLM) and GPT-NeoX-style decoders; this model is laid out "
           "otherwise, so only its gates apply.")


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
    return model


def _pruned(base: type, config_class: type) -> type:
    """A subclass of transformers' `base` that slices config.pruned_heads out as it is built and reads the
    "pruned" weights variant."""
    def __init__(self, config, *args, **kwargs):
        base.__init__(self, config, *args, **kwargs)
        slice_heads(self, getattr(config, "pruned_heads", None) or {})

    @classmethod
    def from_pretrained(cls, *args, **kwargs):
        kwargs.setdefault("variant", VARIANT)
        return super(klass, cls).from_pretrained(*args, **kwargs)

    klass = type(f"Pruned{base.__name__}", (base,), {"config_class": config_class, "__init__": __init__,
                                                     "from_pretrained": from_pretrained, "__module__": __name__})
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
        if name is not None and hasattr(transformers, name):
            out[auto] = _pruned(getattr(transformers, name), config)
            follow(name, out[auto].__name__)
    return out


if FAMILY:  # the copy inside an exported folder: the names config.json's auto_map points at
    globals().update({cls.__name__: cls for cls in classes(FAMILY).values()})
