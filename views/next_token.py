"""Next token: what a decoder does with its attention. One token's path through the whole block, logits to
probabilities (temperature, top-k, top-p) with greedy or seeded sampling and append-and-continue, the logit lens,
and each head's direct share of the prediction, for `gpt`, the tiny decoder and any hf: decoder."""
from __future__ import annotations

import streamlit as st

from limits.errors import UserError
from ui import next_token as nt
from ui import show, state

st.title("Next token")
sel = state.selection()
found = nt.usable(sel)
if found is None:
    st.stop()
model, unsplit = found  # unsplit: why the three split tabs cannot show this model, said in each of them instead
try:
    ids, notes = nt.prompt(sel.model, sel.device, sel.dtype, sel.text)
except UserError as err:
    st.error(str(err))
    st.stop()
for note in tuple(model.notices) + notes:
    st.warning(note)

steps = nt.kept(sel)
nt.collect(sel, steps)
at = len(steps)
if steps:
    state.clamp("nt_at", 0, len(steps))
    at = st.slider("Step: go back to any earlier one (appending from there replaces the later ones)", 0,
                   len(steps), len(steps), key="nt_at")
context = ids + tuple(c.id for c in steps[:at])
st.caption(f"Text so far ({len(context)} tokens), the last 600 characters:")
st.code(nt.text_of(model, context)[-600:], language=None, wrap_lines=True)  # as written: never markdown

s = nt.settings()
d = None
if unsplit is None:
    c1, c2 = st.columns([3, 2])
    target = c1.text_input("Token to explain (empty: the model's top token)", "", key="nt_target", max_chars=40,
                           bind="query-params", help="As the tokenizer writes it (Ġbank), as the charts write it "
                                                     "(␣bank), or as text ( bank).")
    try:  # the split itself, for the top token: a model it cannot follow is said in each split tab
        d = nt.decomposition(sel.model, sel.device, sel.dtype, context, None)
        if target.strip():  # unstripped: " the" is a token of its own
            d = nt.decomposition(sel.model, sel.device, sel.dtype, context, target)
    except UserError as err:
        if d is not None:  # the target's sentence
            st.error(str(err))
            st.stop()
        unsplit = str(err)
    if d is not None:
        nt.logit_metric(d, c2)

show.explain(
    "After the last layer, the residual stream of the last position goes through a final norm and the "
    "unembedding: one logit per token. Temperature divides the logits; top-k keeps the k largest; top-p keeps the "
    "smallest set of tokens whose probabilities reach p; softmax makes the rest sum to 1, and a token is drawn "
    "(or the largest taken: greedy). The residual stream is a sum (embedding + every head's output + every MLP's "
    "output + biases), and with the norm's scale s frozen the logit is a sum too: each head's **direct** share. "
    "The **logit lens** reads the residual after each layer as if it were the last.",
    r"\text{logit}_t = u_t\cdot\Big(\gamma\odot\frac{r-\bar r}{s}+\beta\Big),\quad "
    r"r = e + \sum_{l,h} W_O^{l,h} z^{l,h} + \sum_l \text{MLP}_l + b"
    r"\;\Rightarrow\; \text{logit}_t = \sum_{\text{parts } c} u_t\cdot\frac{\gamma\odot(c-\bar c)}{s} + "
    r"u_t\cdot\beta,\qquad p = \text{softmax}\big(\text{top-}p(\text{top-}k(\ell/T))\big)",
    "logits = model(ids).logits[0, -1]                       # (V,)\n"
    "probs = next_token_probs(logits, temperature, top_k, top_p)  # analysis/sampling.py\n"
    "token = torch.multinomial(torch.tensor(probs), 1)       # or probs.argmax(): greedy\n"
    "s = torch.sqrt(((r - r.mean()) ** 2).mean() + eps)    # the norm's scale, frozen\n"
    "share = u[t] @ (gamma * (c - c.mean()) / s)           # one part c (a head's W_O z), (C,) -> scalar\n"
    "lens = unembed(final_norm(r_after_layer_l)).softmax(-1)  # the logit lens",
)

probs_tab, block_tab, lens_tab, dla_tab = st.tabs(
    ["Probabilities", "The whole block", "Logit lens", "Direct logit attribution"], key="nt_tab",
    bind="query-params")
if probs_tab.open:
    with probs_tab:
        nt.probabilities(model, sel, context, s)
        nt.append(model, sel, context, s, steps, at)
        if steps:
            nt.steps_table(steps, at)
for tab, section in ((block_tab, lambda: nt.path_section(d, model)), (lens_tab, lambda: nt.lens_section(d)),
                     (dla_tab, lambda: nt.dla_section(d, sel))):
    if tab.open:
        with tab:
            if d is None:
                st.info(unsplit)
            else:
                section()
