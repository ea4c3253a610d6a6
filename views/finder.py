"""Find a head: rank every head of the sidebar's model by a named behaviour, then open one in the Heads view."""
import numpy as np
import streamlit as st

from analysis import patterns
from analysis.special import END_TOKENS, START_TOKENS, present
from ui import family
from ui.classroom import links
from ui.show import current_trace, explain, plot
from ui.state import BIND, selection
from ui.trace_text import trace_or_error
from viz.finder import score_grid

try:  # corpus-wide scores, when the corpus view is part of the app: ({behaviour: [L, H]}, sentences) or None
    from ui.corpus import head_scores as corpus_scores
except ImportError:
    corpus_scores = None

TOP = 8

st.title("Find a head")
st.caption("Which head looks at the previous token? Which one links a pronoun to its noun? Every score below is "
           "read from the model's own attention on the sidebar's text; click a head, or its button, to see it "
           "in the Heads view.")
sel = selection()
trace = current_trace(sel)
if trace is None:
    st.stop()
if trace.kind == "cross" and not trace.parts:  # an RNN encoder-decoder: its one attention is cross-attention
    family.switch("The head finder reads self-attention; this model has one cross-attention map (decoder over "
                  "input).", ["bert", "gpt"], "find")
    st.stop()
part = None  # a transformer encoder-decoder: which of its self-attention stacks is ranked
if trace.kind == "cross":
    part = st.radio("Rank the heads of", ["encoder", "decoder"], horizontal=True, key="find_part", **BIND,
                    format_func=family.PART_LABELS.get, help="An encoder-decoder has two stacks of self-attention.")
    st.caption("This encoder-decoder has three attentions: its encoder's self-attention over your text, its "
               "decoder's masked self-attention over what it wrote, and cross-attention between them. The "
               "behaviours below are self-attention statistics, so they rank the heads of the stack picked here.")
    trace = trace.parts[part]

# [CLS]/[SEP] behaviours only where the model put such a token (or a start/end token like <s>) in this text
ends = {"[CLS]": present(trace.tokens, special=START_TOKENS), "[SEP]": present(trace.tokens, special=END_TOKENS)}
offered = [b for b in patterns.BEHAVIOURS if ends.get(b, True)]
named = {b: b if ends[b] == [b] else f"{'start' if b == '[CLS]' else 'end'} token {' '.join(ends[b])}"
         for b in ends if ends[b]}
behaviour = st.selectbox("Behaviour", offered, key="find_behaviour", **BIND, format_func=lambda b: named.get(b, b),
                         help="What each score measures is written under the grid.")
missing = [b for b in ends if not ends[b]]
if missing:
    st.caption(f"Not offered: {' and '.join(missing)}. This model puts no "
               f"{' or '.join({'[CLS]': 'start', '[SEP]': 'end'}[b] for b in missing)} token "
               f"({', '.join(missing)} or the like) in this text, so there is nothing for a head to look at.")
precomputed, source = None, "this text"
if behaviour == "coreference":
    words = patterns.word_spans(trace.tokens)
    pronouns, candidates = patterns.pronoun_choices(trace.tokens)
    if not pronouns or not candidates:
        st.info("Coreference needs a pronoun (it, she, they, …) with words before it, e.g. "
                "\"The animal didn't cross the street because it was too tired.\"")
        st.stop()
    c1, c2 = st.columns(2)
    label = lambda w: f"{words[w][0]} ·{words[w][1][0]}"  # noqa: E731  word and its first token position
    pronoun = c1.selectbox("Pronoun", pronouns[::-1], key="find_pronoun", format_func=label, **BIND)
    antecedent = c2.selectbox("The word it refers to", [w for w in candidates if w < pronoun] or candidates,
                              key="find_antecedent", format_func=label, **BIND)
    scores = patterns.find_heads(behaviour, trace.weights, pronoun=words[pronoun][1], antecedent=words[antecedent][1])
    what = f"the weight '{words[pronoun][0]}' puts on '{words[antecedent][0]}'"
