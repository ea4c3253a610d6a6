"""Which family a model type is, read from transformers' auto mappings, and the language model inside a model of text
and other inputs (Gemma 3, LLaVA, Voxtral), which is read alone as a decoder of text. It loads no weights and reads no
folder: models.hf.common does, asking this module what a config is.

    auto_family("opt")                       # "decoder"
    text_part(AutoConfig.from_pretrained("./my-gemma3")).model_type   # "gemma3_text"
"""
from __future__ import annotations

import os

# config.model_type -> family; the names in SUPPORTED say the same in words
FAMILIES = {
    "bert": "encoder", "roberta": "encoder", "distilbert": "encoder", "electra": "encoder", "albert": "encoder",
    "deberta-v2": "encoder",
    "gpt2": "decoder", "gpt_neox": "decoder", "llama": "decoder", "mistral": "decoder", "qwen2": "decoder",
    "t5": "encoder-decoder", "bart": "encoder-decoder", "marian": "encoder-decoder",
    "vit": "vision", "deit": "vision",
}
SUPPORTED = ("text encoders, decoders and encoder-decoders that transformers builds without remote code (BERT, "
             "GPT-2, Llama, OPT, Gemma, T5, mBART and the rest) and vision transformers (ViT, DeiT)")
# transformers' auto mappings that give any other text architecture its family, first match wins (mBART is in all
# three); multimodal and speech architectures, though some are in these mappings, are not read as text models
_AUTO = (("MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES", "encoder-decoder"),
         ("MODEL_FOR_MASKED_LM_MAPPING_NAMES", "encoder"), ("MODEL_FOR_CAUSAL_LM_MAPPING_NAMES", "decoder"))
_NOT_TEXT = ("MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES", "MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES",
             "MODEL_FOR_VISION_2_SEQ_MAPPING_NAMES", "MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES",
             "MODEL_FOR_AUDIO_CLASSIFICATION_MAPPING_NAMES", "MODEL_FOR_CTC_MAPPING_NAMES")


def auto_types() -> set[str]:
    """Every architecture transformers' text auto mappings name (seq2seq LM, masked LM, causal LM), whether or not
    auto_family reads it as text, and the causal LMs of text alone only other mappings name (Mistral 4): {'bert',
    'opt', 'mbart', ...}."""
    from transformers.models.auto import modeling_auto

    named = {model_type for name, _ in _AUTO for model_type in getattr(modeling_auto, name, {})}
    return named | {t for name in _NOT_TEXT for t in getattr(modeling_auto, name, {}) if _text_alone(t)}  # Mistral 4


def auto_family(model_type: str) -> str | None:
    """The family transformers' auto mappings give a text architecture ('opt' -> 'decoder', 'mbart' ->
    'encoder-decoder'), None for one they do not build as text (multimodal, speech) or do not know."""
    from transformers import CONFIG_MAPPING
    from transformers.models.auto import modeling_auto

    if any(model_type in getattr(modeling_auto, name, {}) for name in _NOT_TEXT) and not _text_alone(model_type):
        return None
    subs = getattr(CONFIG_MAPPING[model_type], "sub_configs", None) or {} if model_type in CONFIG_MAPPING else {}
    if any(k.startswith(("audio", "vision", "speech")) for k in subs):  # e.g. Audio Flamingo: not in _NOT_TEXT
        return None
    if not has_attention(model_type):  # a state-space or Fourier model (Mamba, xLSTM, FNet): no weights to show
        return None
    found = next((family for name, family in _AUTO if model_type in getattr(modeling_auto, name, {})), None)
    return found or ("decoder" if _text_alone(model_type) else None)


def _text_alone(model_type: str) -> bool:
    """Whether the not-text mappings that name an architecture build it as a causal LM of text alone, a config with
    no other inputs (Mistral 4: its image-text-to-text class is Mistral4ForCausalLM, the language model Mistral 3's
    checkpoints hold, and transformers' causal-LM mapping leaves it out)."""
    from transformers import CONFIG_MAPPING
    from transformers.models.auto import modeling_auto

    if model_type not in CONFIG_MAPPING or getattr(CONFIG_MAPPING[model_type], "sub_configs", None):
        return False  # Fuyu's FuyuForCausalLM reads images too: its text_config is read alone (text_part)
    named = [getattr(modeling_auto, name, {}).get(model_type) for name in _NOT_TEXT]
    return any(named) and all(n.endswith("ForCausalLM") for n in named if n)


