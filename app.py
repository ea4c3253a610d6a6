"""Attention Explorer: the frame. Navigation over views/ and the shared sidebar; nothing heavy at import."""
from __future__ import annotations

import streamlit as st

import limits
from models import HF_PREFIX, available, checkpoint_key
from models.devices import available_devices, dtypes_for
from ui.classroom import lesson, links, presenter, share
from ui.export import image_format_picker
from ui.runtime import errors, preload, streamlit_private, warm
from ui.state import BIND, DEFAULT_MODEL, DEFAULT_TEXT, MODEL_LABELS
from ui.views import pages, present

# the tab's icon, a magnifying glass drawn in the page's focus blue: an image (a data URL), not an emoji, since
# Streamlit checks an emoji against its emoji catalog, whose first load (~0.4 s) held up the first page's run. Set at
# the end of a run: Streamlit imports numpy and PIL to read any image icon (~0.05 s on a server's first run)
PAGE_ICON = ("data:image/svg+xml,<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 32 32'>"  # %23: '#'
             "<circle cx='13' cy='13' r='9' fill='none' stroke='%230072B2' stroke-width='4'/><line x1='20' y1='20' "
             "x2='29' y2='29' stroke='%230072B2' stroke-width='5' stroke-linecap='round'/></svg>")


def sidebar() -> None:
    """The inputs every view shares; their keys are the contract (text, text_b, model, device) and the
    names of their query parameters (ui.state.BIND: a link restores them through the URL, and the server keeps
    them across views, persist_state, even when a view is picked before the browser has sent them back)."""
    caps = limits.current()
    with st.sidebar:  # lesson steps and switch buttons set these through session state (see .streamlit/config.toml)
        st.text_area("Text", DEFAULT_TEXT, key="text", height=100, max_chars=caps.text_chars, **BIND)
        st.text_input("Second sentence (optional)", key="text_b", max_chars=caps.text_chars, **BIND,
                      help="For BERT: builds a sentence pair [CLS] A [SEP] B [SEP] with token_type_ids. "
                           "For an encoder-decoder: the target its decoder reads instead of writing its own.")
        options = available() + [HF_PREFIX]
        held = checkpoint_key(st.session_state.get("model") or st.query_params.get("model", ""))
        if held:  # one checkpoint of a model trained in steps (the Induction view opens one): offered while picked
            options.append(f"{held[0]}@{held[1]}")
        model = st.selectbox("Model", options, index=options.index(DEFAULT_MODEL) if DEFAULT_MODEL in options else 0,
                             key="model", **BIND)
        st.caption(("Any model by hub id…" if not caps.local_models else MODEL_LABELS[HF_PREFIX])
                   if model == HF_PREFIX else f"{MODEL_LABELS[held[0]]} · its checkpoint at step {held[1]:,}"
                   if held and model == options[-1] else MODEL_LABELS.get(model, model))
        if model == HF_PREFIX:
            where = "Folder or hub id" if caps.local_models else "Hub id"
            st.text_input(where, key="hf_spec", **BIND,
                          placeholder="e.g. ./my-llama or bert-base-uncased" if caps.local_models
                          else "e.g. bert-base-uncased",
                          help="Any text model transformers builds: an encoder (BERT, RoBERTa, XLM-R, DeBERTa-v2, "
                               "ModernBERT, …), decoder (GPT-2, Llama, Mistral, Qwen, Gemma, Phi-3, OPT, Falcon, …), "
                               "encoder-decoder (T5, BART, Marian, …) or vision transformer (ViT, DeiT), with "
                               ".safetensors weights; a hub id needs a network.")
        devices = available_devices()
        if st.session_state.get("device", devices[0]) not in devices:  # e.g. saved on a machine with a GPU
            st.caption(f"Device {str(st.session_state['device'])[:20]!r} is not available here; using cpu.")
            st.session_state["device"] = devices[0]
        device = st.selectbox("Device", devices, key="device", **BIND)
        dtypes = dtypes_for(device)
        if len(dtypes) > 1:
            st.selectbox("Precision", dtypes, key="dtype", **BIND)
        else:
            st.session_state["dtype"] = dtypes[0]
        image_format_picker()
        st.divider()
        presenter.toggle()
        lesson.picker()


st.set_page_config(page_title="Attention Explorer", layout="wide",
                   initial_sidebar_state="collapsed" if presenter.requested() else "auto")
errors.hide_details()  # hosted: a visitor sees that an error happened, the log has its traceback
streamlit_private.refuse_endless_numbers()  # before any widget reads the link
first_run = share.arrived()
views = pages()
missing = share.claim_missing_page({v.url_path for v in views}) if first_run else None  # the home page runs
page = st.navigation(views, expanded=True)  # every view listed: past ten Streamlit hides the rest
st.set_page_config(page_title="Attention Explorer" if page.url_path in ("", "home") else
                   f"{page.title} · Attention Explorer")  # the browser's tab and a screen reader name the view
if first_run:  # before any widget binds a parameter, so that a switch can carry the whole link
    lesson.arrive(share.link(), page.url_path)
link_notice = st.empty()
links.take(available() + [HF_PREFIX], limits.current().text_chars)  # an example clicked in this session
sidebar()
preload.browser()  # the browser loads the elements' code while idle, not on a view's first visit
presenter.style()
st.html(streamlit_private.PAGE_STYLE)
st.html(streamlit_private.FOCUS_HEADING_JS, unsafe_allow_javascript=True)
# light, or not known yet on a session's first run: the default theme
st.html(streamlit_private.DARK_TEXT_STYLE if st.context.theme.type == "dark" else streamlit_private.LIGHT_TEXT_STYLE)


prefix = next((v.prefix for v in present() if v.stem == (page.url_path or "home")), "")


def show_notice(finished: bool) -> None:
    """The link's one notice. Once the view has run to its end, a setting of it not on screen was not used; when it
    stopped before, a setting whose widget is not drawn yet waits for a later run."""
    with link_notice.container():
        share.notice(share.unused(tuple(v.prefix for v in present() if v.prefix), prefix if finished else "",
                                  "" if finished else prefix), missing)


streamlit_private.before_stop(lambda: show_notice(False))  # a view's st.stop() blocks every later element
finished = False
try:
    if page.url_path:  # every view but the home page: wait for the one warm-up instead of importing in parallel
        with st.spinner("Starting the server…"):
            warm.wait()
    links.follow(page.url_path)
    lesson.banner(page.url_path)
    page.run()
    finished = True
except Exception as err:  # a UserError's sentence; a bug: hosted, a notice with an id to quote (ui/runtime/errors.py)
    errors.report(err, page.url_path)
finally:  # after a view's st.stop() the hook above has shown the notice already
    streamlit_private.before_stop(None)
    show_notice(finished)
    links.remember()
    # after the page's elements; the browser keeps the icon once set, also through a run that st.stop() cut short
    # (every element after the stop is dropped, this one too)
    st.set_page_config(page_icon=PAGE_ICON)
    # heavy imports and the default model, once per server, on one thread (ui/runtime/warm.py): started once the
    # first page has run, so that its imports (seconds of held GIL) do not hold up the home page's first paint
    warm.start()
