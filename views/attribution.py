"""Attribution: does attention explain the output? Attention, rollout and flow beside gradients and occlusion, with
ERASER faithfulness measured on the text and over rows, and which heads agree with integrated gradients."""
import numpy as np
import pandas as pd
import streamlit as st

import limits
from experiments.attribution import ALL_METHODS, LABELS
from experiments.attribution_methods import BASELINES, STEPS
from experiments.explained import NO_PREDICTION
from limits.errors import UserError
from ui import attribution as ua
from ui import family
from ui.classroom import links
from ui.runtime import heavy, work
from ui.show import explain, head_picker, plot
from ui.state import selection
from viz.attribution import curves, head_agreement, strips, strips_table, tau_matrix

B = dict(bind="query-params")
st.title("Does attention explain the output?")
sel = selection()
if not sel.text.strip():
    st.info("Type a sentence in the sidebar to explain the model's prediction on it.")
    st.stop()
try:
    model = ua.model_of(sel)
except UserError as err:
    st.error(str(err))
    st.stop()
c1, c2, c3 = st.columns([3, 1, 1])
methods = tuple(c1.multiselect("Methods", ALL_METHODS, list(ALL_METHODS), key="attr_methods",
                               format_func=LABELS.get, **B)) or ("random",)
steps = int(c2.number_input("Integrated-gradients steps", min_value=1, max_value=4096, value=64, key="attr_steps",
                            help=f"Points on the path from the baseline ({STEPS[0]} to {STEPS[1]}).", **B))
baseline = c3.radio("IG baseline", BASELINES, key="attr_baseline", horizontal=True, **B,
                    help="Every ordinary token's embedding replaced by the pad token's, or by zeros; special tokens "
                         "kept.")
if not STEPS[0] <= steps <= STEPS[1]:
    st.error(f"Integrated gradients takes {STEPS[0]} to {STEPS[1]} steps: {steps} is out of range.")
    st.stop()
args = (sel.model, sel.device, sel.dtype, sel.text, sel.text_b, methods, steps, baseline)
try:
    what, atts, one, notes = ua.text_results(args)
except UserError as err:
    if str(err) == NO_PREDICTION:
        family.switch(NO_PREDICTION, ["bert", "gpt"], "attr")
    else:
        (st.info if isinstance(err, ua.TooLong) else st.error)(str(err))
    st.stop()
for note in notes:
    st.warning(note)
first = next(iter(atts.values()))
methods = tuple(atts)
value = "similarity" if "cosine" in what or "length" in what else "probability"
st.markdown(f"**Explained:** {what}: **{first.output:.4g}** here, **{first.baseline_output:.4g}** at the "
            f"integrated-gradients baseline ({baseline}).")
if sel.text_b and model.family == "decoder":
    st.caption("A decoder reads one text: the second sentence is ignored.")
plot(strips(atts, LABELS), "attribution-strips", key="attr_strips", table=strips_table(atts, LABELS))
if one is None:
    ua.ask_button(args)
ig = atts.get("integrated_gradients")
if ig is not None:
    gap = ig.output - ig.baseline_output
    st.caption(f"Integrated gradients' completeness: the scores sum to {ig.scores.sum():.4g}, output − baseline "
               f"output is {gap:.4g}; error {abs(ig.delta):.2g} ({abs(ig.delta) / max(abs(gap), 1e-12):.2%} of the "
               "gap). Raise the steps if it is over 1 %.")
best = atts.get("best_head")
if best is not None:
    st.button(f"Open the best single head, L{best.head[0]} H{best.head[1]}, in the Heads view", key="attr_open_best",
              on_click=links.open_head, args=best.head, icon="🔲",
              help="The head whose row ranks tokens most like integrated gradients on this text (Kendall τ).")
table = pd.DataFrame({"token": first.tokens, "special": first.special} | {m: a.scores for m, a in atts.items()})
st.download_button("Scores per token (CSV)", table.to_csv(index=False), "attribution_scores.csv", "text/csv",
                   key="attr_csv_tokens")
shown = [m for m in methods if m != "best_head"]
if one is not None:
    ua.faithfulness_here(one, shown, int((~first.special).sum()), value)

st.header("Over rows")
source = st.radio("Rows", ["built-in rows", "your labelled file"], horizontal=True, key="attr_source", **B)
if source == "built-in rows":
    n = st.slider("Rows", 5, ua.MAX_ROWS, 20, 5, key="attr_rows", **B)
    rows, about = ua.builtin_rows(model, n)
    st.caption(f"{len(rows)} rows: {about}.")
