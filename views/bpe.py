"""BPE merges, step by step: train BPE on a corpus, read its merge table, replay it on a sentence,
and compare the result with BERT's WordPiece and with plain characters."""
from __future__ import annotations

import inspect

import streamlit as st

import limits
from analysis import bpe, bpe_teaching
from data.text import read_text, read_upload
from limits.errors import UserError
from ui.runtime import cache
from ui.show import explain, figure, plot
from ui.state import clamp, selection
from viz import bpe as vbpe

REPLAY_CHARS = 120  # the replayed text: beyond this the merge ladder is too dense to read
LADDER_ROWS = 12  # merge steps drawn at once: 120 characters take ~40 steps, ~2,700 boxes the browser must lay out
ALPHABET_LABELS = {"characters": "Characters (explicit alphabet)", "bytes": "Bytes (GPT-2 byte-level)"}
# kept per corpus (a tuple of documents): the smallest vocabulary, the tokenizer with its merge table, word counts
smallest_vocab, corpus_words = cache.memo("results")(bpe.min_vocab_size), cache.memo("results")(bpe.word_counts)
trained = cache.memo("results", spinner="Training BPE…")(bpe.trained)
wordpiece = cache.memo("models")(bpe.minilm_wordpiece)


st.title("BPE merges, step by step")
explain(
    "Byte pair encoding starts from single symbols and, again and again, glues the pair that stands "
    "side by side most often in the corpus into one new token. The merges, in the order they were "
    "learned, are the tokenizer: to encode a word, apply them in that order. Words are split at "
    "spaces and punctuation first, so no token crosses a word boundary.\n\n"
    "**Characters** uses an explicit alphabet, the corpus's own characters (NFC-normalised, so `é` is "
    "one character): readable tokens, but a character the corpus never had (an emoji) becomes `[UNK]`. "
    "**Bytes** starts from all 256 bytes, as GPT-2 does: every text encodes, an accented letter or an "
    "emoji is two to four bytes until merges join them, and a leading space is part of the token. GPT-2's "
    "tokenizer writes that space `Ġ` and a newline `Ċ` (a printable stand-in for each byte); this app shows "
    "them as `␣` and `⏎` here and in every other view.\n\n"
    "The code below is the whole trainer in plain Python; tests check its merges equal the `tokenizers` library's.",
    r"(a,b)^\star = \arg\max_{(a,b)} \sum_{w} n_w \,\big|\{i : w_i = a,\ w_{i+1} = b\}\big|"
    r"\quad\text{ties: lowest token ids}",
    inspect.getsource(bpe_teaching),
)

left, right = st.columns(2)
source = left.radio("Corpus", ["Built-in", "Paste", "Upload"], horizontal=True, key="bpe_source", bind="query-params")
alphabet = right.radio("Alphabet", bpe.ALPHABETS, format_func=ALPHABET_LABELS.get, horizontal=True,
                       key="bpe_alphabet", bind="query-params",
                       help="Characters: readable, unknown characters become [UNK]. "
                       "Bytes: any text, emoji split into byte pieces.")
notice, caps = None, limits.current()
if source == "Built-in":
    corpus = bpe.builtin_corpus()
    st.caption(f"A {bpe.BUILTIN.stat().st_size:,}-byte story about a river town, written for this app "
               "(see analysis/corpus/README.md). It has accented letters but no emoji.")
elif source == "Paste":
    pasted = st.text_area("Corpus text",
                          key="bpe_paste", bind="query-params", height=150, placeholder="Paste a few paragraphs…")
    corpus, notice = read_text(pasted, caps.bpe_corpus_bytes)
else:
    upload = st.file_uploader(f"A UTF-8 .txt file (the first {caps.bpe_corpus_bytes:,} bytes are used)",
                              type=["txt"], key="bpe_upload")
    if upload is None:
        st.info("Upload a plain-text file to train on it.")
        st.stop()
    try:
        corpus, notice = read_upload(upload.getvalue(), caps.bpe_corpus_bytes)
    except UserError as err:
        st.error(str(err))
        st.stop()
if notice:
    st.warning(notice)
if not any(line.strip() for line in corpus):
    st.info("The corpus is empty: pick the built-in corpus, paste some text or upload a .txt file.")
    st.stop()

