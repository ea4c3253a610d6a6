"""KV cache: generate live with and without it, MHA vs GQA vs MQA, known models' KV bytes, the tiny decoder's cache,
and a trained Hugging Face decoder's own (GQA) cache, or an encoder-decoder's two (ui.kv_cache_encdec)."""
from __future__ import annotations

import time
from functools import partial

import streamlit as st

import limits
from analysis.kv import KVConfig, attention_kind, human_bytes, known_table, kv_bytes_per_token
from data.sorting import MAX_DIGITS, VOCAB, encode
from experiments import kv_cache as E
from limits.errors import UserError
from models.decoder import PROMPT_LEN, DecoderConfig, check_fits, flops, prompt
from models.devices import DTYPES, resolve
from ui import kv_cache_hf, show, state
from ui.runtime import cache, heavy, work
from viz import kv_cache as V

Q = dict(bind="query-params")
def kept(shape, dtype, *_) -> bool:  # hosted, the largest decoder (~200 MB) held a replica's memory after its request
    return DecoderConfig(*shape, dtype=dtype).n_params() * DTYPES[dtype].itemsize <= limits.current().kept_decoder_bytes
decoder = cache.memo("models", keep=kept)(E.warm_decoder)  # one decoder per shape and device, in the byte-bounded store
# the MHA/GQA/MQA measurement of a shape: the job's progress callback and the decoder's cap are not in its key
variants = cache.memo("results", key=lambda progress, shape, dtype, device, n, cap: (shape, dtype, device, n))(
    E.measure_shape)

@cache.memo("results")
def tiny_written(device: str, dtype: str, ids: tuple[int, ...]) -> tuple:  # the last of tiny_steps, kept
    *_, last = E.tiny_steps(cache.model("tiny", device, dtype), list(ids))
    return last

def figures(records: dict, per_token: int) -> None:
    """Latency per token, cumulative time and cache memory, from the steps recorded so far."""
    if not (cached := records["cached"]).positions:
        return
    seconds = {m: r.seconds for m, r in records.items()}
    lat, cum = st.columns(2)
    with lat:
        show.plot(V.latency(seconds), "kv_latency", key="kv_lat")
    with cum:
        show.plot(V.cumulative(seconds), "kv_total", key="kv_cum")
    show.plot(V.memory(cached.positions, cached.cache_bytes, per_token), "kv_memory", key="kv_mem")

st.title("KV cache")
sel = state.selection()
device, dtype, notices = resolve(sel.device, sel.dtype)
for note in notices:
    st.warning(note)
show.explain(
    "A decoder writes one token at a time, and every new token attends to all earlier ones. Their keys and "
    "values do not change, so a cache keeps them: each step projects only the new token instead of re-running "
    "the whole sequence. The price is memory that grows with every token; sharing k/v heads (GQA, MQA) cuts it.",
    r"\text{KV bytes} = 2 \cdot L \cdot h_{kv} \cdot d_{head} \cdot \text{bytes} \cdot T",
    "k, v = cache.append(layer, k_new, v_new)  # (B, kv_heads, T, head_dim): only the new token is projected",
)

c = st.columns(5)
layers = c[0].slider("layers", 1, 32, 4, key="kv_layers", **Q)
d_model = c[1].selectbox("d_model", (64, 128, 256, 512, 1024, 2048, 4096), index=2, key="kv_d_model", **Q)
heads = c[2].selectbox("heads", (1, 2, 4, 8, 16, 32, 64), index=3, key="kv_nh", **Q)
kv_heads = c[3].selectbox("kv_heads", [d for d in range(heads, 0, -1) if heads % d == 0], key="kv_kvh", **Q,
                          format_func=lambda k: f"{k} ({attention_kind(heads, k)})")
caps = limits.current()
state.clamp("kv_tokens", 16, min(512, caps.new_tokens))
n = c[4].slider("new tokens", 16, min(512, caps.new_tokens), 128, step=16, key="kv_tokens", **Q)
shape = (layers, d_model, heads, kv_heads)
cfg = DecoderConfig(*shape, dtype=dtype)
st.caption(f"Random weights (seed 0), {cfg.n_params() / 1e6:.1f}M parameters, {dtype} on {device}; a {PROMPT_LEN}-"
           "token prompt, then greedy decoding, timed " + ("with the GPU synchronised." if device == "cuda" else
                                                           "on the CPU threads the server runs with."))

cached_flops, uncached_flops = (flops(cfg, PROMPT_LEN, n, use_cache=u) for u in (True, False))
both = cached_flops + uncached_flops <= caps.request_gflop * 1e9
rounds = E.ROUNDS if both and E.ROUNDS * (cached_flops + uncached_flops) <= caps.request_gflop * 1e9 else 1
budget = work.Budget(rounds * (cached_flops + uncached_flops * both) / 1e9, caps.request_gflop, "GFLOP",
                     "choose fewer layers, a smaller d_model or fewer tokens")
