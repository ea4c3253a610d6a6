"""Seq2seq: where a decoder looks while it writes, Bahdanau beside Luong, a transformer's cross-attention beside
Bahdanau with greedy and beam search, and why attention was needed."""
from __future__ import annotations

import streamlit as st

import limits
from experiments import seq2seq as E
from limits.errors import UserError
from models import seq2seq
from ui import seq2seq as U
from ui import show, state
from ui.family import BIND
from ui.runtime import cache
from viz.seq2seq import accuracy_by_length, alignment, step_bars

length_figures = cache.memo("results")(E.length_figures)


@cache.memo("results")
def decode(name: str, device: str, dtype: str, text: str, beam: int) -> seq2seq.Decoded:
    return cache.model(name, device, dtype).decode(text, beam)


def try_decode(name: str, text: str, beam: int = 1) -> seq2seq.Decoded | None:
    """Decode, or show the model's one-sentence reason (once per run: two models refuse alike) and return None."""
    try:
        return decode(name, device, dtype, text, beam)
    except UserError as err:
        if str(err) not in said:
            said.add(str(err))
            st.error(str(err))
        return None


said: set[str] = set()  # reasons already shown in this run (the script reruns from the top each time)


device = st.session_state.get("device", "cpu")
dtype = st.session_state.get("dtype", "float32")
st.title("Seq2seq attention")
st.markdown(
    "An encoder-decoder RNN reads your text one character at a time (a bidirectional GRU), then a GRU "
    "decoder writes the ISO 8601 date one character at a time. At every step attention decides which "
    "input characters to read: each row of a heatmap is one output character, and sums to 1.")

left, right = st.columns([3, 1])
text = left.text_input("A date, written the way people write them", value="Wednesday, the 3rd of March 2021",
                       key="s2s_date", bind="query-params",
                       help="Day month year, month day year, ordinals, weekdays, abbreviations.")
beam = right.number_input("Beam width", min_value=1, max_value=limits.current().beam_width, value=1,
                          key="s2s_beam", bind="query-params",
                          help="1 is greedy decoding: the likeliest character at each step.")

def dates_section(text: str, beam: int) -> None:
    """Both attentions on the same input, a shared decoding step, and the no-attention model's answer."""
    results = {name: try_decode(name, text, beam) for name in E.SCORING}
    if any(r is None for r in results.values()):
        return
    for note in dict.fromkeys(n for r in results.values() for n in r.notices):
        st.warning(note)
    n_steps = max(len(r.output) for r in results.values())
    step = n_steps - 1
    if n_steps > 1:
        state.clamp("s2s_step", 1, n_steps)
        step = st.slider("Decoding step", 1, n_steps, n_steps, key="s2s_step", **BIND,
                         help="Slide back to watch the output being written, one character per step.") - 1
    for col, (name, res) in zip(st.columns(2), results.items()):
        title, how, formula, code = E.SCORING[name]
        with col:
            st.header(title)
            st.caption(how)
            st.markdown(f"${formula}$")  # inline KaTeX: a display box overflowed by 2 px, a scroller no key could reach
            st.code(code, language="python", wrap_lines=True)
            st.metric("Output", "".join(res.output) or "(nothing)")
            if res.output:
                shown = min(step, len(res.output) - 1)
                show.plot(alignment(res.source, res.output, res.weights, step=shown), f"seq2seq-{name}-alignment",
                          key=f"{name}-map")
                show.plot(step_bars(res.source, res.weights, res.output, shown), f"seq2seq-{name}-step",
                          key=f"{name}-step")
    fixed = try_decode("seq2seq-none", text)
    if fixed is not None:
        st.caption(f"The same network without attention (one fixed context vector) writes "
                   f"**{''.join(fixed.output)}**: dates are short enough that a single vector can carry them.")


def bottleneck_section() -> None:
    """Attention against one fixed context vector on long inputs: accuracy by length, and a string to reverse."""
    st.header("The bottleneck, measured")
    st.markdown(
        "Bahdanau et al. (2015, Fig. 2) showed that an encoder-decoder without attention falls apart as sentences get "
        "longer, because everything must pass through one fixed-size vector. The same holds here on a task with long "
        "inputs: two models of the same size (128 units), one with Luong attention and one with a fixed context "
        "vector, trained for the same number of steps to reverse random strings of 4–60 letters, scored on 20 "
        "fresh random strings of every length.")
    figures = length_figures()["reverse"]
    show.plot(accuracy_by_length(figures["lengths"], {"with attention": figures["reverse-attention"],
                                                      "no attention (fixed context)": figures["reverse-none"]}),
              "seq2seq-bottleneck", key="bottleneck")
    st.caption(f"Exact match on strings of {E.LONG}–60 letters: with attention "
               f"{E.long_exact(figures, 'reverse-attention'):.0%}, without "
               f"{E.long_exact(figures, 'reverse-none'):.0%}.")

    letters = st.text_input("Letters to reverse (a–z, up to 60)", value="attentionisallyouneedbutcontextvectorsarenot",
                            key="s2s_reverse", **BIND)
    pair = {name: try_decode(name, letters) for name in ("reverse-attention", "reverse-none")}
    if all(pair.values()):
        for note in pair["reverse-attention"].notices:
            st.warning(note)
        target = "".join(pair["reverse-attention"].source)[::-1]
        for name, label in (("reverse-attention", "With attention"), ("reverse-none", "Without attention")):
            out = "".join(pair[name].output)
            mark = "✅ right" if out == target else "❌ wrong"
            st.markdown(f"**{label}** ({mark}): `{out or '(nothing)'}`")
        res = pair["reverse-attention"]
        if res.output:
            show.plot(alignment(res.source, res.output, res.weights,
                                title="With attention: reversing reads the input back to front"),
                      "seq2seq-reverse-alignment", key="reverse-map")


tabs = st.tabs(["Bahdanau and Luong", "Transformer and beam search", "Without attention: the bottleneck"],
               key="s2s_tab", bind="query-params")  # only the open tab runs; the others keep their settings
for tab, draw in zip(tabs, (lambda: dates_section(text, int(beam)),
                            lambda: U.section(text, int(beam), try_decode("seq2seq-bahdanau", text)),
                            bottleneck_section)):
    if tab.open:
        with tab:
            draw()