corpus = tuple(corpus)
lo = smallest_vocab(corpus, alphabet)
clamp("bpe_vocab", lo, lo + caps.bpe_extra_vocab)
vocab_size = st.slider("Vocabulary size", lo, lo + caps.bpe_extra_vocab, lo + 300, step=10, key="bpe_vocab",
                       bind="query-params",
                       help=f"At least the alphabet ({lo} symbols): a smaller vocabulary "
                       "could not write every corpus symbol.")
try:
    tok, table = trained(corpus, vocab_size, alphabet)
except UserError as err:
    st.error(str(err))
    st.stop()
if len(table) < vocab_size - lo:
    st.caption(f"Only {len(table)} merges were possible: after them every corpus word is a single token.")

st.header(f"Merge table: {len(table):,} rules, learned (and applied) in this order")
col_table, col_plot = st.columns([3, 2])
col_table.dataframe(bpe.merge_rows(table, alphabet), hide_index=True, height=300, width="stretch")
with col_plot:
    plot(figure(vbpe.pair_counts, table, alphabet), "bpe_pair_counts", key="bpe_pair_counts")

st.header("Replay the merges")
sidebar_text = selection().text
text = st.text_input("Word or sentence", value=sidebar_text[:REPLAY_CHARS], max_chars=REPLAY_CHARS, key="bpe_text",
                     bind="query-params", help=f"Up to {REPLAY_CHARS} characters: the ladder draws every merge.")
if len(sidebar_text) > REPLAY_CHARS and text == sidebar_text[:REPLAY_CHARS]:
    st.info(f"The sidebar's text has {len(sidebar_text):,} characters; the replay takes its first {REPLAY_CHARS}, "
            "so that every merge stays readable. Type or paste another part here.")
if not text.strip():
    st.info("Type a word or a sentence to replay the merges on it.")
    st.stop()
unknown = bpe.unknown_characters(tok, text)
if unknown:
    st.warning(f"Not in this corpus's alphabet, so written [UNK]: {' '.join(unknown)}. "
               "Switch the alphabet to Bytes to encode any text.")
steps = bpe.merge_trace(tok, text)
if len(steps) == 1:
    st.caption("No merge rule applies: every symbol stays on its own.")
    current = 0
else:
    clamp("bpe_step", 0, len(steps) - 1)
    current = st.slider("Step", 0, len(steps) - 1, len(steps) - 1, key="bpe_step", bind="query-params")
step = steps[current]
if step.rank is not None:
    st.markdown(f"**Step {current}**: rule {vbpe.rule_label(table[step.rank], alphabet)} fired "
                f"{len(step.merged)} time(s); {len(step.tokens)} tokens now.")
first = max(1, current - LADDER_ROWS + 1)  # the start, then the last LADDER_ROWS steps up to the current one
if first > 1:
    st.caption(f"The ladder shows the start and steps {first}–{current} of {current}; move the Step slider back "
               "to see the earlier merges.")
plot(vbpe.merge_ladder(steps[: current + 1], table, alphabet, current=current, shown=[0, *range(first, current + 1)]),
     "bpe_merges", key="bpe_ladder")
enc = tok.encode(text)
st.markdown("**Final tokens and ids**")
st.dataframe([{"position": i, "token": bpe.readable(t, alphabet), "id": n} for i, (t, n) in
              enumerate(zip(enc.tokens, enc.ids))], hide_index=True, width="stretch")

st.header("The same text under BPE, WordPiece and characters")
counts, rows = bpe.compare(text, {"BPE (trained here)": (tok, alphabet), "WordPiece (MiniLM)": (wordpiece(), "")})
seen = corpus_words(corpus)
for row in rows:
    row["in corpus"] = seen.get(row["word"], 0)
col_counts, col_note = st.columns([2, 3])
with col_counts:
    plot(vbpe.token_counts(counts), "bpe_token_counts", key="bpe_counts")
st.dataframe(rows, hide_index=True, width="stretch", column_order=[  # the whole width: no column cut at 1280 px
    "word", "in corpus", "BPE (trained here)", "WordPiece (MiniLM)", "characters"])
col_note.caption("WordPiece lowercases and strips accents, marks a word's inner pieces with ##, and writes "
                  "any word it cannot spell as [UNK]. Words the corpus rarely had (in corpus ≤ 1) tend to "
                  "split into more BPE pieces.")
