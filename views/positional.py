"""Positional encodings: sinusoids, PE(pos+k) as a rotation, BERT's learned table, RoPE, and why
attention needs positions at all. Reads the sidebar's model only to pick which BERT to inspect."""
import numpy as np
import streamlit as st
import torch

from analysis import positional as P
from limits.errors import UserError
from ui import family, show, state
from ui.positional import learned_table, side_by_side, structure, word_vectors
from ui.runtime import cache
from ui.state import BIND
from viz import positional as V

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
    show.explain(
        "Each pair of dimensions is a sine and a cosine of the position at one frequency; frequencies fall "
        "geometrically, so early dimensions tick fast and late ones slowly, like the hands of a clock. "
        "The dot product of two encodings depends only on how far apart they are.",
        r"PE_{(pos,2i)} = \sin\!\left(\frac{pos}{10000^{2i/d}}\right),\quad "
        r"PE_{(pos,2i+1)} = \cos\!\left(\frac{pos}{10000^{2i/d}}\right),\quad "
        r"PE_{pos}\cdot PE_{pos+k} = \sum_i \cos(\omega_i k)",
        "angles = pos[:, None] / 10000 ** (np.arange(0, d, 2) / d)  # (P, D/2)\n"
        "pe[:, 0::2], pe[:, 1::2] = np.sin(angles), np.cos(angles)",
    )

def _shift() -> None:
    n_pos, d_model = st.session_state.get("pos_n", 100), st.session_state.get("pos_d", 20)  # as on Sinusoids
    state.clamp("pos_k", 1, n_pos - 1)
    k = st.slider("Offset k", 1, n_pos - 1, min(5, n_pos - 1), key="pos_k", **BIND)
    side_by_side((V.shift_matrix_heatmap(P.shift_matrix(k, d_model), k), "shift_matrix"))
    st.metric("max |PE(pos+k) \u2212 M\u2096 PE(pos)|, float64", f"{P.shift_error(k, n_pos, d_model):.1e}")
    show.explain(
        "Moving k positions forward turns every sin/cos pair by the same angle, whatever the position. "
        "So PE(pos+k) is one fixed matrix times PE(pos): a layer can learn to look k tokens away.",
        r"\begin{pmatrix}\sin\omega(p+k)\\ \cos\omega(p+k)\end{pmatrix} = "
        r"\begin{pmatrix}\cos\omega k & \sin\omega k\\ -\sin\omega k & \cos\omega k\end{pmatrix}"
        r"\begin{pmatrix}\sin\omega p\\ \cos\omega p\end{pmatrix}",
        "m[2i, 2i], m[2i, 2i+1] = cos(w*k), sin(w*k)\nm[2i+1, 2i], m[2i+1, 2i+1] = -sin(w*k), cos(w*k)",
    )

def _learned() -> None:
    table = learned_table(bert, sel.device, sel.dtype)
    if table is None:
        st.info(f"{bert} has no learned absolute position table (embeddings.position_embeddings).")
    else:
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
        show.explain(
            "BERT learns one vector per position instead of using a formula. Neighbouring positions still end "
            "up similar (the bright diagonal band, with fainter parallel stripes: a periodic part), and "
            "consecutive positions form a continuous path on the first two principal components. Nothing in "
            "training asked for that order; position 0, always [CLS], is learned as a thing apart.",
            r"x_{pos} = E_{\text{word}}[t_{pos}] + E_{\text{pos}}[pos] + E_{\text{type}}[s_{pos}]",
            "table = model.embeddings.position_embeddings.weight  # (512, D)\n"
            "u, s, _ = np.linalg.svd(table - table.mean(0)); pcs = u[:, :2] * s[:2]",
        )

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
    show.explain(
        "RoPE adds nothing to the embeddings: it rotates each pair of query and key dimensions by an "
        "angle proportional to the position. A dot product of two rotated vectors only sees the "
        "difference of the angles, so attention scores depend on the offset n \u2212 m, never on m itself.",
        r"\langle R_m q,\, R_n k\rangle = \langle q,\, R_{n-m} k\rangle,\quad "
        r"R_m = \operatorname{diag}\!\left(\begin{pmatrix}\cos m\omega_i & -\sin m\omega_i\\ "
        r"\sin m\omega_i & \cos m\omega_i\end{pmatrix}\right)",
        "x0, x1 = x[..., 0::2], x[..., 1::2]  # (T, D/2)\n"
        "out[..., 0::2] = x0 * cos - x1 * sin\nout[..., 1::2] = x0 * sin + x1 * cos",
    )

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
    show.explain(
        f"Queries, keys and values are the {bert} model's static word vectors (times \u221ad, as in the paper). "
        "A repeated word gets the same query, key and value wherever it stands, so its rows are identical: "
        "shuffling the words only shuffles the rows. Adding sinusoidal positions makes the copies different "
        "vectors, and each copy attends more to itself.",
        r"\mathrm{softmax}\!\left(\frac{XX^\top}{\sqrt d}\right)X,\qquad X = \sqrt d\,E[t] \;\;\text{or}\;\; "
        r"X = \sqrt d\,E[t] + PE",
        "x = words * math.sqrt(d)  # (T, D)\n"
        "w = torch.softmax(x @ x.T / math.sqrt(d), -1)  # (T, T)\nout = w @ x",
    )


for tab, draw in zip(tabs, (_sinusoids, _shift, _learned, _rope, _why)):
    if tab.open:  # only the open tab runs; the others' widgets keep their state (persist_state)
        with tab:
            draw()
