"""Home: what Attention Explorer shows, one line and one small picture per view."""
from pathlib import Path

import streamlit as st

SHOTS = Path(__file__).parent.parent / "docs" / "screenshots"
VIEWS = [
    ("heads", "Heads", "every layer × head as a grid of heatmaps; pick one head to see it large with its tokens."),
    ("graph", "Graph", "attention as a graph of tokens, and how it mixes across layers: rollout and exact flow."),
    ("inside_head", "Inside a head", "Q, K, V, scores, scaling, mask and softmax of one head, step by step."),
    ("seq2seq", "Seq2seq", "where a GRU decoder looks while it writes a date: Bahdanau and Luong alignments."),
    ("positional", "Positions", "sinusoidal, learned and rotary positions, and why attention needs them."),
    ("bpe", "BPE merges", "how byte-pair encoding builds tokens, merge by merge."),
    ("kv_cache", "KV cache", "what caching keys and values saves, measured live: memory and latency."),
    ("pruning", "Pruning", "which heads matter, and what removing them costs."),
]

st.title("Attention Explorer")
st.markdown(
    "Type a sentence in the sidebar, pick a model and a device, and see what attention does inside it. "
    "Every number comes from the model's own computation; nothing is downloaded."
)
here = {p.stem for p in (Path(__file__).parent).glob("*.py")}
for stem, title, line in [v for v in VIEWS if v[0] in here]:
    pic, words = st.columns([1, 3], vertical_alignment="center")
    shot = SHOTS / f"{stem}.png"
    if shot.exists():
        pic.image(str(shot), width="stretch")
    words.page_link(f"views/{stem}.py", label=f"**{title}**")
    words.write(line)
