"""Cached pieces of the precision view (views/precision.py), keyed by (model, device) and the variant.

A variant is a copy of the cached fp32 model. A copy of a small model (under SMALL_MODEL_BYTES: MiniLM, the
built-ins; made in under a second) lives only for the request that made it (the comparison makes one variant at a
time, runs it and lets it go), and what the page shows of it afterwards (attention compared, sizes, notices) is a
small kept result; so does every copy in hosted mode. On a laptop a copy of a larger model is kept in the
byte-bounded model store (ui.runtime.cache), as making it again would be slow. The cached fp32
model is never cast or quantized. The fp32 reference is always the float32 load, whatever the sidebar's
precision. The measurement moves a progress bar, so it is kept through ui.runtime.heavy.run (st.cache_data would
replay the bar on every rerun).
A vision model is compared on one held-out scikit-learn digit (digit(), picked by number), a text model
on the sidebar's text (clipped()). In hosted mode the comparison runs when asked (variants_on_request: the button
of ui.runtime.heavy, queued with the server's heavy requests); a laptop runs it on every visit.
"""
from __future__ import annotations

import numpy as np
import streamlit as st

import limits
from analysis.precision import biggest, channel_errors
from data import digits
from experiments import own, precision, precision_own
from limits import memory
from limits.errors import UserError
from models import HF_PREFIX, variants
from ui.runtime import cache, heavy, work
from ui.show import plot
from viz.precision import before_after, divergence_grid
from viz.precision import channel_errors as channel_fig

REFERENCE = "float32"


def base(name: str, device: str):
    """The cached fp32 model every variant is copied from."""
    return cache.model(name, device, REFERENCE)


SMALL_MODEL_BYTES = 128 << 20  # copying a model this small (MiniLM: 90 MB) in another precision takes under a second


def keeps_copies(fp32) -> bool:
    """Whether copies of fp32 are kept in the model store: on a laptop, for a model over SMALL_MODEL_BYTES."""
    return not limits.current().hosted and variants.model_bytes(fp32) > SMALL_MODEL_BYTES


def _copy(store_key: tuple, fp32, make):
    """make() (a copy of fp32): kept in the model store when keeps_copies(fp32); else made for this request only,
    never kept (five copies of MiniLM held ~190 MB of a server's memory after one visit). Making a copy of a model
    over SMALL_MODEL_BYTES waits its turn among the server's heavy requests (a small one is a light request: it
    would otherwise wait behind a minutes-long sweep)."""
    heavy = variants.model_bytes(fp32) > SMALL_MODEL_BYTES
    if keeps_copies(fp32):
        return cache.kept(store_key, make, "models", heavy=heavy)
    return work.queued(make) if heavy else make()


def variant(name: str, device: str, key: str):
    """models.variants.make of the cached fp32 model: a copy in precision `key` (fp32 with a notice if it cannot);
    kept (a large model on a laptop) or made anew for each use (_copy). A copy made anew leaves its sizes kept, so
    the table does not make it again."""
    v = _made(name, device, key)
    if not keeps_copies(base(name, device)):
        sizes(name, device, key, v)
    return v


def _made(name: str, device: str, key: str):
    """The copy itself (variant() without keeping its sizes)."""
    fp32 = base(name, device)
    return _copy(("precision-variant", name, device, key), fp32, lambda: variants.make(fp32, key, name))


def notices(name: str, device: str, key: str) -> tuple[str, ...]:
    """What the variant adds to the model's own notices (a fallback, a cost on this device), kept with its sizes."""
    own = set(base(name, device).notices)
    return tuple(n for n in sizes(name, device, key)["notices"] if n not in own)


def clipped(name: str, device: str, text: str, text_b: str | None) -> tuple[str, str | None, int]:
    """The text (and second text) cut to limits' precision_tokens each, and how many tokens were cut."""
    n = limits.current().precision_tokens
    text, cut = precision.clip(base(name, device), text, n)
    if not text_b:
        return text, text_b, cut
    text_b, cut_b = precision.clip(base(name, device), text_b, n)
    return text, text_b, cut + cut_b


@cache.memo("results")
def compared(name: str, device: str, key: str, text: str, text_b: str | None) -> dict:
    """experiments.precision.compare_variant on the (clipped) sidebar text; ValueError (the input) is not cached."""
    ref = cache.trace(name, device, REFERENCE, text, text_b)
    return precision.compare_variant(ref, variant(name, device, key), text, text_b)


