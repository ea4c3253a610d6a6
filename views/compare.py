"""Compare: a minimal pair of sentences, the attention of their shared tokens side by side and per head."""
import streamlit as st

import limits
from analysis.compare import align, aligned_difference, ident, per_head, summed
from analysis.patterns import head_stats, labels
from analysis.patterns import rank as patterns_rank
from ui import cache, family
from ui.show import explain, plot
from ui.state import selection
from viz.compare import difference_per_head, key_difference, side_by_side

SPECIAL = {"[CLS]", "[SEP]", "<s>", "</s>", "<bos>", "<eos>"}
POSITIONAL = {"previous token": "before", "next token": "after"}  # pattern label -> where its token stands

st.title("Compare two sentences")
st.caption("A minimal pair: the same word in two contexts. Tokens both sentences share are aligned; "
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
try:
    ta = cache.trace(sel.model, sel.device, sel.dtype, text_a, None)
    tb = cache.trace(sel.model, sel.device, sel.dtype, text_b, None)
except ValueError as err:
    st.error(str(err))
    st.stop()
for note in dict.fromkeys(ta.notices + tb.notices):
    st.warning(note)
part = family.pick_part("cmp", ta)
ta, tb = ta.stacks()[part], tb.stacks()[part]

query_pairs, key_pairs = align(ta.tokens, tb.tokens), align(ta.key_tokens, tb.key_tokens)
if not query_pairs or not key_pairs:
    st.info("The two sentences share no token; change one so that some words are the same.")
    st.stop()
paired = {a for a, _ in query_pairs}
alone_a = [t for i, t in enumerate(ta.tokens) if i not in paired and t not in SPECIAL]
alone_b = [t for i, t in enumerate(tb.tokens) if i not in {b for _, b in query_pairs} and t not in SPECIAL]
st.caption("**Aligned** means the same token in both sentences, matched in order (the longest runs of identical "
           "tokens, as difflib finds them); only aligned tokens can be compared. Not aligned: "
           f"A: {', '.join(alone_a) or 'none'} · B: {', '.join(alone_b) or 'none'}.")
# a chosen token is named by its text and occurrence in A ("the #2"), so a new sentence B cannot swap it for another
names = {ident(ta.tokens, a): (a, b) for a, b in query_pairs}
words = [n for n, (a, _) in names.items() if ta.tokens[a] not in SPECIAL]
default = words[-1:] or list(names)[:1]
kept = st.session_state.get("cmp_tokens")
if kept and any(t not in names for t in kept):
    left = [t for t in kept if t in names]
    st.session_state["cmp_tokens"] = left or default
    st.warning(f"{', '.join(repr(t) for t in kept if t not in names)}: no partner in the other sentence any more, "
               "so no longer compared" + ("." if left else f"; showing {default[0]!r} instead."))
st.session_state.setdefault("cmp_tokens", default)
chosen = st.multiselect("Aligned tokens (their attention is summed)", list(names), key="cmp_tokens",
                        bind="query-params", format_func=lambda n: f"{n} (A{names[n][0]} · B{names[n][1]})")
if not chosen:
    st.info("Pick at least one aligned token.")
    st.stop()
picked = [names[n] for n in chosen]

c1, c2 = st.columns(2)
layer = c1.selectbox("Layer", range(ta.n_layers), key="cmp_layer", format_func=lambda i: f"L{i}", bind="query-params")
head = c2.selectbox("Head", range(ta.n_heads), key="cmp_head", format_func=lambda i: f"H{i}", bind="query-params")
which = ", ".join(ta.tokens[a] for a, _ in picked)

st.subheader(f"Side by side · L{layer} H{head}")
row_a = summed(ta.weights, [a for a, _ in picked])[layer, head]  # (Tk_a,)
row_b = summed(tb.weights, [b for _, b in picked])[layer, head]  # (Tk_b,)
plot(side_by_side(row_a, row_b, ta.key_tokens, tb.key_tokens, f"A: {text_a}", f"B: {text_b}"),
     f"compare-L{layer}-H{head}", key="cmp_side")

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
    shared_keys = [ta.key_tokens[a] for a, _ in key_pairs]
    plot(key_difference(diff[layer, head], shared_keys, f"B − A over shared keys · L{layer} H{head}"),
         f"compare-keys-L{layer}-H{head}", key="cmp_keys")

explain(
    "Both sentences go through the same model. Tokens are aligned by matching their strings in order. "
    "For the chosen tokens we add up their attention rows (so a word split into pieces counts as one), "
    "then compare A and B on the keys both sentences share. A large difference says a head reads the two "
    "contexts differently, not why: a positional head (previous or next token) differs whenever the neighbouring "
    "token differs, whatever the word means, so check a head's pattern before reading meaning into it.",
    r"d_{\ell h} = \tfrac{1}{2|S|}\sum_{k \in K_{AB}} \Big|\sum_{q \in S} A^{B}_{\ell h}[q,k]"
    r" - \sum_{q \in S} A^{A}_{\ell h}[q,k]\Big|",
    "diff = wb[:, :, qb].sum(2)[:, :, kb] - wa[:, :, qa].sum(2)[:, :, ka]  # (L, H, P)",
)