else:
    up = st.file_uploader("A .csv, .tsv or .jsonl with a header and a text column (labels are not needed: each row's "
                          "own prediction is explained)", type=["csv", "tsv", "jsonl", "json"], key="attr_file")
    rows = ua.csv_rows(up, "attr_file") if up is not None else None
    if rows is None:
        st.stop()
budget = work.Budget(ua.cost(len(rows), len(first.tokens), shown, steps), limits.current().pruning_forward_passes,
                     "rows through the model (a backward counts 2)", "choose fewer rows, methods or steps")
res = heavy.run("attr_rows", (sel, tuple(map(str, rows)), tuple(shown), steps, baseline),
                "Attributing and erasing, row by row…", ua.run_rows, sel, rows, tuple(shown), steps, baseline,
                budget=budget, ask=heavy.Ask("attr_go", "Measure over these rows"), keep=False)
if res is None:
    st.stop()
for note in res.skipped[:3]:
    st.warning(note)
st.caption(f"{res.rows} rows measured; integrated gradients' completeness error, median over rows: "
           f"{np.median(res.ig_errors):.2%} of output − baseline output." if res.ig_errors else f"{res.rows} rows.")
over = pd.DataFrame([{"method": LABELS[m], **{k: round(v, 4) for k, v in res.summary[m].items()}} for m in shown])
st.dataframe(over, hide_index=True)
plot(curves(res.curves(), res.fractions, LABELS, value), "attribution-curves", key="attr_curves")
cur = pd.DataFrame([{"method": m, "fraction": f, "comprehensiveness": c["comprehensiveness"][i],
                     "sufficiency": c["sufficiency"][i]} for m, c in res.curves().items()
                    for i, f in enumerate(res.fractions)])
c1, c2 = st.columns(2)
c1.download_button("Faithfulness (CSV)", over.to_csv(index=False), "faithfulness.csv", "text/csv", key="attr_csv_sum")
c2.download_button("Curves (CSV)", cur.to_csv(index=False), "deletion_curves.csv", "text/csv", key="attr_csv_curves")
if len(shown) > 1:
    plot(tau_matrix(res.tau_matrix(), shown, LABELS, f"Kendall τ between methods, mean over {res.rows} rows"),
         "attribution-tau", key="attr_tau_rows")
rho = res.head_map()
if rho is not None:
    clicks = st.session_state.get("_attr_clicks", 0)
    event = plot(head_agreement(rho, res.rows), "attribution-heads", key=f"attr_heads_{clicks}", table=True,
                 on_select="rerun", selection_mode="points")
    points = event["selection"]["points"] if event else []
    if points:
        st.session_state["_attr_clicks"] = clicks + 1
        links.open_head(*(int(v) for v in points[0]["customdata"]))
        st.rerun()
    top = divmod(int(np.nanargmax(rho)), rho.shape[1]) if np.isfinite(rho).any() else (0, 0)
    layer, head = head_picker(*rho.shape, top, "attr_pick")  # the keyboard's way to what a click opens
    st.button(f"Open L{layer} H{head} in Heads", key="attr_open_head", on_click=links.open_head, args=(layer, head),
              icon="🔎")

explain(
    "Attention says where a token looked, not what the output depended on. Gradient × input and integrated "
    "gradients (Sundararajan et al. 2017) take the output's slope at the word embeddings; occlusion deletes one "
    "token and measures the change. ERASER (DeYoung et al. 2020) checks any ranking the same way: delete the "
    "tokens it ranks first (comprehensiveness: the output should fall) or keep only them (sufficiency: it should "
    "not). A method is only worth reading if it beats the random ranking.",
    r"\mathrm{IG}_i=(x_i-x'_i)\cdot\!\int_0^1\!\frac{\partial f(x'+\alpha(x-x'))}{\partial x_i}d\alpha,\ "
    r"\sum_i \mathrm{IG}_i=f(x)-f(x');\quad \mathrm{comp}=\frac{1}{|K|}\sum_{k\in K} p(x)-p(x\setminus r_k)",
    "ig = IntegratedGradients(lambda e: explained.score(e))          # e: (B, T, D) word embeddings\n"
    "attr, delta = ig.attribute(x, baselines=x0, n_steps=64, return_convergence_delta=True)\n"
    "scores = attr.sum(-1)                                            # (1, T): one per token",
)
