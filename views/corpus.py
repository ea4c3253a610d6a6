"""Heads across a corpus: what each head does over many sentences (Clark et al. 2019), its queries and keys
in one plane (AttentionViz), where it fires (exBERT-style search) and which heads attend alike."""

import streamlit as st

import limits
from analysis import corpus_stats as cs
from analysis import patterns, qk_embedding
from experiments import corpus as ec
from limits.errors import UserError
from ui import corpus as uc
from ui import corpus_similar, family
from ui import corpus_table as ct
from ui.show import explain, plot
from ui.state import selection
from viz import corpus as vc

st.title("Heads across a corpus")
sel = selection()
model = family.loaded(sel)
if model is None:
    st.stop()
if family.family(model) in ("vision", "encoder-decoder"):
    family.switch("This model reads images, not text: the corpus statistics need a text model; pick one here."
                  if family.family(model) == "vision" else "This model's attention runs from one text to another: "
                  "the corpus statistics need self-attention, an encoder's or a decoder's.", ["bert", "gpt"], "corpus")
    st.stop()
picked = uc.pick()
if picked is None:
    st.stop()
try:
    stats = uc.statistics(sel, picked)
    label = model.label
except UserError as err:
    st.error(str(err))
    st.stop()
if stats is None:
    st.stop()
uc.notices(stats)
n_layers, n_heads = stats.shape
means, typical = cs.means(stats), cs.typical(stats)
labels = patterns.labels(means)
st.caption(f"{label} · {len(stats.tokens):,} sentences · {len(stats.top_key):,} tokens")

seen = st.session_state.get("corpus_table", {}).get("selection", {}).get("rows", [])
row = ct.row_of("corpus_table", seen)  # the shown table may be a page of a filtered one (1,024 heads)
if row is not None and row < n_layers * n_heads and seen != st.session_state.get("_corpus_rows"):  # picks the head
    st.session_state["_corpus_rows"] = seen
    st.session_state["corpus_layer"], st.session_state["corpus_head"] = divmod(row, n_heads)
c1, c2 = st.columns(2)
layer = c1.selectbox("Layer", range(n_layers), key="corpus_layer", format_func=lambda i: f"L{i}", **uc.BIND)
h = c2.selectbox("Head", range(n_heads), key="corpus_head", format_func=lambda i: f"H{i}", **uc.BIND)
name = f"L{layer} H{h}"


behaviours, queries_keys, search, similar = st.tabs(
    ["Behaviours", "Queries and keys", "Search", "Similar heads"], key="corpus_tab", bind="query-params")
if behaviours.open:
    explain("Each row is one head, averaged over every sentence of the corpus: the share of its attention on the "
            "previous or next token, on [CLS]/BOS, [SEP]/EOS, punctuation, the query itself, other copies of the "
            "query's token; its row entropy over log(#keys) (1 = uniform) and its mean distance in tokens. "
            "Consistency is the share of sentences on which the head earns its label, as Clark et al. (2019) "
            "measured over 1,000 Wikipedia segments. Pick a row to see the head on its most typical sentence.",
            r"\mathrm{prev}_h=\frac{1}{N}\sum_{s}\frac{1}{T_s-1}\sum_{i\ge1}A^{(s)}_{h,i,i-1}",
            "prev = weights[..., i[1:], i[1:] - 1].mean(-1)  # (L, H) per sentence, then summed per shard")
    spread = st.toggle("Show the spread across sentences (standard deviation) instead of the mean",
                       key="corpus_spread", **uc.BIND)
    shown, _ = ct.paged(uc.behaviour_rows(stats, spread), n_layers, "corpus_table")
    st.dataframe(shown, key="corpus_table", on_select="rerun", hide_index=True,
                 selection_mode="single-row", column_config=uc.column_config(spread), height=320)
    feature = st.selectbox("Map one behaviour over every head", patterns.FEATURES, key="corpus_feature", **uc.BIND)
    f = patterns.FEATURES.index(feature)
    plot(vc.behaviour_map(means[..., f], feature, feature != "distance"), f"corpus-{feature}", key="corpus_map")
    st.caption("Colours span 0 to 100% for a share and 0 to the largest mean for distance, as the colour bar says: "
               "two heads with close values look alike, however narrow the spread.")
    st.header(f"{name} ({labels[layer][h]}) on its most typical sentence")
    st.caption("The sentence whose behaviours for this head are nearest the head's corpus means.")
    uc.head_on_sentence(sel, picked.sentences[int(stats.index[int(typical[layer, h])])], layer, h,
                        int(typical[layer, h]))

