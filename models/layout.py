"""Which layout a loaded model's architecture has: the one place that reads a config's `model_type`.

The code that recomputes a head's queries and keys, splits the residual stream or traces a circuit is written
per layout, not per model name: a BERT layout (encoder.layer[i].attention.self.query/key/value: BERT, RoBERTa, XLM-R,
CamemBERT, ELECTRA), a Llama layout (separate q/k/v/o projections and RoPE in every layer: Llama, Mistral, Qwen2), GPT-2
(one fused c_attn, learned positions) and GPT-NeoX (fused query_key_value, partial rotary, parallel residual).
Everything outside models/ asks these questions of a model instead of comparing its name (a test keeps it so).
A pruned export ("pruned-llama") has its original's layout.

What it does not do: decide what a view can show (models.architectures) or load anything.

    of(load("gpt"))              -> 'llama'       (the built-in gpt is a Llama)
    of(load("bert"))             -> 'bert'
    rotary(load("hf:<a Qwen2>")) -> True
"""
from __future__ import annotations

from types import SimpleNamespace

from models.layer_kinds import PER_LAYER, attending, attends, layer_kinds, per_layer  # noqa: F401 (re-exported)

LLAMA = ("llama", "mistral", "qwen2")   # q/k/v/o projections, RoPE in every layer, RMSNorm
BERT = ("bert", "roberta", "electra", "xlm-roberta", "camembert")  # encoder.layer[i].attention.self.query/key/value
# (XLM-R and CamemBERT are RoBERTa's code under other names)
ROTARY = LLAMA + ("gpt_neox",)          # positions rotate Q and K inside each head instead of being added
# a LayerNorm after each residual add, whatever the config says (no field says it; BART's and Marian's decoders alone
# load as causal LMs); an OPT says it by do_layer_norm_before false (OPT-350m)
POST_NORM = ("openai-gpt", "trocr", "xlnet", "bert-generation", "bart", "marian", "plbart", "blenderbot-small", "mvp")


def model_type(model) -> str:
    """The architecture of a loaded Hugging Face model ('' for the built-ins written here), pruned or not:
    'llama' for 'llama' and for its pruned export 'pruned-llama'."""
    cfg = getattr(model, "config", None)
    if cfg is None:
        cfg = getattr(getattr(model, "model", None), "config", None)
    return (getattr(cfg, "model_type", None) or "").removeprefix("pruned-")


def of(model) -> str | None:
    """The model's layout: 'bert', 'llama', 'gpt2', 'gpt_neox', or None for any other (or a built-in)."""
    kind = model_type(model)
    if kind in BERT:
        return "bert"
    if kind in LLAMA:
        return "llama"
    return kind if kind in ("gpt2", "gpt_neox") else None


def rotary(model) -> bool:
    """Whether positions enter through a rotation of Q and K (RoPE) rather than a vector added to the embedding."""
    return model_type(model) in ROTARY


def post_norm(cfg) -> bool:
    """Whether the layers norm the residual stream itself after each add (post-norm: POST_NORM's families, an OPT with
    do_layer_norm_before false), read from the config; a pre-norm layer norms only what it reads."""
    return model_type(SimpleNamespace(config=cfg)) in POST_NORM or getattr(cfg, "do_layer_norm_before", True) is False


def joined(cfg) -> bool:
    """Whether the config joins two models' configs (EncoderDecoderModel: config.encoder and config.decoder)."""
    return getattr(cfg, "model_type", None) == "encoder-decoder"


def halves(cfg) -> tuple | None:
    """(encoder config, decoder config) of an encoder-decoder whose config holds one of each (EncoderDecoderModel's
    bert2bert, T5Gemma), or None where its sizes are its own fields (T5's, BART's)."""
    enc, dec = (getattr(cfg, k, None) for k in ("encoder", "decoder"))
    return (enc, dec) if all(hasattr(c, "to_dict") and hasattr(c, "model_type") for c in (enc, dec)) else None


def windows(cfg, layers: list[int]) -> list[int | None]:
    """Each of these layers' sliding window in tokens (None: full attention), as the config declares it: `layer_types`
    where it has them (Qwen2 windows only layers from max_window_layers on; Gemma 2 every other), else
    `sliding_window` on every layer (Mistral), else none."""
    window, types = getattr(cfg, "sliding_window", None), getattr(cfg, "layer_types", None)
    if types is not None:
        return [window if types[layer] == "sliding_attention" else None for layer in layers]
    return [window] * len(layers)


def name(model) -> str:
    """The architecture's name for a sentence shown to the user ('opt'; 'bert2bert' for two models joined as one
    encoder-decoder), or '' for a built-in."""
    cfg = getattr(model, "config", None) or getattr(getattr(model, "model", None), "config", None)
    if joined(cfg):
        return f"{cfg.encoder.model_type}2{cfg.decoder.model_type}"
    return model_type(model)


def bert(model) -> bool:
    """BERT's layout (encoder.layer[i].attention.self.query/key/value), which gates, pruning and Q/K recompute read."""
    return of(model) == "bert"


def llama(model) -> bool:
    """The Llama layout (q/k/v/o projections, RoPE in every layer), pruned or not."""
    return of(model) == "llama"


def gpt2(model) -> bool:
    """GPT-2's layout (one fused c_attn, learned positions)."""
    return of(model) == "gpt2"


# Architectures whose attention the app cannot draw, read from the config fields that say so (the name only where no
# field does); which layers attend is models.layer_kinds'.
NO_SOFTMAX = ("yoso", "mra")  # attention approximated without softmax weights (hashing; multi-resolution blocks)
STATE_ON_MODULE = ("recurrent_gemma",)  # its recurrent blocks keep their state on the module while it writes
RECURRENT = ("rwkv",)         # a recurrence in every layer, no attention at all (its config has no field that says so)
EVERY_LAYER = "pick a model whose every layer attends, such as Llama, Qwen3 or Gemma 2"


