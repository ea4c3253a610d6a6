"""Positional encodings: sinusoids, PE(pos+k) as a rotation, BERT's learned table, RoPE, and why
attention needs positions at all. Reads the sidebar's model only to pick which BERT to inspect."""
import numpy as np
import streamlit as st
import torch

from analysis import positional as P
from experiments import positional as E
from limits.errors import UserError
from ui import family, show, state
from ui.runtime import cache
from ui.state import BIND
from viz import positional as V


@cache.memo("results")
def learned_table(name: str, device: str, dtype: str) -> np.ndarray | None:  # [P, D], or None: no learned table
    return E.learned_table(cache.model(name, device, dtype))


@cache.memo("results")
def word_vectors(name: str, device: str, dtype: str, sentence: str):  # first tokens, their rows [T, D], count
    return E.word_vectors(cache.model(name, device, dtype), sentence)


structure = cache.memo("results")(P.structure)  # kept per table: the Learned tab redraws on every rerun


def side_by_side(*figs) -> None:  # (figure, name) pairs in equal columns; the name is also the element key
    for col, (fig, name) in zip(st.columns(len(figs)), figs):
        with col:
            show.plot(fig, name, key=f"pos_{name}")


st.title("Positional encodings")
st.caption("Attention compares tokens by content only; positions are what tell it where each token stands.")
sel = state.selection()
bert = sel.model if sel.model == "bert" or sel.model.startswith("hf:") else "bert"
try:
    if family.family(cache.model(bert, sel.device, sel.dtype)) != "encoder":
        st.caption("The Learned tab reads an encoder's position table, so this page uses the built-in MiniLM.")
        bert = "bert"
except UserError as err:
    st.warning(f"{err} Using the built-in MiniLM on this page.")
    bert = "bert"
tabs = st.tabs(["Sinusoids", "Shift = rotation", "Learned", "RoPE", "Why positions?"], key="pos_tab",
               bind="query-params")

def _sinusoids() -> None:
    c1, c2 = st.columns(2)
    n_pos = c1.slider("Positions", 10, 512, 100, key="pos_n", **BIND)
    d_model = c2.slider("d_model", 8, 512, 20, step=2, key="pos_d", **BIND,
                         help="20 gives the familiar picture of dimensions 4–7 (as in The Annotated Transformer).")
    if any(d >= d_model for d in st.session_state.get("pos_dims", [])):  # kept from a larger d_model
        del st.session_state["pos_dims"]
    dims = st.multiselect("Dimensions to plot", list(range(d_model)), [4, 5, 6, 7], key="pos_dims", **BIND)
    pe = P.sinusoidal(n_pos, d_model)
    side_by_side((show.figure(V.dimension_curves, pe, dims), "sinusoid_curves"))
    side_by_side((show.figure(V.table_heatmap, pe, "Sinusoidal PE [positions \u00d7 dimensions]"), "sinusoid_heatmap"),
                 (show.figure(V.wavelength_plot, P.wavelengths(d_model)), "sinusoid_wavelengths"))
    offsets = np.arange(n_pos)
    side_by_side((show.figure(V.similarity_heatmap, pe @ pe.T, "PE(i)\u00b7PE(j)", "dot"), "sinusoid_dot"),
                 (show.figure(V.offset_plot, offsets, P.dot_by_offset(offsets, d_model)), "sinusoid_offset"))
    show.explain(*P.EXPLAINED["sinusoids"])

def _shift() -> None:
    n_pos, d_model = st.session_state.get("pos_n", 100), st.session_state.get("pos_d", 20)  # as on Sinusoids
    state.clamp("pos_k", 1, n_pos - 1)
    k = st.slider("Offset k", 1, n_pos - 1, min(5, n_pos - 1), key="pos_k", **BIND)
    side_by_side((V.shift_matrix_heatmap(P.shift_matrix(k, d_model), k), "shift_matrix"))
    st.metric("max |PE(pos+k) \u2212 M\u2096 PE(pos)|, float64", f"{P.shift_error(k, n_pos, d_model):.1e}")
    show.explain(*P.EXPLAINED["shift"])

