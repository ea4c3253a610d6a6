"""models.supported() (this module's table()): the architectures the app shows, a row per model_type, a column a view.

    table = models.supported()
    table.loc["opt", "heads"]          # "yes"
    table.loc["opt", "next_token"]     # the sentence the Next token view says for an OPT

Rows: every architecture transformers' auto mappings build as a text encoder, decoder or encoder-decoder (the
family models.hf.common gives it), the models of text and other inputs whose language model is read alone (Gemma 3,
LLaVA, Voxtral: a row is its language model's, Gemma 3's its gemma3_text decoder's), and the vision transformers the
app reads (ViT, DeiT). Columns: `kind` (that
family), `attention` ("capture": through models.capture and transformers' registry, the hand-wired families too;
"output_attentions": a family that bypasses the registry, such as DeBERTa-v2 or Falcon), and one per view: "yes" or
the sentence that view says. Only views whose refusal is decided by the architecture alone are filled from the code
that refuses (heads, inside_head, next_token); a view whose refusal is found on a loaded model is not listed yet.
"yes" under heads means the app accepts the architecture and reads its attention as its family does; the tests try a
sample of rows on tiny random models (tests/models/test_any_family.py), not every row. No model is loaded or built
here: the table is read from transformers' mappings, source files and each architecture's default config (Inside a
head's column is its rule for that config: a checkpoint whose config differs may be answered otherwise).
"""
from __future__ import annotations

from types import SimpleNamespace

from models.hf import families


def _routes_through_registry(source: str) -> bool:
    """Whether the family's modeling file (its text, nothing imported) asks transformers' attention registry."""
    return "ALL_ATTENTION_FUNCTIONS" in source


def _inside_head(kind: str, routed: bool, cfg) -> str:
    """Inside a head's sentence for the architecture's default config `cfg`: the rule it applies to a loaded model
    (models.internals.inside_head_says), with the capture installed where the modeling file asks the registry. A
    checkpoint whose config differs (a Gemma 3 whose query_pre_attn_scalar is not its head_dim) may say otherwise."""
    from models.internals import inside_head_says

    return inside_head_says(cfg, kind, routed) or "yes"


def _next_token(model_type: str, kind: str, routed: bool, source: str, cfg=None) -> str:
    """The Next token view's sentence for the default config `cfg` (None: a bare config naming the model_type): for a
    decoder, whether its attention goes through the capture."""
    from models.residual import why_not

    model = SimpleNamespace(family=kind, lm=True, config=cfg or SimpleNamespace(model_type=model_type), routed=routed,
                            source=source)
    return why_not(model) or "yes"


def _default_config(model_type: str):
    """The architecture's default config (transformers' CONFIG_MAPPING, no weights), or None where none can be made
    without sizes (Inside a head is then asked with a bare config naming only its model_type)."""
    from transformers import CONFIG_MAPPING

    try:
        return CONFIG_MAPPING[model_type]()
    except Exception:  # noqa: BLE001 (a config that cannot be made without sizes)
        return None


def _refusal(cfg) -> str | None:
    """The sentence models.load says for the architecture's default config (models.layout.refusal), or None."""
    from models import layout

    why = layout.refusal(cfg) if cfg is not None else None
    return f"This architecture {why}" if why else None


def _heads(kind: str) -> str:
    return "yes" if kind in ("encoder", "decoder", "encoder-decoder", "vision") else "no"


def _with_text() -> set[str]:
    """Every architecture whose config holds a text model's (text_config): the models of text and other inputs whose
    language model may be read alone (LLaVA, Mistral 3: in no text auto mapping), asked of text_part row by row."""
    from transformers import CONFIG_MAPPING

    return {t for t in CONFIG_MAPPING if "text_config" in (getattr(CONFIG_MAPPING[t], "sub_configs", None) or {})}


def table():
    """pandas DataFrame indexed by model_type: kind, attention, heads, inside_head, next_token (see the module)."""
    import pandas as pd

    types = set(families.FAMILIES) | families.auto_types() | _with_text()
    rows = []
    for model_type in sorted(types):
        kind = families.FAMILIES.get(model_type) or families.auto_family(model_type)
        cfg = _default_config(model_type)
        inner = families.text_part(cfg) if kind is None and cfg is not None else None
        if inner is not None:  # a model of text and other inputs: its language model, read alone
            cfg, kind = inner, "decoder"
        if kind is None:
            continue
        # read once per row, from the code that runs it: GPT-SW3's config is GPT-2's and it has no modeling file
        source = families.modeling_source(cfg.model_type if cfg is not None else model_type)
        routed = _routes_through_registry(source)
        row = {"model_type": model_type, "kind": kind, "attention": "capture" if routed else "output_attentions",
               "heads": _heads(kind),
               "inside_head": _inside_head(kind, routed, cfg or SimpleNamespace(model_type=model_type)),
               "next_token": _next_token(model_type, kind, routed, source, cfg)}
        why = _refusal(cfg)
        if why:  # models.load refuses it: every view says the load's sentence
            row.update(heads=why, inside_head=why, next_token=why)
        rows.append(row)
    return pd.DataFrame(rows).set_index("model_type")
