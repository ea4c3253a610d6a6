"""The Vision view through the app frame with a tiny random ViT: the painted attention is the model's own,
rollout is the product of the layers, uploads work or get one sentence, and the URL restores the choices."""
import io
import json

import numpy as np
import pytest
import torch
from PIL import Image
from streamlit.testing.v1 import AppTest
from transformers import AutoImageProcessor, AutoModelForImageClassification

import limits
from data.digits import to_digit_image
from data.images import sample_digits


@pytest.fixture(scope="module")
def vit(tiny_folder):
    return tiny_folder("vit")


def run(folder: str, query: dict | None = None, **state) -> AppTest:
    at = AppTest.from_file("../../app.py", default_timeout=120)
    at.session_state["model"] = "hf:"
    at.session_state["hf_spec"] = folder
    for key, value in state.items():
        at.session_state[key] = value
    for key, value in (query or {}).items():
        at.query_params[key] = value
    at.run()
    return at.switch_page("views/vision.py").run()


def figure(at: AppTest, key: str) -> dict:
    for chart in at.get("plotly_chart"):
        if chart.proto.id and key in chart.proto.id:
            return json.loads(chart.proto.spec)
    raise AssertionError(f"no figure {key}")


def z(trace: dict) -> np.ndarray:
    value = trace["z"]
    if isinstance(value, dict):
        import base64

        shape = [int(n) for n in str(value["shape"]).split(",")]
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"]).reshape(shape)
    return np.array(value, dtype=np.float64)


def reference(folder: str, image: np.ndarray) -> np.ndarray:
    """transformers' own attentions for the image through the folder's processor: (L, H, T, T)."""
    proc = AutoImageProcessor.from_pretrained(folder)
    model = AutoModelForImageClassification.from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        out = model(**proc(image[..., None], return_tensors="pt"), output_attentions=True)
    return torch.stack(out.attentions, 1)[0].numpy()


def png(pixels: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, "PNG")
    return buf.getvalue()


def test_a_digits_heads_are_painted_with_the_models_own_attention(vit):
    at = run(vit, vis_digit=7, vis_layer=1)
    assert not at.exception and not at.error
    image, label = sample_digits()[0][7], sample_digits()[1][7]
    assert any(f"digit 7: a {label}" in c.value for c in at.caption)
    expected = reference(vit, image)  # digits are integers 0..16, the range this processor expects
    heads = figure(at, "vis_heads_fig")
    overlays = [t for t in heads["data"] if t.get("type") == "heatmap" and "customdata" in t]
    assert len(overlays) == 4
    for h, trace in enumerate(overlays):  # row 0 ([CLS]) of layer 1, without [CLS] itself, as a 4x4 grid
        assert np.abs(z(trace) - expected[1, h, 0, 1:].reshape(4, 4)).max() < 1e-5
    roll = [t for t in figure(at, "vis_roll_fig")["data"] if "customdata" in t][0]
    a = 0.5 * expected.mean(1) + 0.5 * np.eye(17)  # (L, T, T), rows already sum to 1
    assert np.abs(z(roll) - (a[1] @ a[0])[0, 1:].reshape(4, 4)).max() < 1e-5
    assert at.metric[0].label == "The model reads"
    grid = figure(at, "vis_grid_fig")["layout"]
    assert grid["xaxis"]["ticktext"] == ["c0", "c1", "c2", "c3"] and grid["yaxis"]["ticktext"][-1] == "r3"
    assert "annotations" not in grid  # patches named on the axes and on hover, not painted over the pixels


def test_attention_from_a_patch_and_the_url_restore_the_choices(vit):
    at = run(vit, query={"vis_digit": "3", "vis_from": "r1c2", "vis_layer": "0"})
    assert not at.exception and not at.error
    assert at.number_input(key="vis_digit").value == 3 and at.selectbox(key="vis_from").value == "r1c2"
    expected = reference(vit, sample_digits()[0][3])
    overlays = [t for t in figure(at, "vis_heads_fig")["data"] if "customdata" in t]
    assert np.abs(z(overlays[2]) - expected[0, 2, 1 + 4 + 2, 1:].reshape(4, 4)).max() < 1e-5


