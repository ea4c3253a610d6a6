"""Tiny random models of any architecture in transformers' auto mappings, built offline for the tests and the families
bench: a small config (2 layers, hidden 32, 4 heads over 2 key/value heads), random weights from a fixed seed, and a
one-character-a-token tokenizer made with the `tokenizers` library, saved together so models.load("hf:" + folder)
reads them.

    model = build("gemma2", "causal")          # eager attention, eval mode
    folder = save("opt", "causal", tmp_path)   # model.safetensors, config.json, tokenizer.json
"""
from __future__ import annotations

import string
from pathlib import Path

import torch

SMALL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, intermediate_size=48,
             moe_intermediate_size=48,
             max_position_embeddings=64, head_dim=8, d_model=32, encoder_layers=2, decoder_layers=2,
             encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=37, decoder_ffn_dim=37, n_embd=32,
             n_layer=2, n_head=4, num_layers=2, num_heads=4, d_ff=37, d_kv=8, sliding_window=3, n_positions=64,
             pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1, unk_token_id=3,
             mask_token_id=4)
# a real checkpoint's sizes: an MoE's grouped matmul wants each expert's rows a multiple of 16 bytes (so 48, not an
# odd 37, for the intermediate size the experts share); multi-head latent attention (DeepSeek-V2/V3, MiniCPM3,
# GLM-4-MoE-Lite) splits each head into a rotary and a plain part, its head_dim the rotary part's, and gives every head
# its own key and value (key/value heads = heads)
MLA = dict(qk_rope_head_dim=4, qk_nope_head_dim=4, v_head_dim=8, kv_lora_rank=16, q_lora_rank=16, head_dim=4,
           num_key_value_heads=4)
# what one family needs beyond SMALL: partial rotary within our 8-wide head (GPT-J, CodeGen), the decoder's first
# token that every T5 checkpoint's config carries (its pad, 0), the experts a DeepSeek-V2 token goes to (its config's
# default is None where every checkpoint names them), embeddings and bottlenecks no wider than the hidden size
# (SqueezeBERT, MobileBERT), Reformer's axial positions summing to the hidden size, LFM2-MoE's layer kinds (None by
# default, a conv layer first in every checkpoint), a hybrid's layer that attends within its 2 layers
FAMILY = {"gptj": dict(rotary_dim=4), "codegen": dict(rotary_dim=4), "deepseek_v2": dict(num_experts_per_tok=2),
          "gpt_neo": dict(attention_types=[[["global", "local"], 1]], window_size=3),
          **{t: dict(decoder_start_token_id=0) for t in ("t5", "longt5", "switch_transformers")},
          "squeezebert": dict(embedding_size=32),
          "mobilebert": dict(embedding_size=16, intra_bottleneck_size=16, true_hidden_size=16),
          "reformer": dict(is_decoder=True, axial_pos_embds_dim=[16, 16], axial_pos_shape=[8, 8], attention_head_size=8,
                           local_attn_chunk_length=8, lsh_attn_chunk_length=8, num_buckets=2),
          "lfm2_moe": dict(layer_types=["conv", "full_attention"]),
          # hybrids whose default pattern attends only from a fourth layer on: one layer of each kind
          **{t: dict(layer_types=["linear_attention", "full_attention"]) for t in (
              "qwen3_next", "qwen3_5_text", "qwen3_5_moe_text", "kimi_linear", "bailing_hybrid")},
          # Qwen4-exp's token indexer (QSA), which has no default budget: 16 tokens, compressed in blocks of 4
          "qwen4_exp_text": dict(layer_types=["linear_attention", "full_attention"], indexer_n_heads=2,
                                 indexer_kv_heads=1, indexer_head_dim=8, indexer_budget=16, indexer_compress_ratio=4),
          "neomme": dict(head_dim=16),  # a quarter of each head rotated on its full layers: at least 2 pairs
          "esmc": dict(num_key_value_heads=4),  # ESM C has no key/value groups
          "mamba2": dict(head_dim=16),  # its heads span the expanded width: 4 heads × 16 = 2 × 32
          "lfm3": dict(layer_types=["conv", "full_attention"]), "jamba": dict(attn_layer_period=2, attn_layer_offset=1),
          "recurrent_gemma": dict(block_types=["recurrent", "attention"]),
          "bamba": dict(attn_layer_indices=[1], mamba_n_heads=4),
          "granitemoehybrid": dict(layer_types=["mamba", "attention"], mamba_n_heads=4),
          "minimax": dict(sliding_window=None),  # as its checkpoint: else every layer is windowed, whatever its kind
          # sizes whose defaults are None or sized for the full model: DBRX's attention and experts (its q/k/v
          # clipped, as its checkpoints are), Dots1's experts, Cohere Compass's RoPE per layer kind, Gemma 3n's
          # per-layer inputs without layers sharing another's cache, Zamba's shared attention block in two layers
          "dbrx": dict(attn_config=dict(kv_n_heads=2, rope_theta=10000.0, clip_qkv=8.0), n_layers=2, d_model=32,
                       ffn_config=dict(ffn_hidden_size=48, moe_num_experts=4, moe_top_k=2), n_heads=4),
          "dots1": dict(n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1),
          "cohere_compass_text": dict(rope_parameters={kind: dict(rope_type="default", rope_theta=10000.0)
                                                       for kind in ("full_attention", "sliding_attention")}),
          "gemma3n_text": dict(num_kv_shared_layers=0, layer_types=["sliding_attention", "full_attention"],
                               activation_sparsity_pattern=[0.0, 0.0], laurel_rank=4, hidden_size_per_layer_input=8),
          "zamba": dict(layers_block_type=["mamba", "hybrid", "hybrid"], num_hidden_layers=3),
          "zamba2": dict(layers_block_type=["mamba", "hybrid", "hybrid"], num_hidden_layers=3, hybrid_layer_ids=[1, 2])}