def causal_lm_class(model_type: str) -> str | None:
    """The name of transformers' causal-LM class for an architecture (BART, Marian and mBART have one beside their
    encoder-decoders; Mistral 4's is named only by the image-text-to-text mapping), None where it has none."""
    from transformers.models.auto import modeling_auto

    if model_type in modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES[model_type]
    return modeling_auto.MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES[model_type] if _text_alone(model_type) else None


def causal_lm(model_type: str) -> bool:
    """Whether transformers builds a causal LM of the architecture (causal_lm_class)."""
    return causal_lm_class(model_type) is not None


def modeling_source(model_type: str) -> str:
    """The text of transformers' modeling file for an architecture ('' if it has none); read, never imported."""
    import transformers
    from transformers.models.auto.configuration_auto import model_type_to_module_name

    module = model_type_to_module_name(model_type)
    path = os.path.join(os.path.dirname(transformers.__file__), "models", module, f"modeling_{module}.py")
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return ""


def has_attention(model_type: str) -> bool:
    """Whether the architecture computes attention weights the app can read: through transformers' attention
    registry or returned as `attentions`. An architecture without a modeling file of its own (a variant of
    another) counts as having them."""
    text = modeling_source(model_type)
    return not text or "ALL_ATTENTION_FUNCTIONS" in text or "attentions" in text


# where a model of text and images or sound keeps its language model's weights: transformers 5's layout
# (model.language_model.*, with lm_head.* at the top) and the older one (language_model.model.*, its lm_head.*)
TEXT_PART = {r"^model\.language_model\.": "model.", r"^language_model\.model\.": "model.",
             r"^language_model\.lm_head\.": "lm_head."}


WRITES = ("ForConditionalGeneration", "ForCausalLM")  # the whole model's classes whose language model writes text


def _others(parts) -> str:
    """What of a model of text and other inputs is not loaded, from its sub-configs: 'vision and audio parts'."""
    keys = [k for k in parts if k != "text_config"]
    words = [w for w, marks in (("vision", ("vision", "image", "vq")), ("audio", ("audio", "acoustic", "speech",
                                                                                  "semantic")))
             if any(m in k for k in keys for m in marks)]
    return f"{' and '.join(words) or 'other'} parts"


def whole_of(cfg) -> tuple[str, str] | None:
    """(the whole model's type, what of it is not loaded) that text_part marked on `cfg`, taken off it so that they
    are never saved with the model (a pruned export); None for a config it did not mark."""
    marks = cfg.__dict__.pop("text_part_of", None), cfg.__dict__.pop("other_parts", None)
    return marks if marks[0] else None


def text_part(cfg):
    """The config of the language model inside a model of text and images or sound (Gemma 3's gemma3_text, LLaVA's
    and Voxtral's llama), when it is a decoder this app reads: marked `text_part_of` (the outer model type) and
    `other_parts` (what is not loaded), named as its causal LM and tied as the whole model is, so that it is loaded
    alone from the folder's weights (pretrained) and read as text; None for any other config."""

    inner, outer = getattr(cfg, "text_config", None), getattr(cfg, "model_type", "") or ""
    kind = getattr(inner, "model_type", None)
    if not kind or outer in FAMILIES or auto_family(outer) is not None or auto_family(kind) != "decoder":
        return None
    if not all(a.endswith(WRITES) for a in cfg.architectures or ()):  # a classifier's head would be lost unsaid
        return None
    inner.text_part_of = outer
    inner.other_parts = _others(getattr(cfg, "sub_configs", None) or {})
    inner.architectures = [causal_lm_class(kind)]
    if getattr(cfg, "tie_word_embeddings", None) is not None:  # the whole model's say: its unembedding is tied
        inner.tie_word_embeddings = cfg.tie_word_embeddings
    return inner