def without_attention(cfg) -> list[str]:
    """The kinds of the config's layers that keep no attention weights, once each, from every per-layer field (a
    pattern shorter than the stack too: RecurrentGemma's block_types): ['linear_attention'] for a Qwen3-Next,
    ['mamba', 'linear_attention'] for a Jamba, ['conv'] for an LFM; [] if every layer attends. What a hybrid's
    notices name is not_attending's: one field, one kind per layer."""
    return list(dict.fromkeys(str(kind) for types in per_layer(cfg) for kind in types if not attends(kind)))


def not_attending(cfg) -> list[str]:
    """The kinds of a hybrid's layers that do not attend, once each, from layer_kinds: ['mamba'] for a Jamba,
    ['linear_attention', 'moe', 'mlp'] for a Nemotron-H (its MoE and MLP layers are layers of their own)."""
    return list(dict.fromkeys(str(kind) for kind in layer_kinds(cfg) or () if not attends(kind)))


def hybrid(model) -> bool:
    """Whether a loaded model is a hybrid shown by its attending layers alone (attending): Jamba, Qwen3-Next, LFM2."""
    cfg = getattr(model, "config", None)
    return cfg is not None and attending(cfg) is not None


def only_language(cfg) -> str | None:
    """The language to run a per-language-adapter model (X-MOD) in when its config names none but it holds one
    adapter alone ('en_XX'); None otherwise (the config's own default is kept, several languages are refused)."""
    languages = list(getattr(cfg, "languages", None) or ())
    if getattr(cfg, "default_language", "") is None and len(languages) == 1:
        return languages[0]
    return None


def refusal(cfg) -> str | None:
    """Why the app cannot draw this config's attention, as a sentence's end after the model's name ("has layers
    without attention weights (linear_attention), ...: pick ..."), or None when it can. Not decided
    here: families the app does not read as text at all (models.hf.common.family_of)."""
    mixers = without_attention(cfg)
    if model_type(SimpleNamespace(config=cfg)) in RECURRENT:
        return (f"mixes tokens by a recurrence in every layer (RWKV), which keeps no attention weights: {EVERY_LAYER}.")
    if model_type(SimpleNamespace(config=cfg)) in STATE_ON_MODULE:
        return ("keeps its recurrent layers' state on its own modules between tokens (RecurrentGemma), where a model "
                "shared by every visitor would mix their texts: pick a hybrid that keeps it in its cache, such as "
                "Jamba, Qwen3-Next or LFM2.")
    if mixers and not attending(cfg):  # a hybrid with some layers that attend is shown by those (attending)
        return (f"has no layer that attends (its layers are {', '.join(mixers)}), so it keeps no attention weights "
                f"to draw: {EVERY_LAYER}.")
    if getattr(cfg, "attention_window", None) is not None or getattr(cfg, "encoder_attention_type", None):
        return ("attends within local windows of tokens (Longformer, LED, LongT5) instead of each token to every "
                "token, so it has no token-by-token map to draw: pick a full-attention model such as RoBERTa, BART "
                "or T5.")
    if getattr(cfg, "attn_layers", None):
        return ("attends within chunks of tokens and buckets of hashed ones (Reformer) instead of each token to every "
                "token, so it has no token-by-token map to draw: pick a full-attention model such as BERT or GPT-2.")
    if getattr(cfg, "ngram", None):
        return ("predicts several future tokens at once through n-gram streams (ProphetNet), so its decoder's "
                "attention is not one map over the text's tokens: pick an encoder-decoder such as BART or T5.")
    if getattr(cfg, "num_latents", None):
        return ("reads its input through a fixed set of latent vectors (Perceiver), so its attention is between "
                "latents, not between the text's tokens: pick a text encoder such as BERT or RoBERTa.")
    if getattr(cfg, "num_global_tokens", None):
        return ("reads its input through global tokens and blocks of local attention (Pegasus-X), so it has no "
                "token-by-token map to draw: pick a full-attention encoder-decoder such as Pegasus or BART.")
    if getattr(cfg, "block_sizes", None) and getattr(cfg, "pooling_type", None):
        return ("pools its sequence between blocks (Funnel), so its later layers attend over fewer positions than "
                "the text has tokens: pick an encoder that keeps every token, such as BERT or ELECTRA.")
    if getattr(cfg, "attention_type", None) == "block_sparse":
        return ("uses BigBird's block-sparse attention, which returns no attention weights: set \"attention_type\": "
                "\"original_full\" in its config.json to see its full attention.")
    if getattr(cfg, "patcher_config", None) is not None and getattr(cfg, "global_config", None) is not None:
        return ("reads bytes through a local encoder, a global transformer over patches of bytes and a local decoder "
                "(BLT), so its attention is not one stack over the text's tokens: pick a decoder such as Llama or "
                "Qwen3.")
    if model_type(SimpleNamespace(config=cfg)) in NO_SOFTMAX:
        return ("approximates softmax attention without computing its weights (YOSO, MRA), so it has no map to "
                "draw: pick a softmax-attention encoder such as BERT or RoBERTa.")
    languages = list(getattr(cfg, "languages", None) or ())
    if getattr(cfg, "default_language", "") is None and len(languages) > 1:
        return (f"holds one adapter per language (X-MOD) and its config names none to run: add \"default_language\": "
                f"\"{languages[0]}\" (or another of its {len(languages)} languages) to its config.json.")
    return None
