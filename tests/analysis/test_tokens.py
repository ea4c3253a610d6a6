import re

from tokenizers import Tokenizer, pre_tokenizers

import models
from analysis.tokens import byte_decoder, readable, readable_all, show_whitespace


def test_byte_table_is_gpt2s():
    assert set(byte_decoder()) == set(pre_tokenizers.ByteLevel.alphabet())
    assert sorted(byte_decoder().values()) == list(range(256))


def test_the_built_in_gpts_tokens_read_as_the_text_they_spell():
    tok = Tokenizer.from_file(str(models.builtin_folder("gpt") / "tokenizer.json"))
    text = "The river bank\nwas dirty, naïve café 👍\tdone"
    enc = tok.encode(text, add_special_tokens=False)
    assert any(t.startswith("Ġ") for t in enc.tokens) and "Ċ" in "".join(enc.tokens)  # what it wrote
    labels = readable_all(enc.tokens)
    assert not any(ch in "".join(labels) for ch in "ĠĊĉ")
    # a character cut between tokens shows its bytes ('\\xc3'); read back, the labels are the text, whitespace shown
    joined = re.sub(rb"\\x([0-9a-f]{2})", lambda m: bytes([int(m[1], 16)]), "".join(labels).encode())
    assert joined == show_whitespace(text).encode()
    assert "\\x" in "".join(labels)  # this small vocabulary has no merge for ï, é or the emoji


def test_a_token_alone_reads_by_itself():
    assert readable("Ġbank") == "␣bank" and readable("Ã") == "Ã"  # without its neighbours 'Ã' may be a letter


def test_labels_of_each_notation():
    assert readable_all(["<s>", "The", "Ġb", "an", "k", "Ċ", "ĠcafÃ©"]) == ["<s>", "The", "␣b", "an", "k", "⏎", "␣café"]
    assert readable("▁cat") == "␣cat" and readable(" ") == "␣" and readable("\n") == "⏎" and readable("") == ""
    assert readable("ĉ") == "⇥" and readable("\x07") == "\\x07"


def test_wordpiece_and_accented_tokens_stay_as_written():
    for token in ["[CLS]", "##ing", "é", "ł", "ę", "č", "ąc", "naïve", "中文", "Ã"]:
        assert readable(token) == token, token
