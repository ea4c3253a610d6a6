"""Tiny random Hugging Face models of every family the app loads, written to a folder as a user's would be.

`write(family, folder)` builds the family's model from a small config (2 layers, 4 heads, d_model 32,
fixed seed), saves it with save_pretrained (model.safetensors, config.json) beside a tokenizer made
offline with the `tokenizers` library (one token per character, the family's own special tokens and
template) or, for vision, an image processor. Nothing is downloaded and nothing is trained: the
weights are random, so what the models write means nothing; tests and the `families` benchmark use
them to check the loading and attention paths against the models' own outputs.

    write("llama", tmp_path / "llama")   # LlamaForCausalLM, 4 query heads sharing 2 key/value heads
    FAMILIES["t5"].kind                  # "encoder-decoder"
"""
from __future__ import annotations

import string
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

CHARS = string.ascii_letters + string.digits + string.punctuation + " "
SIZE = dict(layers=2, heads=4, d=32, ffn=64, positions=320)


@dataclass(frozen=True)
class Family:
    kind: str          # "encoder", "decoder", "encoder-decoder" or "vision"
    specials: tuple    # special tokens, in id order before the characters
    template: str      # the tokenizer's single-sequence template ("" for none)
    build: Callable    # (vocab_size, ids of specials, SIZE) -> a transformers model with random weights