if not both and budget.fits:
    st.info(f"Without the cache this would take about {uncached_flops / 1e9:,.0f} GFLOP more, over what one request "
            "may use here, so only the cached run is done: choose fewer tokens or a smaller model to compare.")
per_token = kv_bytes_per_token(layers, kv_heads, cfg.head_dim, DTYPES[dtype].itemsize)
built = (shape, dtype, device, PROMPT_LEN + n, caps.decoder_bytes)  # the decoder, made on the job's thread
records = heavy.run("kv_generate", (shape, n, dtype, device), "Generating…",
                    lambda progress, b, r, *a: E.generate_modes(progress, decoder(*b), *a, rounds=r), built, rounds,
                    prompt(cfg, device=device), n, {m: E.Record() for m in ("cached", "uncached")[: 1 + both]},
                    budget=budget, ask=heavy.Ask("kv_go", "Generate with and without the cache"), keep=False,
                    check=partial(check_fits, cfg, PROMPT_LEN + n, caps.decoder_bytes, device),  # before allocating
                    draw=lambda job: figures(job.args[-1], per_token))
if records is not None:
    figures(records, per_token)
    st.success(E.summary(records, per_token, n))

def variants_section() -> None:
    st.header("MHA vs GQA vs MQA at this size", help="Same layers, d_model and query heads, fewer key/value "
                 "heads; cached generation of the chosen number of tokens, measured here.")
    variants_budget = work.Budget(E.variants_flops(cfg, n) / 1e9, caps.request_gflop, "GFLOP",
                                  "choose fewer layers, a smaller d_model or fewer tokens")
    if st.toggle("Measure the three variants", key="kv_variants", **Q) and (rows := heavy.run(
            "kv_variants", variants.key(None, shape, dtype, device, n, caps.decoder_bytes), "Measuring MHA, GQA and "
            "MQA…", variants.uncached, shape, dtype, device, n, caps.decoder_bytes, budget=variants_budget)):
        show.plot(V.variants(rows), "kv_variants")

@st.fragment
def known_section() -> None:
    st.header("KV bytes per token in well-known models", help=(
        "Published shapes (layers, query heads, kv heads, head_dim): GPT-2 small 12, 12, 12, 64; Llama-2-7B 32, 32, "
        "32, 128; Llama-3-8B 32, 32, 8, 128; Falcon-7B 32, 71, 1, 64. For one sequence: a batch multiplies it."))
    c = st.columns(2)
    context = c[0].number_input("context length (tokens)", 1, 1_000_000, 4096, step=1024, key="kv_context", **Q)
    size = c[1].selectbox("bytes per element", (2, 4, 1), key="kv_bytes", **Q,
                          format_func={2: "2 (fp16 / bf16)", 4: "4 (fp32)", 1: "1 (int8)"}.get)
    table = known_table(int(context), size, (KVConfig("your decoder (above)", layers, heads, kv_heads, cfg.head_dim),))
    st.dataframe([{k: v for k, v in r.items() if k not in ("bytes_per_token", "total_bytes")} for r in table],
                 hide_index=True)

@st.fragment
def tiny_section() -> None:
    st.header("The tiny decoder sorting digits, its cache beside it")
    tiny, c = cache.model("tiny", device, dtype), st.columns([2, 1])
    digits = c[0].text_input("Digits to sort", "31415", key="kv_digits", **Q, max_chars=20)
    play = c[1].button("Play token by token", key="kv_play")
    try:
        ids = encode(digits)
    except UserError as err:
        st.error(str(err))
        return
    text_ph, grid_ph = (col.empty() for col in st.columns([1, 3]))
    def draw(i: int, seen: tuple, build=V.cache_grid) -> None:  # seen: (written, norms, positions, bytes) at step i
        written, norms, positions, nbytes = seen
        text_ph.markdown(f"`{''.join(VOCAB[t] for t in ids)}` → **`{''.join(VOCAB[t] for t in written)}`**  \n"
                         f"{positions} positions cached, {human_bytes(nbytes)}")
        with grid_ph:
            show.plot(build(norms, [VOCAB[t] for t in ids + written], len(ids) + MAX_DIGITS), "kv_tiny_cache",
                      key=f"kv_tiny_{i}")

    if play:  # token by token: each frame shown once, never kept
        for i, seen in enumerate(E.tiny_steps(tiny, ids)):
            draw(i, seen)
            time.sleep(0.4)
    else:  # only the finished cache, kept for these digits, its figure built once per server
        draw(MAX_DIGITS, tiny_written(device, dtype, tuple(ids)), partial(show.figure, V.cache_grid))
    st.caption(f"{tiny.label}. Each step feeds one token; its k and v join the cache (darker: a longer vector).")

st.page_link("views/sinks.py", label="Streaming past the context with a window + attention-sink cache (StreamingLLM)",
             icon="⚓")
variants_section()
known_section()
tiny_section()
kv_cache_hf.section()