elif behaviour == "induction":  # "... A B ... A" -> B needs repeats: the sidebar's text written twice
    twice = trace_or_error(sel, f"{sel.text} {sel.text}", sel.text_b)
    if twice is None:
        st.stop()
    twice = twice.parts[part] if part else twice
    scores = patterns.find_heads(behaviour, twice.weights, twice.tokens)
    what, source = patterns.BEHAVIOURS[behaviour], f"this text written twice ({len(twice.tokens)} tokens)"
    even = patterns.induction(patterns.uniform_like(twice.weights[:1, :1], twice.kind), twice.tokens)[0, 0]  # one head
    st.caption(f"A head spreading its weight evenly over the tokens it can see would score {even:.2f} here.")
    if np.nanmax(scores) < 2 * even:
        st.info(f"No head of this model beats even attention by much on this text (best {np.nanmax(scores):.2f}, "
                f"even {even:.2f}): the ranking below is noise. Try a text from the model's own domain.")
else:
    corpus = corpus_scores(sel) if corpus_scores and not part else None
    if corpus is not None:
        pick = st.radio("Scores from", ["this text", "corpus"], horizontal=True, key="find_source", **BIND,
                        format_func={"this text": "the sidebar's text",
                                     "corpus": f"the built-in corpus ({corpus[1]:,} sentences)"}.get)
        precomputed, source = (corpus[0], f"{corpus[1]:,} corpus sentences") if pick == "corpus" else (None, source)
    scores = patterns.find_heads(behaviour, trace.weights, trace.tokens, precomputed=precomputed)
    what = patterns.BEHAVIOURS[behaviour]
if not np.isfinite(scores).any():
    st.info("No token occurs twice in this text, so no head can attend to a repeat: type a sentence with a "
            "repeated word." if behaviour == "same token" else "This behaviour has no score on this text.")
    st.stop()

ranked = patterns.rank(scores, TOP)
st.header(f"Heads {f'of the {part} ' if part else ''}ranked by {named.get(behaviour, behaviour)}")
st.caption(f"Score: {what}; from {source}. Numbers on the squares are ranks; layers and heads count from 0.")
left, right = st.columns([3, 2])
with left:
    clicks = st.session_state.get("_find_clicks", 0)  # a fresh chart key per click: no selection left behind
    grid = score_grid(scores, named.get(behaviour, behaviour), [(l, h) for l, h, _ in ranked])
    event = plot(grid, f"find-{behaviour}", key=f"find_grid_{clicks}", on_select="rerun", selection_mode="points")
    points = event["selection"]["points"] if event else []
    if points:
        st.session_state["_find_clicks"] = clicks + 1
        links.open_head(*(int(v) for v in points[0]["customdata"]), part)
        st.rerun()
with right:
    for i, (layer, head, value) in enumerate(ranked):
        c1, c2 = st.columns([2, 3], vertical_alignment="center")
        c1.markdown(f"**{i + 1}. L{layer} H{head}** · {value:.2f}")
        c2.button("Open in Heads", key=f"find_open_{i}", on_click=links.open_head, args=(layer, head, part),
                  icon="🔲", help=f"The Heads view with layer {layer} and head {head} picked, on this text.")

explain(
    "Each behaviour is a simple statistic of one head's attention matrix, after Clark et al. (2019, "
    "*What does BERT look at?*): how much weight goes to the previous token, to [CLS], to punctuation, how "
    "evenly it spreads (entropy), or, for coreference, how much the pronoun's row puts on a chosen word. "
    "An induction head (Olsson et al. 2022) looks, from a repeated token, at what followed its earlier "
    "occurrence: the copying step of in-context learning, scored on the text written twice. "
    "A high score says what a head does on this text, not what it is for: check a few sentences.",
    r"\mathrm{prev}_{\ell h} = \frac{1}{T-1}\sum_{i=1}^{T-1} A_{\ell h}[i, i-1],\quad "
    r"\mathrm{broad}_{\ell h} = \frac{1}{T}\sum_i \frac{H(A_{\ell h}[i,:])}{\log T}",
    "prev = w[..., i[1:], i[1:] - 1].mean(-1)   # w: [L, H, T, T] -> [L, H]\n"
    "coref = w[..., pronoun, :][..., antecedent].sum(-1).mean(-1)\n"
    "induction = (w * after_earlier_twin).sum(-1)[..., has_twin].mean(-1)   # text written twice",
)