def model(name: str, device: str, key: str):
    """The variant `key`; for fp32 the cached model itself (its fp32 copy equals it exactly: tests/models)."""
    return base(name, device) if key == "fp32" else variant(name, device, key)


@cache.memo("results", key=lambda name, device, key, made: (name, device, key))  # the copy is not hashed
def sizes(name: str, device: str, key: str, made=None) -> dict:
    """Bytes of the variant's linear weights, of the whole model, and of its saved state dict, and its notices:
    measured once on one copy (`made`, when the caller holds one; a copy made here goes when this returns unless
    it is kept), kept per server."""
    v = made if made is not None else base(name, device) if key == "fp32" else _made(name, device, key)
    return {"linear": variants.linear_bytes(v), "model": variants.model_bytes(v),
            "disk": variants.disk_bytes(v), "notices": tuple(v.notices)}


def sizes_kept(name: str, device: str, key: str) -> bool:
    """Whether sizes(name, device, key) is kept already (it makes no copy then)."""
    return sizes.peek(name, device, key)[0]


def run_variants(name: str, device: str, keys: list[str], run, progress) -> dict[str, dict]:
    """run(key) for each variant, progress(fraction, title) after each, its notices and errors shown as warnings:
    the results that ran, or {} after st.error when the input is refused (a UserError from the fp32 run)."""
    results = {}
    try:
        for i, key in enumerate(keys):
            results[key] = run(key)
            progress((i + 1) / len(keys), variants.VARIANTS[key].title)
    except UserError as err:
        st.error(str(err))
        return {}
    finally:
        if not keeps_copies(base(name, device)):  # the copies just made are gone: give their pages back
            memory.release_freed(collect=True)
    for note in dict.fromkeys(n for key in keys for n in notices(name, device, key)):
        st.warning(note)
    for r in results.values():
        if "error" in r:
            st.warning(r["error"])
    return {k: r for k, r in results.items() if "error" not in r}


COMPARE = heavy.Ask("quant_go", "Compare the variants' attention on this input", hosted_only=True,
                    help="Runs every chosen variant on this input; the server runs such requests one at a time.",
                    caption="On this server each variant's attention is compared when asked: the button runs them. "
                            "The sizes and the scale figure below need no run.")


def variants_on_request(name: str, device: str, keys: list[str], run, peek, asked: tuple) -> dict[str, dict] | None:
    """run_variants(name, device, keys, run) through ui.runtime.heavy.run: at once when every variant's result is
    kept (peek(key)); else on a laptop, or in hosted mode once this session pressed COMPARE for `asked` (what the
    variants read), after its turn among the server's heavy requests; before that, in hosted mode, the button and
    None: each int8 copy runs the model on this CPU's int8 kernels, the costliest light request of the app."""
    ready = all(peek(k)[0] for k in keys)
    return heavy.run("quant_go", (name, device, tuple(keys), *asked), "Running each variant…",
                     lambda progress: run_variants(name, device, keys, run, progress), ask=None if ready else COMPARE,
                     light=ready, thread=False, keep=False)


def compared_sections(ok: dict[str, dict]) -> None:
    """How far each head's attention moves from fp32, and the biggest changes side by side (run_variants' results)."""
    st.header("How far each head's attention moves from fp32")
    stat = st.radio("Per head", ["mean over tokens", "largest token"], horizontal=True, key="quant_stat",
                    bind="query-params")
    field = "mean_js" if stat.startswith("mean") else "max_js"
    plot(divergence_grid({variants.VARIANTS[k].title: r[field] for k, r in ok.items()}, stat), "precision-divergence",
         key="quant_grid")
    st.caption("Jensen-Shannon divergence of each query row from fp32, in bits (0: the same distribution, 1: "
               "disjoint). Largest single weight change: " + ", ".join(
                   f"{variants.VARIANTS[k].title} {r['max_change']:.3f}" for k, r in ok.items()) + ".")
    changed = [f"{variants.VARIANTS[k].title} wrote {r['output']!r}" for k, r in ok.items() if not r["same_output"]]
    if changed:
        st.info("Different answers: " + "; ".join(changed) + ". Attention is compared on the tokens both runs share.")

    st.header("The biggest changes, side by side")
    c1, c2 = st.columns(2)
    focus = c1.selectbox("Variant", list(ok), key="quant_focus", format_func=lambda k: variants.VARIANTS[k].title,
                         bind="query-params")
    r = ok[focus]
    top = biggest(r["max_js"], 3)
    pick = c2.radio("Head (largest divergence first)", [f"L{l} H{h}" for l, h in top], horizontal=True,
                    key="quant_head")
    l, h = (int(p[1:]) for p in pick.split())
    plot(before_after(r["ref"][l, h], r["var"][l, h], r["tokens"], r["key_tokens"], variants.VARIANTS[focus].title),
         f"precision-L{l}-H{h}", key="quant_pair")
    st.caption(f"L{l} H{h}: JS {r['max_js'][l, h]:.3g} bits on its most changed token, "
               f"{r['mean_js'][l, h]:.3g} on average.")


