"""Pieces of the Next token view: which model it can show, the steps a student appended (kept per session, so they
can go back), the cached decomposition, and the sections drawn from them.

The steps live in st.session_state under STEPS, keyed by (model, device, dtype, text): a list of
experiments.next_token.Choice. Appending runs as a ui.runtime.work job (progress, cancel), its size checked against the
work budget first; nothing is kept on the shared model. Figures come from viz.next_token.
"""
from __future__ import annotations

import streamlit as st
import torch

import limits
from analysis.tokens import readable
from experiments.logit_lens import decompose_ids, encode, token_id
from experiments.next_token import Settings, extend, last_logits, room, stages
from models import block
from models.residual import why_not
from ui import family, show
from ui import patching as patch_ui
from ui.classroom import links
from ui.runtime import cache, heavy, work
from ui.state import Selection
from viz.next_token import dla_bars, dla_heatmap, lens_figure, path_figure, probs_figure, writes_figure

STEPS = "_nt_steps"
BIND = dict(bind="query-params", persist_state="session")


def usable(sel: Selection) -> tuple[object, str | None] | None:
    """(the sidebar's model, why its logit cannot be split or None) when it predicts a next token and the text can be
    read, else None after one sentence (and, for a model that cannot, buttons that switch to one that can). A decoder
    whose logit cannot be split (a post-norm decoder, one whose attention bypasses the capture...) is usable: its
    probabilities and appending need no split, and the whole block, the lens and direct logit attribution say why."""
    model = family.loaded(sel)
    if model is None:
        return None
    why = why_not(model)
    if why and not predicts_next(model):
        family.switch(why, ["gpt", "tiny"], "nt")
        return None
    if not sel.text.strip():
        st.info("Type a text in the sidebar: this view shows what the model predicts after it.")
        return None
    family.task_note(sel.model, {"text": sel.text}, "nt")
    return model, why


def predicts_next(model) -> bool:
    """Whether the model is a decoder with its language-model head (the tiny decoder included), split or not, or a
    BERT-style causal LM that writes (never split: it norms its residual after each add)."""
    return model.family == "tiny" or (model.family == "decoder" and model.predicts == "next token") or \
        (model.family == "encoder" and model.writes)


@cache.memo("results", spinner="Reading the prompt…")
def prompt(name: str, device: str, dtype: str, text: str) -> tuple[tuple[int, ...], tuple[str, ...]]:
    ids, notes = encode(cache.model(name, device, dtype), text)
    return tuple(ids[0].tolist()), notes


@cache.memo("results", spinner="Splitting the logit…")
def decomposition(name: str, device: str, dtype: str, ids: tuple[int, ...], target: str | None):
    model = cache.model(name, device, dtype)
    return decompose_ids(model, _tensor(model, ids), None if target is None else token_id(model, target))


@cache.memo("results")
def logits(name: str, device: str, dtype: str, ids: tuple[int, ...]):
    model = cache.model(name, device, dtype)
    return last_logits(model, _tensor(model, ids))


def _tensor(model, ids: tuple[int, ...]) -> torch.Tensor:
    return torch.tensor([list(ids)], device=model.device)  # (1, T)


def _key(sel: Selection) -> tuple:
    return sel.model, sel.device, sel.dtype, sel.text


def kept(sel: Selection) -> list:
    """The steps appended to this text with this model (a new list for a new text or model)."""
    key = _key(sel)
    store = st.session_state.setdefault(STEPS, {})
    if key not in store:
        store.clear()  # one text's steps at a time
        store[key] = []
    return store[key]


def settings() -> Settings:
    c = st.columns([2, 2, 2, 2, 1])
    mode = c[0].radio("Choose by", ["sampling", "greedy"], key="nt_mode", horizontal=True, **BIND)
    t = c[1].slider("Temperature", 0.0, 2.0, 1.0, 0.05, key="nt_temp", **BIND,
                    help="Divides the logits: below 1 sharpens, above 1 flattens; 0 means greedy.")
    k = c[2].number_input("Top-k (0 = off)", 0, 100_000, 0, key="nt_topk", **BIND,
                          help="Keep only the k largest logits; more than the vocabulary keeps them all.")
    p = c[3].slider("Top-p", 0.0, 1.0, 1.0, 0.01, key="nt_topp", **BIND,
                    help="Keep the most likely tokens whose probabilities sum to p; 0 keeps only the top token.")
    seed = c[4].number_input("Seed", 0, 10_000, 0, key="nt_seed", **BIND)
    if t == 0 and mode == "sampling":
        st.caption("Temperature 0 means greedy: all the probability goes to the top token.")
    return Settings(t, int(k) or None, p, mode == "sampling", int(seed))