def _learned() -> None:
    table = learned_table(bert, sel.device, sel.dtype)
    if table is None:
        st.info(f"{bert} has no learned absolute position table (embeddings.position_embeddings).")
        return
    state.clamp("pos_span", 0, len(table))
    lo, hi = st.slider("Positions shown (0 is always [CLS], an outlier)", 0, len(table), (1, 128),
                       key="pos_span", **BIND)
    lo, hi = min(lo, len(table) - 3), max(hi, min(lo, len(table) - 3) + 3)  # PCA needs 3+ positions
    ours, theirs = table[lo:hi], P.sinusoidal(hi, table.shape[1] + table.shape[1] % 2)[lo:]
    for title, tab, tag in ((f"Learned ({bert})", ours, "learned"), ("Sinusoidal, same size", theirs, "sinusoid")):
        coords, explained, cosine = structure(tab)
        side_by_side((V.table_heatmap(tab, title, lo), f"{tag}_table"),
                     (V.similarity_heatmap(cosine, f"{title}: cosine", "cos", lo), f"{tag}_cos"),
                     (V.pca_curve(coords, explained, f"{title}: PC1 vs PC2", lo), f"{tag}_pca"))
    show.explain(*P.EXPLAINED["learned"])

def _rope() -> None:
    c1, c2, c3 = st.columns(3)
    d_rope = c1.slider("Head size", 4, 128, 32, step=2, key="pos_rope_d", **BIND)
    n_rope = c2.slider("Positions", 4, 128, 32, key="pos_rope_n", **BIND)
    seed = c3.number_input("Seed for q and k", 0, 10_000, 0, key="pos_rope_seed", **BIND)
    q, kv = torch.randn(2, d_rope, dtype=torch.float64, generator=torch.Generator().manual_seed(int(seed)))
    rotated = P.rope(q.expand(n_rope, -1), torch.arange(n_rope)).numpy()  # (P, D): q placed at 0..P-1
    scores = P.rope_scores(q, kv, n_rope)  # (P, P)
    side_by_side((V.rope_rotation_plot(rotated, [0, 1, 2]), "rope_rotation"))
    side_by_side((V.rope_scores_heatmap(scores.numpy()), "rope_scores"),
                 (V.rope_offset_plot(scores.numpy(), [0, n_rope // 4, n_rope // 2]), "rope_offsets"))
    st.metric("Largest spread of q\u00b7k among equal offsets n \u2212 m", f"{P.offset_spread(scores):.1e}")
    show.explain(*P.EXPLAINED["rope"])

def _why() -> None:
    sentence = st.text_input("Sentence (try one with a repeated word)", "the man walked the dog",
                             key="pos_demo_text", **BIND)
    tokens, vectors, n_all = word_vectors(bert, sel.device, sel.dtype, sentence) if sentence.strip() else ([], None, 0)
    if len(tokens) < 2:
        st.info("Type at least two words to run the toy attention.")
        return
    if n_all > len(tokens):
        st.info(f"This sentence has {n_all} tokens; the demo uses its first {len(tokens)}, so that each row of the "
                "heatmaps stays readable.")
    weights = {key: w.numpy() for key, (_, w) in P.permutation_demo(vectors).items()}  # (T, T) each
    side_by_side(*((V.attention_heatmap(w, tokens, f"Q = K = V = words, {key} positions"), f"why_{key}")
                   for key, w in weights.items()))
    if pair := P.repeated_token(tokens):
        for col, w in zip(st.columns(2), weights.values()):
            col.metric(f"max |row {pair[0]} \u2212 row {pair[1]}| (both '{tokens[pair[0]]}')",
                       f"{np.abs(w[pair[0]] - w[pair[1]]).max():.3f}")
    idea, math, code = P.EXPLAINED["why"]
    show.explain(idea.format(model=bert), math, code)


for tab, draw in zip(tabs, (_sinusoids, _shift, _learned, _rope, _why)):
    if tab.open:  # only the open tab runs; the others' widgets keep their state (persist_state)
        with tab:
            draw()
