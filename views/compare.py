"""Compare: a minimal pair of sentences, the attention of their shared words side by side and per head."""
import streamlit as st

import limits
from analysis.compare import align_words, aligned_difference, ident, per_head, summed
from analysis.patterns import head_stats, labels, word_spans
from analysis.patterns import rank as patterns_rank
from analysis.special import SPECIAL_TOKENS
from analysis.tokens import readable_all
from ui import family
from ui.show import explain, plot
from ui.state import selection
from ui.trace_text import trace_or_error
from viz.compare import difference_per_head, key_difference, side_by_side

POSITIONAL = {"previous token": "before", "next token": "after"}  # pattern label -> where its token stands


def span(positions: list[int]) -> str:
    """A word's token positions: [6] -> '6', [7, 8, 9] -> '7–9'."""
    return str(positions[0]) if len(positions) == 1 else f"{positions[0]}–{positions[-1]}"


st.title("Compare two sentences")
st.caption("A minimal pair: the same word in two contexts. Words both sentences share are aligned; "
           "pick some and see where their attention goes in each sentence, and which heads change most.")
sel = selection()
model = family.loaded(sel)
if model is None:
    st.stop()
if family.family(model) == "vision":
    family.switch("Compare reads two sentences, and this model reads images: pick a text model.",
                  ["bert", "gpt", "seq2seq-transformer"], "cmp")
    st.stop()
st.session_state.setdefault("cmp_a", "I sat on the river bank")  # defaults here, so a link's values win
st.session_state.setdefault("cmp_b", "I paid at the bank")
c1, c2 = st.columns(2)
text_a = c1.text_input("Sentence A", key="cmp_a", max_chars=limits.current().text_chars, bind="query-params")
text_b = c2.text_input("Sentence B", key="cmp_b", max_chars=limits.current().text_chars, bind="query-params")
if not text_a.strip() or not text_b.strip():
    st.info("Type a sentence in both boxes to compare them.")
    st.stop()
family.task_note(sel.model, {"cmp_a": text_a, "cmp_b": text_b}, "cmp")
ta = trace_or_error(sel, text_a)
tb = ta and trace_or_error(sel, text_b)
if tb is None:
    st.stop()
for note in dict.fromkeys(ta.notices + tb.notices):
    st.warning(note)
part = family.pick_part("cmp", ta)
ta, tb = ta.stacks()[part], tb.stacks()[part]

query_words, key_words = align_words(ta.tokens, tb.tokens), align_words(ta.key_tokens, tb.key_tokens)
if not query_words or not key_words:
    st.info("The two sentences share no word; change one so that some words are the same.")
    st.stop()
paired_a, paired_b = {a[0] for _, a, _ in query_words}, {b[0] for _, _, b in query_words}
alone_a = [w for w, pos in word_spans(ta.tokens) if pos[0] not in paired_a and w not in SPECIAL_TOKENS]
alone_b = [w for w, pos in word_spans(tb.tokens) if pos[0] not in paired_b and w not in SPECIAL_TOKENS]
st.caption("**Aligned** means the same word in both sentences, matched in order (the longest runs of identical "
           "words, as difflib finds them); only aligned words can be compared. A word the tokenizer cut into "
           "pieces counts once: its attention rows are averaged over its pieces, and the attention it gets is "
           f"summed over them. Not aligned: A: {', '.join(alone_a) or 'none'} · B: {', '.join(alone_b) or 'none'}.")
# a chosen word is named by its text and occurrence in A ("the #2"), so a new sentence B cannot swap it for another
texts = [w for w, _, _ in query_words]
names = {ident(texts, i): (a, b) for i, (_, a, b) in enumerate(query_words)}
words = [n for n, (a, _) in names.items() if ta.tokens[a[0]] not in SPECIAL_TOKENS]
default = words[-1:] or list(names)[:1]
kept = st.session_state.get("cmp_tokens")
if kept and any(t not in names for t in kept):
    left = [t for t in kept if t in names]
    st.session_state["cmp_tokens"] = left or default
    st.warning(f"{', '.join(repr(t) for t in kept if t not in names)}: no partner in the other sentence any more, "
               "so no longer compared" + ("." if left else f"; showing {default[0]!r} instead."))
