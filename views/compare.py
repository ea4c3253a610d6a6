"""Compare: a minimal pair of sentences, the attention of their shared tokens side by side and per head."""
import streamlit as st

import limits
from analysis.compare import align, aligned_difference, per_head, summed
from ui import cache, family
from ui.show import explain, plot
from ui.state import selection
from viz.compare import difference_per_head, key_difference, side_by_side

SPECIAL = {"[CLS]", "[SEP]", "<s>", "</s>", "<bos>", "<eos>"}

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
names = [f"{ta.tokens[a]} (A{a} · B{b})" for a, b in query_pairs]
words = [k for k, (a, _) in enumerate(query_pairs) if ta.tokens[a] not in SPECIAL]
st.session_state.setdefault("cmp_tokens", words[-1:] or [0])
chosen = st.multiselect("Aligned tokens (their attention is summed)", range(len(query_pairs)), key="cmp_tokens",
                        bind="query-params",
                        format_func=lambda k: names[k])
if not chosen:
    st.info("Pick at least one aligned token.")
    st.stop()
picked = [query_pairs[k] for k in chosen]

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
left, right = st.columns(2)
with left:
    plot(difference_per_head(per_head(diff, len(picked)), f"How differently '{which}' attends, per head"),
         "compare-per-head", key="cmp_heads")
with right:
    shared_keys = [ta.key_tokens[a] for a, _ in key_pairs]
    plot(key_difference(diff[layer, head], shared_keys, f"B − A over shared keys · L{layer} H{head}"),
         f"compare-keys-L{layer}-H{head}", key="cmp_keys")

explain(
    "Both sentences go through the same model. Tokens are aligned by matching their strings in order. "
    "For the chosen tokens we add up their attention rows (so a word split into pieces counts as one), "
    "then compare A and B on the keys both sentences share. A head with a large difference reads the "
    "context differently: that is where the two meanings of the word part ways.",
    r"d_{\ell h} = \tfrac{1}{2|S|}\sum_{k \in K_{AB}} \Big|\sum_{q \in S} A^{B}_{\ell h}[q,k]"
    r" - \sum_{q \in S} A^{A}_{\ell h}[q,k]\Big|",
    "diff = wb[:, :, qb].sum(2)[:, :, kb] - wa[:, :, qa].sum(2)[:, :, ka]  # (L, H, P)",
)