def test_uploads_are_read_or_refused_in_one_sentence(vit, monkeypatch):
    at = run(vit, vis_source="Upload a PNG or JPEG")
    assert any("Upload a picture" in i.value for i in at.info)
    drawing = np.full((40, 30), 255, np.uint8)
    drawing[5:35, 12:18] = 0  # a dark "1" on white paper
    at.get("file_uploader")[0].set_value(("one.png", png(drawing), "image/png"))
    at.run()
    assert not at.exception and not at.error and len(at.get("plotly_chart")) == 3
    # a model of the digits (pixels 0..16) reads the photo as data.digits brings it to their form, not squeezed whole
    digit = to_digit_image(drawing)
    expected = reference(vit, digit)
    overlays = [t for t in figure(at, "vis_heads_fig")["data"] if "customdata" in t]
    assert np.abs(z(overlays[0]) - expected[0, 0, 0, 1:].reshape(4, 4)).max() < 1e-5
    assert np.abs(reference(vit, 16 - drawing / 255 * 16)[0, 0, 0] - expected[0, 0, 0]).max() > 1e-4  # it differs
    at.get("file_uploader")[0].set_value(("fake.png", b"this is not an image", "image/png"))
    at.run()
    assert not at.exception and "not a PNG or JPEG" in at.error[0].value
    monkeypatch.setenv(limits.ENV, "1")  # hosted: 2 MB
    at.get("file_uploader")[0].set_value(("big.png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 2_100_000, "image/png"))
    at.run()
    assert not at.exception and "upload an image of at most 2.0 MB" in at.error[0].value


def test_a_text_model_offers_the_switch_or_says_what_to_load():
    at = AppTest.from_file("../../app.py", default_timeout=120).run()
    at.switch_page("views/vision.py").run()
    assert not at.exception and not at.error
    assert any("reads text, so this view shows the built-in ViT" in i.value for i in at.info)
    assert len(at.get("plotly_chart")) == 3
    at.button(key="vis_to_vit").click().run()
    assert not at.exception and at.sidebar.selectbox(key="model").value == "vit"


def test_without_the_built_in_vit_a_text_model_is_told_what_to_load(monkeypatch, tmp_path):
    import models
    monkeypatch.setattr(models.folders, "WEIGHTS", tmp_path)  # where the built-in folders are looked for
    at = AppTest.from_file("../../app.py", default_timeout=120).run()
    at.switch_page("views/vision.py").run()
    assert not at.exception and not at.error
    assert any("needs a vision transformer" in i.value for i in at.info)


def test_the_figures_are_built_once_per_server_and_show_the_same_numbers(vit, monkeypatch):
    """The patch grid, the heads and the rollout of a digit are built once per server: a fresh link (a new session)
    and a rerun draw the kept figures, each equal to a fresh build from the same arguments."""
    import viz.vision
    from tests.views.kept_figures import count_builds, counts, same_figure
    from ui.runtime import cache

    fresh = {"patch_grid": viz.vision.patch_grid, "overlays": viz.vision.overlays}
    cache.STORES["results"].clear()
    built = count_builds(monkeypatch, viz.vision, "patch_grid", "overlays")
    first = run(vit, vis_digit=3)
    assert not first.exception and counts(built) == {"patch_grid": 1, "overlays": 2}
    second = run(vit, vis_digit=3)
    second.toggle(key="vis_shared").set_value(False).run()  # a rerun
    assert not second.exception and counts(built) == {"patch_grid": 1, "overlays": 2}
    (grid_args, _), = built["patch_grid"]
    (heads_args, _), (roll_args, _) = built["overlays"]
    assert same_figure(figure(second, "vis_grid_fig"), fresh["patch_grid"](*grid_args))
    assert same_figure(figure(second, "vis_heads_fig"), fresh["overlays"](*heads_args))
    assert same_figure(figure(second, "vis_roll_fig"), fresh["overlays"](*roll_args))
    assert not same_figure(figure(second, "vis_roll_fig"), fresh["overlays"](*heads_args))  # the test can tell
    second.slider(key="vis_residual").set_value(0.25).run()  # another residual weight: that rollout is built
    assert not second.exception and counts(built) == {"patch_grid": 1, "overlays": 3}