st.session_state.setdefault("cmp_tokens", default)
chosen = st.multiselect("Aligned words (their attention is added up)", list(names), key="cmp_tokens",
                        bind="query-params", format_func=lambda n: f"{n} (A{span(names[n][0])} · B{span(names[n][1])})")
if not chosen:
    st.info("Pick at least one aligned word.")
    st.stop()
picked = [names[n] for n in chosen]
cut = [f"'{n}' is {len(names[n][0])} tokens in A ({' '.join(readable_all([ta.tokens[i] for i in names[n][0]]))})"
       for n in chosen if len(names[n][0]) > 1]
if cut:
    st.caption("; ".join(cut) + ": compared as one word, its rows averaged over the pieces. The side-by-side "
               "bars are the model's own tokens, so there each piece has its bar.")

c1, c2 = st.columns(2)
layer = c1.selectbox("Layer", range(ta.n_layers), key="cmp_layer", format_func=lambda i: f"L{i}", bind="query-params")
head = c2.selectbox("Head", range(ta.n_heads), key="cmp_head", format_func=lambda i: f"H{i}", bind="query-params")
which = ", ".join(chosen)

st.header(f"Side by side · L{layer} H{head}")
row_a = summed(ta.weights, [a for a, _ in picked])[layer, head]  # (Tk_a,)
row_b = summed(tb.weights, [b for _, b in picked])[layer, head]  # (Tk_b,)
plot(side_by_side(row_a, row_b, ta.key_tokens, tb.key_tokens, f"A: {text_a}", f"B: {text_b}"),
     f"compare-L{layer}-H{head}", key="cmp_side")

key_pairs = [(a, b) for _, a, b in key_words]
diff = aligned_difference(ta.weights, tb.weights, picked, key_pairs)  # (L, H, P)
sizes = per_head(diff, len(picked))  # (L, H)
square = ta.tokens == ta.key_tokens and tb.tokens == tb.key_tokens  # positional labels need self-attention
kinds = labels(head_stats([ta.weights, tb.weights], [ta.tokens, tb.tokens])) if square else None
for (l, h, _), what in ((patterns_rank(sizes, 1)[0], "changes most"), ((layer, head, 0), "is shown")):
    if kinds and kinds[l][h] in POSITIONAL:
        kind = kinds[l][h].replace(" ", "-")
        st.caption(f"L{l} H{h} {what}, but it is a {kind} head on these sentences: its difference follows "
                   f"which token stands {POSITIONAL[kinds[l][h]]} '{which}', not what '{which}' means.")
        break
left, right = st.columns(2)
with left:
    plot(difference_per_head(sizes, f"How differently '{which}' attends, per head"),
         "compare-per-head", key="cmp_heads")
with right:
    shared_keys = [w for w, _, _ in key_words]
    plot(key_difference(diff[layer, head], shared_keys, f"B − A over shared words · L{layer} H{head}"),
         f"compare-keys-L{layer}-H{head}", key="cmp_keys")

explain(
    "Both sentences go through the same model. Words are aligned by matching their text in order; a word the "
    "tokenizer cut into pieces is one word. For the chosen words we average each one's attention rows over its "
    "pieces and add the words up, then compare A and B on the words both sentences share (the attention a word "
    "gets is summed over its pieces). A large difference says a head reads the two contexts differently, not "
    "why: a positional head (previous or next token) differs whenever the neighbouring token differs, whatever "
    "the word means, so check a head's pattern before reading meaning into it.",
    r"r_{\ell h}[k] = \sum_{w \in S} \tfrac{1}{|w|} \sum_{q \in w} A_{\ell h}[q,k],\quad "
    r"d_{\ell h} = \tfrac{1}{2|S|}\sum_{v \in K_{AB}} \Big|\sum_{k \in v} r^{B}_{\ell h}[k]"
    r" - \sum_{k \in v} r^{A}_{\ell h}[k]\Big|",
    "r = sum(w[:, :, word, :].mean(2) for word in chosen)   # (L, H, Tk): one row per chosen word, added\n"
    "diff = rb[..., kb].sum(-1) - ra[..., ka].sum(-1)        # (L, H) for each shared key word",
)
