"""Vision: a vision transformer reads an image as a sequence of patches; where each head looks, and rollout."""
import numpy as np
import streamlit as st

import limits
from analysis.patches import special_share, to_grid
from analysis.rollout import rollout
from data.digits import INK, to_digit_image
from data.images import read_image, sample_digits
from limits.errors import UserError
from models import available
from ui import family, show
from ui.family import BIND
from ui.runtime import cache
from ui.state import selection
from viz.vision import overlays, patch_grid


@cache.memo("results", spinner="Running the vision transformer…")
def look(name: str, device: str, dtype: str, image: np.ndarray):
    m = cache.model(name, device, dtype)
    return m.attend(image), m.predict(image)


@cache.memo("results")
def digits():
    return sample_digits()


st.title("Vision: an image as a sequence of patches")
sel = selection()
sidebar = family.loaded(sel)
if sidebar is None:
    st.stop()
if family.family(sidebar) == "vision":
    name = sel.model
elif "vit" in available():
    name = "vit"
    family.switch("The sidebar's model reads text, so this view shows the built-in ViT.", ["vit"], "vis")
else:
    st.info("This view needs a vision transformer: load a ViT or DeiT folder with 'Other model' in the sidebar "
            "(the built-in 'vit' is not in this copy of the app).")
    st.stop()
model = cache.model(name, sel.device, sel.dtype)
rows, cols = model.grid
top = model.pixel_max
st.caption(f"{model.label} · tokens: {', '.join(model.special)}, then r0c0 … r{rows - 1}c{cols - 1} row by row")

source = st.radio("Image", ["A scikit-learn digit", "Upload a PNG or JPEG"], horizontal=True, key="vis_source", **BIND)
if source.startswith("A scikit"):
    images, labels = digits()
    index = int(st.number_input("Digit number (0–1796)", 0, len(images) - 1, 0, key="vis_digit", **BIND))
    image = images[index] / 16 * top  # digits are 0..16, ink bright; the model's processor expects 0..top
    st.caption(f"scikit-learn's bundled digit {index}: a {labels[index]}, 8×8 pixels, ink bright.")
else:
    caps = limits.current()
    up = st.file_uploader(f"PNG or JPEG, up to {caps.image_bytes / 1e6:.0f} MB", type=["png", "jpg", "jpeg"],
                          key="vis_upload")
    of_digits = top == INK  # a model of scikit-learn's digits: a photo is cropped and scaled to their 8×8 form
    if of_digits:
        st.caption("The photo is brought to the digits' form: the digit cropped and centred, 8×8, ink bright.")
    invert = False if of_digits else st.toggle("Dark ink on light paper: invert, so the ink is bright as in the "
                                               "digits", True, key="vis_invert", **BIND)
    if up is None:
        st.info("Upload a picture to see how the model reads it.")
        st.stop()
    try:
        pixels = read_image(up.getvalue(), caps.image_bytes, caps.image_pixels)
        if of_digits:
            image = to_digit_image(pixels)  # (8, 8) 0..16, ink bright on either paper
        else:
            image = pixels.astype(np.float32) / 255 * top
            image = top - image if invert else image
    except UserError as err:
        st.error(str(err))
        st.stop()
try:
    trace, predicted = look(name, sel.device, sel.dtype, np.ascontiguousarray(image, dtype=np.float32))
except UserError as err:
    st.error(str(err))
    st.stop()
frame = model.to_model_frame(image)  # (h, w, C): what the processor is given
frame = frame[..., 0] if frame.shape[-1] == 1 else frame
if predicted:
    st.metric("The model reads", predicted[0][0])
    st.caption("Its three likeliest classes: " + ", ".join(f"{name} {p:.0%}" for name, p in predicted[:3]))

left, right = st.columns([1, 2])
with left:
    show.plot(show.figure(patch_grid, frame, (rows, cols), top, f"What the model sees: {rows}×{cols} patches"),
              "vision-patches",
              key="vis_grid_fig")
with right:
    c1, c2 = st.columns(2)
    layer = int(c1.selectbox("Layer", range(trace.n_layers), key="vis_layer", format_func=lambda i: f"L{i}", **BIND))
    start = c2.selectbox("Attention from", trace.tokens, key="vis_from", **BIND)
    q = trace.tokens.index(start)
    maps = to_grid(trace.weights[layer, :, q], (rows, cols), len(model.special))  # (H, rows, cols)
    shared = st.toggle("One colour scale for every head", False, key="vis_shared", **BIND)
    titles = [f"L{layer} H{h} · {special_share(trace.weights[layer, h, q], len(model.special)):.0%} on "
              f"{'/'.join(model.special)}" for h in range(trace.n_heads)]
    show.plot(show.figure(overlays, frame, maps, titles, top, 4, shared), f"vision-heads-L{layer}", key="vis_heads_fig")
    st.caption(f"Each panel is one head of layer {layer}: how much {start} takes from each patch, the strongest "
               "patch most opaque" + (" on one scale for all heads" if shared else ", each head on its own scale")
               + ". The weight it puts on the special tokens is in the title, not on the picture.")

st.header("Rollout: which patches [CLS] draws on through all layers")
left, right = st.columns([1, 2])
residual = right.slider("Residual weight r", 0.0, 1.0, 0.5, 0.05, key="vis_residual", **BIND)
right.caption("Rollout averages each layer's heads, mixes in the residual stream as r·I and multiplies the "
              "layers, from the first up: row [CLS] of the product, over the patches.")
joint = rollout(trace.weights, residual)  # (T, T)
with left:
    show.plot(show.figure(overlays, frame, to_grid(joint[:1], (rows, cols), len(model.special)),
                          [f"Rollout from [CLS], r = {residual:.2f}"], top, 1), "vision-rollout",
              key="vis_roll_fig")
show.explain(
    "A vision transformer cuts the image into patches, flattens each one, projects it to a vector and adds a "
    "learned position, so an image becomes a sequence of tokens like words. A [CLS] token reads them all and "
    "carries the class. Attention then works exactly as for text; rollout multiplies the layers' head-averaged "
    "attention, with the residual mixed in, to follow which patches [CLS] draws on in the end.",
    r"z_0 = [x_\mathrm{cls};\, x_p^1 E;\, \dots;\, x_p^N E] + E_\mathrm{pos},\quad N = \frac{HW}{P^2},\quad "
    r"R = \hat A_L \cdots \hat A_1",
    "patches = pixels.unfold(2, P, P).unfold(3, P, P)  # (B, C, H/P, W/P, P, P): row by row, as the conv does\n"
    "tokens = torch.cat([cls, conv(pixels).flatten(2).transpose(1, 2)], dim=1) + pos  # (B, 1 + N, D)",
)