def probabilities(model, sel: Selection, ids: tuple[int, ...], s: Settings) -> None:
    """The chart of the top tokens after each filter."""
    raw = logits(sel.model, sel.device, sel.dtype, ids)
    st_ = stages(raw, s)
    names = family_tokens(model, st_["ids"])
    show.plot(probs_figure(names, st_), "next_token_probs", key="nt_probs_fig", table=True)
    kept_n = int((stages(raw, s, n=len(raw))["top-p"] > 0).sum())
    st.caption(f"{kept_n:,} of {len(raw):,} tokens keep a probability above 0 after the filters; the chart draws the "
               f"{len(names)} with the largest logits.")


def family_tokens(model, ids) -> list[str]:
    from experiments.logit_lens import token_names

    return token_names(model, [int(i) for i in ids])


def append(model, sel: Selection, ids: tuple[int, ...], s: Settings, steps: list, at: int) -> None:
    """The append-and-continue controls: n tokens with one KV cache, as a job within the work budget."""
    left = room(model) - len(ids)
    if left < 1:
        st.info(f"The text fills the model's {room(model)} positions: go back a few steps to continue.")
        return
    cap = min(limits.current().new_tokens, left)
    n = int(st.number_input("Tokens to append", 1, cap, min(4, cap), key="nt_n", **BIND))
    params = sum(p.numel() for p in (model.net if model.family == "tiny" else model.next_token_model).parameters())
    budget = work.Budget(2 * params * (len(ids) + n) / 1e9, limits.current().request_gflop, "GFLOP",
                         "append fewer tokens or use a smaller model")
    key = _key(sel)
    heavy.run("nt_extend", (key, at, ids, n, s), "Appending…",  # progress and Cancel; `collect` takes the result
              lambda progress: (key, at, extend(model, _tensor(model, ids), n, s, progress)), budget=budget,
              ask=heavy.Ask("nt_go", "Append and continue", icon="➕"), keep=False)


def collect(sel: Selection, steps: list) -> None:
    """Before the step slider: put a finished append's tokens into the steps (replacing those after the step it
    started from) and move the slider to the last one; a failure is one sentence."""
    job = work.job("nt_extend")
    if job is None or not job.finished:
        return
    work.forget("nt_extend")
    if job.state == "failed":
        st.error(job.error)
    elif job.state == "done" and job.result[0] == _key(sel):
        _, start, new = job.result
        del steps[start:]
        steps.extend(new)
        st.session_state["nt_at"] = len(steps)


def block_sentence(b, L: int, H: int) -> str:
    """One layer's stages in order, from models.block: '**embedding** → 2 × [ norm → attention (4 heads, ...) → add
    → norm → MLP → add ] → final norm → unembedding → **logits**'."""
    attn = f"attention ({H} heads, each writing its own output)"
    if b.parallel:
        side = (f"norm → {attn} and MLP side by side, both reading that one normed input" if b.norms == 1 else
                f"norm → {attn}, beside it norm → MLP, both reading the same input")
        layer = f"{side} → add both"
    else:
        def part(name: str) -> str:
            return " → ".join([*(["norm"] if b.pre else []), name, *(["norm"] if b.post else []), "add",
                               *(["norm"] if b.after_add else [])])
        layer = f"{part(attn)} → {part('MLP')}"
    if b.without:  # a hybrid: its other layers sit between the attending ones
        return (f"**embedding** → {b.layers} layers in the model's own order: {L} with attention, each "
                f"[ {layer} ], and {b.layers - L} without attention weights ({', '.join(b.without)}), whose own "
                "parts also add to the residual → final norm → unembedding → **logits**. The residual stream is what "
                "every stage adds to.")
    return (f"**embedding** → {L} × [ {layer} ] → final norm → unembedding → **logits**. The residual stream is what "
            "every stage adds to.")


EMBEDDING = {
    "rotary": "the token's vector only: RoPE rotates Q and K inside each head instead of adding a position here.",
    "alibi": "the token's vector only: ALiBi adds a penalty growing with distance to each head's scores instead of "
             "adding a position here.",
    "learned": "the token's vector plus its learned position's.",
    "sinusoidal": "the token's vector plus its position's fixed sinusoidal vector (not learned).",
    "none": "the token's vector only: this model adds no position vector.",
}


def path_section(d, model) -> None:
    L, H = d.heads.shape
    b = block.of(model)
    st.markdown(block_sentence(b, L, H))
    show.plot(path_figure(d.stages), "next_token_path", key="nt_path_fig")
    show.plot(writes_figure(d.writes), "next_token_writes", key="nt_writes_fig")
    st.caption("Embedding: " + EMBEDDING[b.positions])
    c = st.columns(4)
    c[0].page_link(links.path("bpe"), label="Tokens: BPE merges", icon="🧩")
    c[1].page_link(links.path("positional"), label="Positions", icon="📍")
    c[2].page_link(links.path("heads"), label="Attention: every head", icon="🔲")
    c[3].page_link(links.path("inside_head"), label="Inside a head", icon="🧮")


