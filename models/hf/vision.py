"""Vision transformers through transformers (ViT, DeiT): an image as a sequence of patches.

attend(image) takes a numpy image (H, W) or (H, W, C) with values in the range the model's image
processor expects (0 to `pixel_max`: 255 for photographs, 16 for scikit-learn's digits), brings it to
the model's channels and size, runs the folder's own image processor (rescale, normalise) and returns
the model's own output_attentions over the tokens "[CLS]" (DeiT also "[DIST]"), then "r0c0", "r0c1", …:
patch (row, column) in the order the patch embedding flattens them, row by row. With a classification
head, the prediction comes back as the trace's output and from predict(). It does not read files
(data.images does) and does not crop or invert a user's picture; loading rules are models.hf.common's.

    vit = load_vision("./my-vit")
    trace = vit.attend(np.zeros((8, 8)))    # tokens ["[CLS]", "r0c0", ..., "r3c3"]
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from analysis.trace import AttentionTrace
from limits.errors import UserError
from models.hf import common

SPECIAL_TOKENS = {"vit": ("[CLS]",), "deit": ("[CLS]", "[DIST]")}  # tokens before the patches, in order


@dataclass(kw_only=True)
class Vision(common.HFModel):
    processor: object
    classifier: bool = False  # the weights hold a classification head

    @property
    def predicts(self) -> str | None:
        """models.contract.PREDICTS: the image's class with a classification head, else nothing."""
        return "image class" if self.classifier else None
    family = "vision"

    @property
    def size(self) -> tuple[int, int]:
        """(height, width) in pixels the model reads."""
        s = self.config.image_size
        return (s, s) if isinstance(s, int) else tuple(s)

    @property
    def grid(self) -> tuple[int, int]:
        """(rows, columns) of patches."""
        p = self.config.patch_size
        p = (p, p) if isinstance(p, int) else tuple(p)
        return self.size[0] // p[0], self.size[1] // p[1]

    @property
    def special(self) -> tuple[str, ...]:
        return SPECIAL_TOKENS[self.config.model_type]

    @property
    def tokens(self) -> list[str]:
        rows, cols = self.grid
        return [*self.special] + [f"r{r}c{c}" for r in range(rows) for c in range(cols)]

    @property
    def pixel_max(self) -> float:
        """The largest pixel value the processor expects: 1 / rescale_factor (255 for 8-bit images)."""
        return 1 / self.processor.rescale_factor if getattr(self.processor, "do_rescale", False) else 1.0

    def to_model_frame(self, image) -> np.ndarray:
        """(H, W) or (H, W, C) -> float32 (height, width, channels) at the model's size, values kept.
        Grey becomes RGB by copying, RGB becomes grey by averaging; an alpha channel is dropped."""
        from PIL import Image

        if isinstance(image, str):
            raise UserError("This model reads images, not text: open the Vision view and pick or upload a picture.")
        img = np.asarray(image, dtype=np.float32)
        if img.ndim not in (2, 3) or img.size == 0:
            raise UserError("An image must be (height, width) or (height, width, channels) pixels: upload a PNG "
                            "or JPEG.")
        if not np.isfinite(img).all():
            raise UserError("The image holds values that are not numbers.")
        img = img[..., None] if img.ndim == 2 else img
        if img.shape[-1] in (2, 4):  # grey or RGB with alpha
            img = img[..., :-1]
        want = self.config.num_channels
        if img.shape[-1] != want:
            img = np.repeat(img.mean(-1, keepdims=True), want, -1)  # (H, W, want)
        h, w = self.size
        if img.shape[:2] != (h, w):  # resized in float ('F' mode), so no value is rounded to 8 bits
            img = np.stack([np.asarray(Image.fromarray(img[..., c]).resize((w, h), Image.Resampling.BILINEAR))
                            for c in range(img.shape[-1])], axis=-1)
        return np.clip(img, 0, self.pixel_max).astype(np.float32)

    def pixels(self, image) -> torch.Tensor:
        """The image processor's pixel_values (1, C, H, W) for an image (any size, 0..pixel_max)."""
        frame = self.to_model_frame(image)
        out = self.processor(frame, do_resize=False, return_tensors="pt", input_data_format="channels_last")
        return out["pixel_values"].to(self.device, self.model.dtype)

    @torch.no_grad()
    def forward(self, image):
        return self.model(pixel_values=self.pixels(image), output_attentions=True)

    def predict(self, image) -> list[tuple[str, float]] | None:
        """(label, probability) for every class, likeliest first; None without a classification head."""
        if not self.classifier:
            return None
        probs = self.forward(image).logits[0].float().softmax(-1).cpu().numpy()
        names = self.config.id2label
        return [(str(names.get(int(i), i)), float(probs[i])) for i in np.argsort(-probs)]

    @torch.no_grad()
    def attend(self, image, text_b: str | None = None) -> AttentionTrace:
        out = self.forward(image)
        weights = torch.stack(out.attentions, dim=1)[0].float().cpu().numpy()  # (L, H, T, T)
        output = None
        if self.classifier:
            probs = out.logits[0].float().softmax(-1)
            best = int(probs.argmax())
            output = f"{self.config.id2label.get(best, best)} ({float(probs[best]):.0%})"
        return AttentionTrace(self.tokens, self.tokens, weights, "self", output, self.notices)


def load_vision(spec: str, device: str = "cpu", dtype: str = "float32", local: bool | None = None,
                name: str | None = None) -> Vision:
    """A ViT or DeiT from a folder or hub id, with its image processor and, if saved, its classification head."""
    from transformers import AutoImageProcessor, AutoModel, AutoModelForImageClassification

    def image_processor(spec: str, local: bool):
        return AutoImageProcessor.from_pretrained(spec, local_files_only=local, trust_remote_code=False)

    p = common.load_parts(spec, local, device, dtype, image_processor, ("ForImageClassification",),
                          AutoModelForImageClassification, AutoModel)
    spec, cfg, classifier = p.spec, p.config, p.head
    vis = Vision(model=p.model, processor=p.reader, label="", device=p.device, dtype=p.dtype, classifier=classifier,
                 notices=p.notices)
    rows, cols = vis.grid
    p = cfg.patch_size
    vis.label = (f"{name or common.name_of(spec)} ({cfg.model_type}, {cfg.num_hidden_layers} layers × "
                 f"{cfg.num_attention_heads} heads, {vis.size[0]}×{vis.size[1]} pixels as {rows}×{cols} patches of "
                 f"{p}×{p}{', with a classifier' if classifier else ''})")
    return vis
