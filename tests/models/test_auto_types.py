"""models.hf.families.auto_types: the architectures transformers' three text auto mappings name, the rows
models.supported() starts from (with families.FAMILIES) before auto_family drops what it does not read as text."""
from models.hf.families import auto_family, auto_types


def test_auto_types_are_the_text_mappings_architectures():
    types = auto_types()
    assert {"bert", "xlm-roberta", "opt", "llama", "gpt2", "mbart", "t5", "pegasus"} <= types  # masked, causal, s2s
    assert not {"vit", "deit", "clip", "wav2vec2"} & types   # only in image, speech or multimodal mappings
    assert "whisper" in types and auto_family("whisper") is None  # named by the seq2seq mapping, read as speech
    assert (auto_family("bert"), auto_family("opt"), auto_family("mbart")) == ("encoder", "decoder", "encoder-decoder")