def lens_section(d) -> None:
    show.plot(lens_figure(d.lens, d.target, d.lens_target), "next_token_lens", key="nt_lens_fig")
    after = ("an attending layer and the layers without attention that follow it (this hybrid's others have no row "
             "of their own)" if d.hybrid else "one layer")
    st.caption(f"Each row reads the residual stream after {after} through the final norm and the unembedding, as "
               "if the model stopped there; the last row is the model's own prediction.")


def open_head(model_key: str, layer: int, head: int, digits: str) -> None:
    """Button callback: Inside a head on this layer and head. Its model choice is left out: it starts on the
    sidebar's model, which is this one."""
    if model_key == "tiny":
        links.request("inside_head", {"ih_tiny_layer": f"L{layer}", "ih_tiny_head": f"H{head}", "ih_digits": digits})
    else:
        links.request("inside_head", {"ih_bert_layer": f"L{layer}", "ih_bert_head": f"H{head}"})


def dla_section(d, sel: Selection) -> None:
    why = patch_ui.inside_refusal(sel.model, cache.model(sel.model, sel.device, sel.dtype))  # the model shown here
    c1, c2 = st.columns(2)
    with c1:
        show.plot(dla_bars(d.parts, d.target), "next_token_dla", key="nt_dla_bars", table=True)
    with c2:  # a click picks a head only where Inside a head can open it
        event = show.plot(dla_heatmap(d.heads, d.target), "next_token_dla_heads", key="nt_dla_heads", table=True,
                          **({} if why else dict(on_select="rerun", selection_mode="points")))
    if why is None:
        points = event["selection"]["points"] if event and event["selection"]["points"] else []
        L, H = d.heads.shape
        if points:  # a click moves the boxes below to the clicked head
            st.session_state["nt_pick_layer"], st.session_state["nt_pick_head"] = (
                int(v) for v in points[0]["customdata"])
        layer, head = show.head_picker(L, H, divmod(int(abs(d.heads).argmax()), H), "nt_pick")
        patch_ui.inside_button(st, why, f"Look inside L{layer} H{head}", key="nt_open_head", on_click=open_head,
                               args=(sel.model, layer, head, sel.text))
    else:  # no boxes to pick a head that cannot be opened: Inside a head's sentence instead
        st.caption(patch_ui.inside_note(why))
    which = "the logit before the cap" if d.cap is not None else "the model's own logit"
    st.success(f"The parts sum to {d.total:.6f}; {which} of “{readable(d.target)}” is {d.logit:.6f} "
               f"(difference {abs(d.total - d.logit):.1e})"
               + ("." if d.cap is None else f"; after the cap the model's own is {d.own:.6f}."))
    for note in d.notices:  # e.g. a final cap: the parts explain the logit before it
        st.info(note)
    st.caption(("" if why else "Click a head in the grid, or pick it in the boxes, to look inside it. ") +
               "“Direct” counts only each part's own path to the logit, with the final norm's scale frozen at its "
               "value on this input. What a head changes in the inputs of later layers (their attention and MLPs) "
               "is not in its bar: that indirect effect needs patching. An MLP's bar is its whole output, its bias "
               "included, not split among neurons; the bias bar holds the attention output projections' biases and "
               "the final norm's β, where the model has them (0 where it has neither).")


def logit_metric(d, where) -> None:
    """The target's logit: the model's own, or where it caps its logits the one before the cap the parts explain."""
    if d.cap is None:
        where.metric(f"Logit of “{readable(d.target)}”", f"{d.logit:.3f}",
                     help="The model's own logit at the last position.")
    else:
        where.metric(f"Logit of “{readable(d.target)}” before the cap", f"{d.logit:.3f}",
                     help=f"The logit at the last position before the model's final cap {d.cap:g} · tanh(z / "
                     f"{d.cap:g}); the model's own, after it, is {d.own:.3f}.")


def text_of(model, ids) -> str:
    """The tokens as text: a transformers tokenizer decodes them, the tiny decoder's are characters."""
    if model.tokenizer is not None:
        return model.tokenizer.decode(list(ids))
    return "".join(family_tokens(model, ids))


def steps_table(steps: list, at: int) -> None:
    rows = [{"step": i + 1, "token": readable(c.token), "model's probability": round(c.model_prob, 4),
             "after the filters": round(c.prob, 4), "ms": round(c.ms, 1), "kept": i < at} for i, c in enumerate(steps)]
    st.dataframe(rows, hide_index=True, height=min(36 * (len(rows) + 1), 250), key="nt_steps_table")
