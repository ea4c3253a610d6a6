"""Precision: what fp16, bf16, int8 and int4 copies of the model do to each head's attention, and what they save."""
from functools import partial

import streamlit as st

import limits
from experiments import precision as exp
from limits.errors import UserError
from models.variants import VARIANTS, first_linear, modules, unsupported
from ui import family
from ui import precision as ui
from ui.show import explain, figure, plot
from ui.state import selection

st.title("Precision and quantization")
st.caption("Copies of the model in lower precision, each compared with its fp32 self on your text (an image model: "
           "a held-out digit): how far every head's attention moves, what the answers and the task metric do, and "
           "what memory and time they save.")
sel = selection()
try:
    base = ui.base(sel.model, sel.device)
except UserError as err:
    st.error(str(err))
    st.stop()
if not modules(base):
    st.info("The toy layer has no trained weights to quantize: pick bert, tiny or an hf: model in the sidebar.")
    st.stop()
device, vision = base.device, family.family(base) == "vision"
offered = [k for k in VARIANTS if k != "fp32"]
chosen = st.multiselect("Variants compared with fp32", offered, ["fp16", "bf16", "int8_dynamic", "int8_ao",
                                                                  "int8_per_tensor"],
                        key="quant_variants", format_func=lambda k: VARIANTS[k].title, bind="query-params")
st.caption(ui.capability(device))
if not chosen:
    st.info("Pick at least one variant to compare with fp32.")
    st.stop()
caps = limits.current()
if vision:  # an image model: one held-out digit instead of the sidebar's text
    index = int(st.number_input("Held-out digit (0–449)", 0, 449, 0, key="quant_digit", bind="query-params"))
    st.caption(ui.digit(index)[1] + " Every variant reads the same image.")
    run, text = partial(ui.compared_digit, sel.model, device, index=index), ""
    peek, asked = partial(ui.compared_digit.peek, sel.model, device, index=index), ("digit", index)
else:
    if not sel.text.strip():
        st.info("Type a sentence in the sidebar to see its attention.")
        st.stop()
    text, text_b, cut = ui.clipped(sel.model, device, sel.text, sel.text_b)
    if cut:
        st.caption(f"Compared on the first {caps.precision_tokens} tokens of your text ({cut} cut): every variant "
                   "runs it again, and int8 on a CPU without int8 instructions is slow.")
    run = partial(ui.compared, sel.model, device, text=text, text_b=text_b)
    peek, asked = partial(ui.compared.peek, sel.model, device, text=text, text_b=text_b), ("text", text, text_b)
ok = ui.variants_on_request(sel.model, device, chosen, run, peek, asked)
if ok is not None and not ok:  # the input was refused (st.error shown), or no variant ran (each said why)
    st.stop()
if ok:
    ui.compared_sections(ok)

st.header("Size, agreement, task metric and latency")
rows = ui.table(sel.model, device, chosen)
c1, c2, c3 = st.columns(3)
items = 0 if exp.next_token_windows(base) else c1.slider(  # a fixed number of held-out windows
    "Held-out items per variant", 10, caps.precision_items, min(40, caps.precision_items), step=10, key="quant_items",
    bind="query-params")
runs = c2.slider("Timed forward passes per variant", 1, caps.precision_runs, min(3, caps.precision_runs),
                 key="quant_runs", bind="query-params")
batch = c3.select_slider("Timing batch (texts or images)", [b for b in (1, 4, 16) if b <= caps.precision_batch],
                         min(4, caps.precision_batch), key="quant_batch", bind="query-params")
probe, why, own = None, "", ()
try:
    probe, why, own = ui.probe(sel.model, device, base, text, items, batch)
except UserError as err:
    st.info(str(err))
if probe is None:
    st.caption(why or exp.no_task(base))
elif st.toggle(f"Measure agreement, {probe.metric_name.lower()} and latency ({probe.about}; {probe.timing}, "
               f"{runs} interleaved runs each, on {device})", key="quant_measure", bind="query-params"):
    measured = ui.measured(sel.model, device, tuple(chosen), probe, runs,
                           (items, batch, text if "masked" in probe.name else ""), own)
    ui.add_measured(rows, measured, probe.metric_name)
    st.caption(f"Top-1 agreement: {probe.agreement} as fp32. Cosine: of the outputs, item by item. "
               f"{probe.metric_name}: {'higher' if probe.higher_is_better else 'lower'} is better. Latency: median "
               "of interleaved runs; a busy machine adds noise to every variant alike.")
st.dataframe(list(rows.values()), hide_index=True)

st.header("One scale per tensor or one per channel")
name, weight = first_linear(base)
plot(figure(ui.channel_figure, weight.numpy(), name), "precision-channels", key="quant_channels")
if unsupported("int8_qat", "cpu", sel.model):
    st.caption("int8 QAT needs fine-tuned weights: they ship for tiny and gpt (train/<name>_qat.py).")

explain(
    "**Scale and zero point.** int8 stores each number as an integer q in [−128, 127] with a float scale s and an "
    "integer zero point z: x ≈ s·(q − z). Symmetric (weights) sets z = 0 and s = max|x|/127.5; affine (activations, "
    "which are often all positive after GELU) stretches [min, max] over all 256 codes. **Per tensor or per "
    "channel.** One scale for a whole matrix is set by its largest weight, so channels with small weights round "
    "to a few codes; one scale per output channel (row) fits each, which is why it keeps the outputs much closer "
    "(figure above). **What stays in higher precision.** Only the linear layers' matrix products run in int8. "
    "Softmax exponentiates score differences, so a rounding error of 0.1 in a score becomes 10 % in a weight, and "
    "layer norm divides by a variance summed over hundreds of squares: both stay in fp32 (or the model's float "
    "type). fp16 and bf16 casts change them too, which is where their small attention shifts come from. **PTQ or "
    "QAT.** Post-training quantization rounds trained weights as they are. Quantization-aware training runs the "
    "rounding in the forward pass while training (gradients pass straight through it), so the weights settle "
    "where rounding hurts least; then the same int8 conversion follows. **Two int8 paths.** torchao's (per channel) "
    "gives each token's activations their own scale; torch.ao's `quantize_dynamic` packs the weights for "
    "fbgemm/oneDNN and gives a whole tensor one activation scale: faster, less faithful (the table shows both).",
    r"q=\mathrm{clamp}\!\left(\left\lfloor x/s\right\rceil+z,\,-128,\,127\right),\quad \hat x=s\,(q-z),\quad"
    r"s_{\text{sym}}=\tfrac{\max|x|}{127.5},\quad "
    r"\mathrm{JS}(P\|Q)=\tfrac12\mathrm{KL}(P\|M)+\tfrac12\mathrm{KL}(Q\|M),\ M=\tfrac{P+Q}{2}",
    "quantize_(copy.deepcopy(model), Int8DynamicActivationInt8WeightConfig(act_mapping_type=MappingType.ASYMMETRIC))"
    "  # torchao",
)
