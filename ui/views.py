"""The app's views in menu order: file, title, icon and one line on what each shows.

app.py builds the navigation from it and the home view its list; a view is listed once its file exists. Both
look at the disk once per server process: every page run asks for them.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

VIEWS_DIR = Path(__file__).resolve().parent.parent / "views"


@dataclass(frozen=True)
class View:
    stem: str
    title: str
    icon: str    # a Material Symbols name (":material/home:"), drawn with the font Streamlit serves itself; not an
    # emoji: checking an emoji loads Streamlit's emoji catalog (~0.4 s of the server, the first page's run held up)
    prefix: str  # every widget key of the view starts with it: its query parameters (ui.classroom.share)
    line: str

    @property
    def path(self) -> str:
        return f"views/{self.stem}.py"


VIEWS = (
    View("home", "Home", ":material/home:", "", "what each view shows."),
    View("examples", "Examples", ":material/school:", "", "prepared links for a class, and the guided lesson's path."),
    View("print_lesson", "Lesson to print", ":material/print:", "",
         "the guided lesson on paper: each step's question and figure, and a teacher sheet with the answers."),
    # no setting in the URL: a class's key must never land in a link
    View("classroom", "Class", ":material/groups:", "",
         "students join with a code and answer the lesson's questions; the teacher sees how the class did, live."),
    View("heads", "Heads", ":material/grid_view:", "heads_",
         "every layer × head as a grid of heatmaps; pick one head to see it large with its tokens."),
    View("corpus", "Heads across a corpus", ":material/library_books:", "corpus_",
         "what each head does over many sentences: behaviours, queries and keys, search, similar heads."),
    View("finder", "Find a head", ":material/search:", "find_",
         "rank every head by what it does: previous token, [CLS], punctuation, a pronoun's noun…"),
    View("graph", "Graph", ":material/hub:", "graph_",
         "attention as a graph of tokens, and how it mixes across layers: rollout and exact flow."),
    View("inside_head", "Inside a head", ":material/calculate:", "ih_",
         "Q, K, V, scores, scaling, mask and softmax of one head, step by step."),
    View("next_token", "Next token", ":material/arrow_right_alt:", "nt_",
         "what a decoder predicts: the whole block, temperature, top-k and top-p, the logit lens and each head's "
         "share of the next token."),
    View("induction", "Induction heads", ":material/repeat:", "ind_",
         "watch induction heads form during training, checkpoint by checkpoint, and knock out the head they need."),
    View("seq2seq", "Seq2seq", ":material/translate:", "s2s_",
         "where a decoder looks while it writes a date: Bahdanau, Luong and transformer cross-attention, "
         "greedy and beam search."),
    View("vision", "Vision", ":material/image:", "vis_",
         "a vision transformer reads an image as patches: each head's attention painted on it, and rollout."),
    View("positional", "Positions", ":material/location_on:", "pos_",
         "sinusoidal, learned and rotary positions, and why attention needs them."),
    View("bpe", "BPE merges", ":material/extension:", "bpe_", "how byte-pair encoding builds tokens, merge by merge."),
    View("kv_cache", "KV cache", ":material/storage:", "kv_",
         "what caching keys and values saves, measured live: memory and latency."),
    View("sinks", "Attention sinks", ":material/anchor:", "sink_",
         "how much attention lands on the first tokens, and streaming a long text with a window + sink cache."),
    View("sparse", "Sparse attention", ":material/grain:", "eff_",
         "sliding window, dilated, block-sparse, Longformer and BigBird patterns: pairs, reach, and their effect "
         "on the real model, with measured cost."),
    View("tiled", "Tiled attention", ":material/view_compact:", "eff_",
         "FlashAttention's online softmax step by step on a real head, and the memory it saves, measured."),
    View("attribution", "Attribution", ":material/track_changes:", "attr_",
         "does attention explain the output? attention, rollout and flow beside gradients and occlusion, with "
         "ERASER faithfulness measured."),
    View("pruning", "Pruning", ":material/content_cut:", "prune_", "which heads matter, and what removing them costs."),
    View("patching", "Patching", ":material/healing:", "patch_",
         "causal evidence: copy one head's output from a clean run into a corrupted one and see the answer return."),
    View("circuits", "Circuits", ":material/cable:", "circ_",
         "from heads to circuits: every edge between heads scored by EAP, the circuit drawn, its faithfulness "
         "measured."),
    View("precision", "Precision", ":material/tune:", "quant_",
         "what fp16, bf16, int8 and int4 copies do to each head's attention, and what they save."),
    View("compare", "Compare", ":material/compare:", "cmp_",
         "two sentences side by side: how the same word's attention changes with context."),
)


@functools.cache
def present() -> tuple[View, ...]:
    """The views whose file exists, in menu order (looked up once per process)."""
    return tuple(v for v in VIEWS if (VIEWS_DIR / f"{v.stem}.py").exists())


@functools.cache
def _made_pages() -> tuple:
    import streamlit as st

    return tuple(st.Page(str(VIEWS_DIR / f"{v.stem}.py"), title=v.title, icon=v.icon, default=(v.stem == "home"))
                 for v in present())


def pages() -> list:
    """st.Page objects of the present views for st.navigation. Each call gets its own copies: navigation marks
    the page it will run on the object (per-run state, never shared between sessions: ui.runtime.streamlit_private),
    while making a Page resolves its path on disk, which is done once per process."""
    from ui.runtime import streamlit_private

    return streamlit_private.page_copies(_made_pages())