@cache.memo("results")
def held_out() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """scikit-learn's digits (images 0..16, labels) and the indices of data.digits' held-out split."""
    images, labels = digits.load()
    return images, labels, digits.split()[1]


def digit(index: int) -> tuple[np.ndarray, str]:
    """Held-out digit `index` (0..449): the image (8, 8) in 0..16 and one line saying which it is."""
    images, labels, test = held_out()
    i = int(test[index])
    return images[i], f"Held-out digit {index}: scikit-learn's digit {i}, a {labels[i]} (never trained on)."


@cache.memo("results")
def compared_digit(name: str, device: str, key: str, index: int) -> dict:
    """experiments.precision.compare_variant on held-out digit `index`, brought to the model's pixel range."""
    fp32 = base(name, device)
    image = digit(index)[0] / digits.INK * fp32.pixel_max
    return precision.compare_variant(fp32.attend(image), variant(name, device, key), image)


def table(name: str, device: str, keys: list[str]) -> dict[str, dict]:
    """One row per variant: its title and sizes in MB (linear weights, × fp32, whole model, saved)."""
    mb = 1e6
    fresh = not keeps_copies(base(name, device)) and not all(sizes_kept(name, device, k) for k in keys)
    got = {k: sizes(name, device, k) for k in ["fp32", *keys]}
    if fresh:  # the copies measured here are gone: give their pages back
        memory.release_freed(collect=True)
    ref = got["fp32"]["linear"]
    return {k: {"variant": variants.VARIANTS[k].title, "linear weights (MB)": round(s["linear"] / mb, 2),
                "× fp32": round(s["linear"] / ref, 3), "whole model (MB)": round(s["model"] / mb, 2),
                "file on disk (MB)": None if s["disk"] is None else round(s["disk"] / mb, 2)} for k, s in got.items()}


def measured(name: str, device: str, chosen: tuple[str, ...], probe, runs: int, key: tuple,
             own: tuple = ()) -> dict[str, dict]:
    """experiments.precision.measure of fp32 and the `chosen` variants under a progress bar, kept per server by
    `key` (what decides the probe: items, batch, the text a masked-LM probe reads); `own` (your rows' key, from
    probe()): the variants are of the model with its task head (task_variant), as an own-head probe needs."""
    pick = (lambda k: task_variant(name, device, k)) if own else (lambda k: model(name, device, k))
    return heavy.run("quant_measure", ("precision", name, device, chosen, runs, own, *key),
                     "Scoring and timing each variant…", lambda progress: precision.measure(
                         pick("fp32"), {k: pick(k) for k in ["fp32", *chosen]}, probe, runs, progress), thread=False)


def task_variant(name: str, device: str, key: str):
    """The hf: folder `name` loaded with its task head (models.task_head) in precision `key`, kept (or not) like
    variant()."""
    fp32 = cache.task_model(name[len(HF_PREFIX):], device, REFERENCE)
    if key == "fp32":
        return fp32
    return _copy(("precision-task-variant", name, device, key), fp32, lambda: variants.make(fp32, key, name))