if queries_keys.open:
    explain("Every token of the first sentences gives this head a query and a key. Keys are scaled and shifted "
            "(each query's dot products move by one constant, so its attention is unchanged) until queries and keys "
            "share a centre and a mean length; then a key near a query is one the query attends to (Yeh et al. 2023).",
            r"k' = k/c + (\bar q c - \bar k/c),\ q' = c\,q:\quad q'\cdot k'_j = q\cdot k_j + \mathrm{const}(q)",
            "q, k = layer.attention.self.query(h), layer.attention.self.key(h)  # h = hidden_states[layer]")
    a, b = st.columns(2)
    method = a.radio("Projection", qk_embedding.methods(), horizontal=True, key="corpus_projection", **uc.BIND)
    colour = b.radio("Colour by", ["query or key", "position", "token"], horizontal=True, key="corpus_colour",
                     **uc.BIND, help="Part of speech would need a tagger, which this app does not ship.")
    budget = limits.current().corpus_qk_tokens // (10 if method == "t-SNE" else 1)  # t-SNE is slow: fewer points
    try:
        pts = uc.qk(sel, picked.sentences, layer, budget)
    except UserError as err:
        st.info(str(err))
    else:
        q2, k2 = uc.projected(sel, picked.sentences, layer, budget, h, method)
        plot(vc.qk_scatter(q2, k2, colour, pts["pos"], pts["tokens"], uc.hover(pts), f"{name}: queries and keys "
                           f"({method})"), f"corpus-qk-{name}", key="corpus_qk")
        st.caption(f"{len(pts['tokens']):,} tokens of the first {len(set(pts['row'].tolist())):,} sentences "
                   f"(capped at {budget:,})." + (" Q and K after the rotation (RoPE), as Inside a head shows them: a "
                   "token's key moves with its position." if ec.rotates(model) else ""))

if search.open:
    explain("Like exBERT's search: for each token that matches, where does this head put most of its weight? "
            "Type a token (case ignored, ## ignored) or /a regular expression/; leave a box empty for any token.",
            r"\text{hits} = \{(s,i): \mathrm{tok}_{s,i} \sim \text{query},\ \mathrm{tok}_{s,j^*} \sim \text{key}\},"
            r"\ j^* = \arg\max_j A^{(s)}_{h,i,j}",
            "top_key = weights.argmax(-1)  # (L, H, T), kept per token when the corpus is run")
    a, b = st.columns(2)
    want_q = a.text_input("From a query token", key="corpus_query", placeholder="e.g. it or /^(he|she)$/", **uc.BIND)
    want_k = b.text_input("To a key token", key="corpus_key", placeholder="e.g. [SEP]", **uc.BIND)
    first = not family.causal(model) or st.checkbox("Include position 0", key="corpus_first", **uc.BIND,
                                                    help="A decoder's first token can only attend to itself.")
    if not first:
        st.caption("Position 0 is left out: in a decoder the first token can attend only to itself, so every "
                   "sentence would give a trivial hit of weight 1.00. Tick the box to include it.")
    try:
        hits = cs.search(stats, layer, h, want_q, want_k, top=30, skip_first=not first)
    except UserError as err:
        st.error(str(err))
        hits = []
    uc.hits_table(sel, picked.sentences, stats, hits, layer, h, name)

if similar.open:
    explain("Two heads are alike when, token by token, their attention rows are alike: the Jensen-Shannon "
            "divergence of the rows, averaged over the corpus (Clark et al. 2019, §6), clustered by average linkage. "
            "Pairs that are very close are candidates to prune one of; check what it costs in the Pruning view.",
            r"\mathrm{JS}(P\|Q)=H\!\left(\tfrac{P+Q}{2}\right)-\tfrac{H(P)+H(Q)}{2},\quad d=\sqrt{\mathrm{JS}}",
            "js = xlogx((a[i] + a[j]) / 2).sum(-1) * -1 - (xlogx(a[i]) + xlogx(a[j])).sum(-1) * -0.5  # bits")
    corpus_similar.tab(stats, labels)