SPECIALS = ["<pad>", "<s>", "</s>", "<unk>", "<mask>"]
CHARS = list(string.ascii_letters + string.digits + string.punctuation + " ")
VOCAB = len(SPECIALS) + len(CHARS)
KINDS = {"causal": "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES", "masked": "MODEL_FOR_MASKED_LM_MAPPING_NAMES",
         "seq2seq": "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES",
         "classifier": "MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES"}


def model_class(model_type: str, kind: str):
    """transformers' class of this kind for the architecture; a causal LM's as models.hf.families names it (Mistral
    4's, which the causal-LM mapping leaves out)."""
    import transformers
    from transformers.models.auto import modeling_auto

    from models.hf import families

    if kind == "causal":
        return getattr(transformers, families.causal_lm_class(model_type))
    return getattr(transformers, getattr(modeling_auto, KINDS[kind])[model_type])


def config(model_type: str, **extra):
    """The small config of `model_type` (no weights)."""
    from transformers import CONFIG_MAPPING

    cls = CONFIG_MAPPING[model_type]
    if model_type == "encoder-decoder":  # EncoderDecoderModel joins two models' configs: bert2bert, as its docs build
        return cls.from_encoder_decoder_configs(config("bert"), config("bert", is_decoder=True,
                                                                       add_cross_attention=True),
                                                **{k: SMALL[k] for k in ("pad_token_id", "decoder_start_token_id",
                                                                         "eos_token_id")}, **extra)
    known = cls()  # only the sizes this family has (OPT has no key/value groups); none it derives (Falcon's head_dim)
    sizes = {k: v for k, v in SMALL.items() if _has(known, k) and not isinstance(getattr(cls, k, None), property)}
    if hasattr(known, "qk_rope_head_dim"):
        sizes.update(MLA)
    sizes.update(FAMILY.get(model_type, {}))
    sizes.update(_parts(known))
    return cls(**{**sizes, "vocab_size": VOCAB, **extra})


def _has(known, name: str) -> bool:
    """Whether a config has the field; one that varies per layer (Gemma 4's head_dim) answers by raising."""
    try:
        return hasattr(known, name)
    except Exception:  # noqa: BLE001 (transformers' AmbiguousGlobalPerLayerAttributeError: a field, set per layer)
        return True


def _parts(known) -> dict:
    """An image-text model's sub-configs, small: its language model's as config() makes that type's, every other
    part (vision, audio) with the sizes of SMALL it has (they are built, never run on text); an encoder-decoder's two
    halves, small, where each is one stack of layers."""
    parts, keys = {}, getattr(known, "sub_configs", None) or {}
    if "text_config" not in keys:
        # an encoder-decoder's two halves, each one stack of layers (T5Gemma's), with the sizes of SMALL they have and
        # their layer kinds derived again from the layers' count; T5Gemma 2's halves (its encoder reads text and
        # images) and other parts (DBRX's attention and MLP configs) keep their defaults
        halves = [getattr(known, key, None) for key in ("encoder", "decoder")]
        if set(keys) == {"encoder", "decoder"} and not any(getattr(h, "sub_configs", None) for h in halves):
            for key, part in zip(("encoder", "decoder"), halves):
                small = {k: v for k, v in SMALL.items() if hasattr(part, k)}
                parts[key] = {k: v for k, v in {**part.to_dict(), **small, "vocab_size": VOCAB}.items()
                              if k != "layer_types"}
        return parts
    for key in keys:
        part = getattr(known, key, None)
        kind = getattr(part, "model_type", None)
        if part is None or not kind:
            continue
        if key == "text_config":
            parts[key] = config(kind).to_dict()
        else:  # a convolution stack (VibeVoice's audio tokenizers) with one block a stage and few filters
            small = {k: v for k, v in SMALL.items() if hasattr(part, k)
                     and k not in ("pad_token_id", "bos_token_id", "eos_token_id")}
            if isinstance(getattr(part, "depths", None), (list, tuple)):
                small.update(depths=[1] * len(part.depths), num_filters=min(4, getattr(part, "num_filters", 4)))
            parts[key] = {**part.to_dict(), **small}
    return parts


def build(model_type: str, kind: str, seed: int = 0, **extra):
    """A tiny random `kind` model of `model_type` with eager attention."""
    cfg, cls = config(model_type, **extra), model_class(model_type, kind)
    if not isinstance(cfg, cls.config_class) and isinstance(getattr(cfg, "text_config", None), cls.config_class):
        cfg = cfg.text_config  # the causal LM of an image-text type is its language model's (Llama 4, Qwen3.5)
    torch.manual_seed(seed)
    return cls._from_config(cfg, attn_implementation="eager").eval()


def tokenizer():
    """One character a token, '<s>' ... '</s>' around a text."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {tok: i for i, tok in enumerate([*SPECIALS, *CHARS])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()
    tok.post_processor = processors.TemplateProcessing(single="<s> $A </s>", pair="<s> $A </s> $B:1 </s>:1",
                                                       special_tokens=[("<s>", 1), ("</s>", 2)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, model_max_length=64, pad_token="<pad>", bos_token="<s>",
                                   eos_token="</s>", unk_token="<unk>", mask_token="<mask>")


def save(model_type: str, kind: str, folder: Path, **extra) -> str:
    """build() saved with tokenizer() in `folder`; returns the folder as a string."""
    model = build(model_type, kind, **extra)
    model.save_pretrained(folder)
    tokenizer().save_pretrained(folder)
    return str(folder)