def _tokenizer(family: Family, positions: int | None = None):
    """A PreTrainedTokenizerFast reading one character per token, with the family's specials and template, for a model
    of `positions` positions (SIZE's by default)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {tok: i for i, tok in enumerate([*family.specials, *CHARS])}
    unk = next(t for t in family.specials if "unk" in t.lower() or t == "<|endoftext|>")
    tok = Tokenizer(models.WordLevel(vocab, unk_token=unk))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()
    if family.template:
        pair = family.template.replace("$A", "$A $B:1") if "[SEP]" not in family.template \
            else "[CLS] $A [SEP] $B:1 [SEP]:1"
        tok.post_processor = processors.TemplateProcessing(
            single=family.template, pair=pair,
            special_tokens=[(t, vocab[t]) for t in family.specials if t in family.template])
    roles = {"[PAD]": "pad_token", "<pad>": "pad_token", "[UNK]": "unk_token", "<unk>": "unk_token",
             "[CLS]": "cls_token", "[SEP]": "sep_token", "[MASK]": "mask_token", "<mask>": "mask_token",
             "<s>": "bos_token", "</s>": "eos_token"}
    named = {roles[t]: t for t in family.specials if t in roles}
    if "<|endoftext|>" in family.specials:
        named = dict(bos_token="<|endoftext|>", eos_token="<|endoftext|>", unk_token="<|endoftext|>")
    return PreTrainedTokenizerFast(tokenizer_object=tok, model_max_length=positions or SIZE["positions"], **named)


def _encoder(config_cls: str, model_cls: str, **extra) -> Callable:
    def build(vocab: int, ids: dict, size: dict):
        import transformers

        cfg = getattr(transformers, config_cls)(
            vocab_size=vocab, hidden_size=size["d"], num_hidden_layers=size["layers"],
            num_attention_heads=size["heads"], intermediate_size=size["ffn"],
            max_position_embeddings=size["positions"], pad_token_id=ids.get("[PAD]", ids.get("<pad>", 0)), **extra)
        return getattr(transformers, model_cls)(cfg)
    return build


def _distilbert(vocab: int, ids: dict, size: dict):
    from transformers import DistilBertConfig, DistilBertForMaskedLM

    return DistilBertForMaskedLM(DistilBertConfig(
        vocab_size=vocab, dim=size["d"], n_layers=size["layers"], n_heads=size["heads"], hidden_dim=size["ffn"],
        max_position_embeddings=size["positions"], pad_token_id=ids["[PAD]"]))


def _gpt2(vocab: int, ids: dict, size: dict):
    from transformers import GPT2Config, GPT2LMHeadModel

    eot = ids["<|endoftext|>"]
    return GPT2LMHeadModel(GPT2Config(vocab_size=vocab, n_embd=size["d"], n_layer=size["layers"],
                                      n_head=size["heads"], n_positions=size["positions"],
                                      bos_token_id=eot, eos_token_id=eot))


def _gpt_neox(vocab: int, ids: dict, size: dict):
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    eot = ids["<|endoftext|>"]
    return GPTNeoXForCausalLM(GPTNeoXConfig(
        vocab_size=vocab, hidden_size=size["d"], num_hidden_layers=size["layers"], num_attention_heads=size["heads"],
        intermediate_size=size["ffn"], max_position_embeddings=size["positions"], rotary_pct=0.5,
        bos_token_id=eot, eos_token_id=eot))


def _llama_like(config_cls: str, model_cls: str, **extra) -> Callable:
    def build(vocab: int, ids: dict, size: dict):
        import transformers

        cfg = getattr(transformers, config_cls)(
            vocab_size=vocab, hidden_size=size["d"], num_hidden_layers=size["layers"],
            num_attention_heads=size["heads"], num_key_value_heads=2, intermediate_size=size["ffn"],
            max_position_embeddings=size["positions"], bos_token_id=ids["<s>"], eos_token_id=ids["</s>"],
            pad_token_id=ids["<pad>"], tie_word_embeddings=False, **extra)
        return getattr(transformers, model_cls)(cfg)
    return build


def _t5(vocab: int, ids: dict, size: dict):
    from transformers import T5Config, T5ForConditionalGeneration

    return T5ForConditionalGeneration(T5Config(
        vocab_size=vocab, d_model=size["d"], d_kv=size["d"] // size["heads"], d_ff=size["ffn"],
        num_layers=size["layers"], num_decoder_layers=size["layers"], num_heads=size["heads"],
        pad_token_id=ids["<pad>"], eos_token_id=ids["</s>"], decoder_start_token_id=ids["<pad>"]))


def _bart_like(config_cls: str, model_cls: str, start: str) -> Callable:
    def build(vocab: int, ids: dict, size: dict):
        import transformers

        cfg = getattr(transformers, config_cls)(
            vocab_size=vocab, d_model=size["d"], encoder_layers=size["layers"], decoder_layers=size["layers"],
            encoder_attention_heads=size["heads"], decoder_attention_heads=size["heads"],
            encoder_ffn_dim=size["ffn"], decoder_ffn_dim=size["ffn"], max_position_embeddings=size["positions"],
            pad_token_id=ids["<pad>"], eos_token_id=ids["</s>"], bos_token_id=ids.get("<s>", ids["<pad>"]),
            decoder_start_token_id=ids[start], forced_eos_token_id=None)
        if config_cls == "MarianConfig":
            cfg.decoder_vocab_size = vocab
        return getattr(transformers, model_cls)(cfg)
    return build


def _vision(config_cls: str, model_cls: str) -> Callable:
    def build(vocab: int, ids: dict, size: dict, image_size: int = 8):
        import transformers

        cfg = getattr(transformers, config_cls)(
            image_size=image_size, patch_size=2, num_channels=1, hidden_size=size["d"],
            num_hidden_layers=size["layers"], num_attention_heads=size["heads"], intermediate_size=size["ffn"],
            num_labels=10)
        return getattr(transformers, model_cls)(cfg)
    return build


BERT_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
BERT_TEMPLATE = "[CLS] $A [SEP]"
ROBERTA_SPECIALS = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")
FAMILIES: dict[str, Family] = {
    "bert": Family("encoder", BERT_SPECIALS, BERT_TEMPLATE, _encoder("BertConfig", "BertForMaskedLM")),
    "roberta": Family("encoder", ROBERTA_SPECIALS, "<s> $A </s>", _encoder("RobertaConfig", "RobertaModel")),
    "distilbert": Family("encoder", BERT_SPECIALS, BERT_TEMPLATE, _distilbert),
    "electra": Family("encoder", BERT_SPECIALS, BERT_TEMPLATE,
                      _encoder("ElectraConfig", "ElectraModel", embedding_size=16)),
    "albert": Family("encoder", BERT_SPECIALS, BERT_TEMPLATE, _encoder("AlbertConfig", "AlbertModel",
                                                                       embedding_size=16)),
    "deberta-v2": Family("encoder", BERT_SPECIALS, BERT_TEMPLATE, _encoder(
        "DebertaV2Config", "DebertaV2Model", relative_attention=True, pos_att_type=["c2p", "p2c"],
        position_buckets=32, max_relative_positions=-1)),
    "gpt2": Family("decoder", ("<|endoftext|>",), "", _gpt2),
    "gpt-neox": Family("decoder", ("<|endoftext|>",), "", _gpt_neox),
    "llama": Family("decoder", ("<pad>", "<s>", "</s>", "<unk>"), "<s> $A",
                    _llama_like("LlamaConfig", "LlamaForCausalLM")),
    "mistral": Family("decoder", ("<pad>", "<s>", "</s>", "<unk>"), "<s> $A",
                      _llama_like("MistralConfig", "MistralForCausalLM", sliding_window=None)),
    "qwen2": Family("decoder", ("<pad>", "<s>", "</s>", "<unk>"), "",
                    _llama_like("Qwen2Config", "Qwen2ForCausalLM")),
    "t5": Family("encoder-decoder", ("<pad>", "</s>", "<unk>"), "$A </s>", _t5),
    "bart": Family("encoder-decoder", ROBERTA_SPECIALS, "<s> $A </s>",
                   _bart_like("BartConfig", "BartForConditionalGeneration", "</s>")),
    "marian": Family("encoder-decoder", ("<pad>", "</s>", "<unk>"), "$A </s>",
                     _bart_like("MarianConfig", "MarianMTModel", "<pad>")),
    "vit": Family("vision", (), "", _vision("ViTConfig", "ViTForImageClassification")),
    "deit": Family("vision", (), "", _vision("DeiTConfig", "DeiTForImageClassification")),
}


def write(name: str, folder: Path | str, seed: int = 0, image_size: int = 8, **size: int) -> Path:
    """Build family `name` with random weights from `seed` and save it, with its tokenizer or image processor
    (vision: one channel of image_size² pixels in 0..16, as scikit-learn's digits, cut into 2×2 patches).
    `size` overrides SIZE's entries: write("gpt2", folder, layers=1, positions=64)."""
    import torch

    unknown = set(size) - set(SIZE)
    if unknown:
        raise ValueError(f"write() sizes are {sorted(SIZE)}, not {sorted(unknown)}")
    family, folder, size = FAMILIES[name], Path(folder), {**SIZE, **size}
    torch.manual_seed(seed)
    if family.kind == "vision":
        from transformers import ViTImageProcessorPil

        model = family.build(0, {}, size, image_size)
        size = {"height": image_size, "width": image_size}
        ViTImageProcessorPil(do_resize=True, size=size, rescale_factor=1 / 16,
                             image_mean=[0.5], image_std=[0.5]).save_pretrained(folder)
    else:
        tok = _tokenizer(family, size["positions"])
        model = family.build(len(tok), {t: tok.convert_tokens_to_ids(t) for t in family.specials}, size)
        tok.save_pretrained(folder)
    model.eval().save_pretrained(folder)
    return folder