def own_task(name: str, device: str):
    """(the Pruning lab's task on your rows, '', what identifies them) for an hf: folder whose head needs labelled
    rows once the Pruning view holds your upload (its columns as picked there, else guessed); (None, why, ()) before
    that; (None, '', ()) for any other model. ValueError (the rows do not fit the head) carries its sentence."""
    from ui.prune_own import labelled_head

    if not labelled_head(name):
        return None, "", ()
    tm = cache.task_model(name[len(HF_PREFIX):], device, REFERENCE)
    held = st.session_state.get("_prune_own_table")
    if held is None:
        return None, (f"This model's task is its own {tm.head} head ({tm.architecture}), which needs labelled rows: "
                      "upload them in the Pruning view (your model on your labelled rows) and come back; each variant "
                      "is then checked with that head on the held-out rows."), ()
    (digest, _), table = held
    text0, pair0, label0 = own.columns(table, tm.kind)
    ss = st.session_state
    text, label, pair = ss.get("prune_own_text", text0), ss.get("prune_own_label", label0), ss.get("prune_own_pair",
                                                                                                   pair0)
    pair = None if pair == "(none)" else pair
    rows = (digest, text, label, pair)
    task = cache.kept(("precision-own-task", name, device, *rows),
                      lambda: own.prepare(tm, table, text, label, pair, own.Settings()), "models", heavy=True)
    return task, "", rows


def probe(name: str, device: str, fp32, text: str, items: int, batch: int):
    """(the Probe that checks each variant, why there is none or '', your rows' key: non-empty when it uses the
    model's own head): your rows through its own head (own_task), else experiments.precision.probe_for, made
    once per server for a model, items and batch (and the text, for a probe that reads it: reads_text), since
    making one tokenizes its held-out items and timing batch. ValueError carries its sentence."""
    task, why, rows = own_task(name, device)
    if task is not None:
        return precision_own.own_probe(task, batch), "", rows
    if why:
        return None, why, ()
    key = ("precision-probe", name, device, text if precision.reads_text(fp32) else "", items, batch)
    return cache.kept(key, lambda: precision.probe_for(fp32, text, items, batch, name)), "", ()


def channel_figure(weight: np.ndarray, name: str):
    """The per-tensor against per-channel int8 rounding figure of one weight matrix [out, in], its errors computed
    here: for ui.show.figure, which builds it once per server for a weight (it depends on the weights only)."""
    return channel_fig(channel_errors(weight), name)


def add_measured(rows: dict[str, dict], measured: dict[str, dict], metric_name: str) -> None:
    """experiments.precision.measure's figures added to the table rows; a warning for each variant that failed;
    the two int8 paths side by side when both ran (int8_pair)."""
    for key, m in measured.items():
        if "error" in m:
            st.warning(m["error"])
            continue
        rows[key] |= {"top-1 agreement": round(m["top1_agreement"], 4), "cosine": round(m["cosine"], 4),
                      metric_name: round(m["metric"], 4), "ms per forward": round(1e3 * m["seconds"], 1),
                      "speed-up": round(measured["fp32"]["seconds"] / m["seconds"], 2)}
    pair = int8_pair(measured)
    if pair:
        st.caption(pair)


INT8_PAIR = ("int8_dynamic", "int8_ao")  # the most faithful int8 here, and the fastest maintained one


def int8_pair(measured: dict[str, dict]) -> str | None:
    """One sentence setting the two int8 paths side by side (speed-up over fp32, top-1 agreement, cosine), or None
    unless fp32 and both ran."""
    if any(k not in measured or "error" in measured[k] for k in ("fp32", *INT8_PAIR)):
        return None
    fp32 = measured["fp32"]["seconds"]
    parts = [f"{variants.VARIANTS[k].title}: {fp32 / measured[k]['seconds']:.2f}× fp32's speed, top-1 agreement "
             f"{measured[k]['top1_agreement']:.4f}, cosine {measured[k]['cosine']:.4f}" for k in INT8_PAIR]
    return ("Two int8 paths side by side. " + "; ".join(parts) + ". torchao's per-channel copy quantizes each "
            "token's activations with its own scale (more faithful); torch.ao's packs weights for fbgemm/oneDNN and "
            "gives a whole tensor one activation scale (faster on most CPUs, less faithful).")


def capability(device: str) -> str:
    """What this device offers in the sidebar's Precision and why any dtype is not offered (models.devices)."""
    from models import devices

    if device != "cpu":
        return f"On {device} the sidebar offers {', '.join(devices.dtypes_for(device))}."
    found = devices.cpu_features() or frozenset()
    offered = devices.dtypes_for(device, found)
    refused = [devices.cpu_refusal(d, found) for d in devices.DTYPE_NAMES if d not in offered]
    has = ", ".join(f.upper().replace("_", "-") for f in devices.CPU_FEATURES if f in found) or "nothing listed"
    return (f"Torch reports this CPU's instructions: {has}. The sidebar's Precision offers {', '.join(offered)}. "
            + " ".join(refused) + " This page runs every variant anyway, to show what each would do.")
