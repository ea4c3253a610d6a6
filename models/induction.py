"""The attention-only transformer whose induction heads form during training: 2 layers x 4 heads, d_model 64.

Olsson et al. (2022)'s smallest model: token and learned position embeddings, two pre-norm attention-only blocks
(x + attn(ln_1(x)); no MLP), final norm, unembedding. Its blocks are `blocks[i].attn` of models.attention with
c_proj, n_head and head_size, as the tiny decoder's, so models.gates gates its heads unchanged. The vocabulary is
data/induction.py's 64 syllables. train/induction.py trained it and wrote its checkpoints under
models/weights/induction/ (step_XXXXX.safetensors, fp16, config in the metadata) with scores.json, the scores it
measured there. This file does not train or score; it reads a checkpoint and shows its attention.

    m = load("induction", checkpoint=None)    # None: the last checkpoint; else a training step, e.g. 3200
    m.attend("ba ke mi ba ke mi")             # AttentionTrace, kind "causal"
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn as nn

from analysis.trace import AttentionTrace, HeadQKV
from data.induction import SEQ_LEN, VOCAB, encode
from limits.errors import UserError
from models.attention import CausalSelfAttention
from models.builtin import BuiltinDecoder
from models.causal_lm import CausalLM

FOLDER = Path(__file__).parent / "weights" / "induction"


@dataclass(frozen=True)
class InductionConfig:
    vocab_size: int = len(VOCAB)
    block_size: int = SEQ_LEN
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 64


class AttnOnlyBlock(nn.Module):
    """x + attn(ln_1(x)): a block without MLP, so everything a head writes reaches the unembedding directly."""

    def __init__(self, d_model: int, attn: nn.Module) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(d_model)
        self.attn = attn

    def forward(self, x: torch.Tensor, cache, layer: int,
                mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        a, att = self.attn(self.ln_1(x), cache, layer, mask)  # (B, T, C), (B, nh, T, T)
        return x + a, att


class InductionNet(CausalLM):
    def __init__(self, cfg: InductionConfig) -> None:
        blocks = [AttnOnlyBlock(cfg.n_embd, CausalSelfAttention(cfg.n_embd, cfg.n_head)) for _ in range(cfg.n_layer)]
        super().__init__(cfg.vocab_size, cfg.block_size, cfg.n_embd, blocks)
        self.cfg = cfg

    def attention_input(self, idx: torch.Tensor, layer: int) -> torch.Tensor:
        """The normalised residual stream entering `layer`'s attention: idx (B, T) -> (B, T, C)."""
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))  # (B, T, C)
        for i, block in enumerate(self.blocks[:layer]):
            x, _ = block(x, None, i)
        return self.blocks[layer].ln_1(x)


def steps() -> list[int]:
    """The training steps of the shipped checkpoints, in order, e.g. [0, 500, ..., 6000]."""
    return sorted(int(p.stem.split("_")[1]) for p in FOLDER.glob("step_*.safetensors"))


def path(step: int) -> Path:
    return FOLDER / f"step_{step:05d}.safetensors"


def save(net: InductionNet, step: int, folder: Path = FOLDER) -> Path:
    """Write the net as fp16 (half the bytes; scores are measured on what is read back) with its config."""
    from safetensors.torch import save_file

    out = folder / path(step).name
    tensors = {k: v.detach().to(torch.float16).contiguous() for k, v in net.state_dict().items()}
    save_file(tensors, str(out), metadata={"config": json.dumps(asdict(net.cfg)), "step": str(step)})
    return out


def read(step: int | None = None) -> tuple[InductionNet, int]:
    """The net at training step `step` (None: the last checkpoint), in float32 and eval mode, and its step."""
    from safetensors import safe_open
    from safetensors.torch import load_file

    shipped = steps()
    if not shipped:
        raise UserError(f"No induction checkpoints in {FOLDER}: run `python -m train.induction` to make them.")
    step = shipped[-1] if step is None else int(step)
    if step not in shipped:
        raise UserError(f"No induction checkpoint at step {step}: choose one of {', '.join(map(str, shipped))}.")
    with safe_open(str(path(step)), "pt") as f:
        cfg = InductionConfig(**json.loads(f.metadata()["config"]))
    net = InductionNet(cfg)
    net.load_state_dict({k: v.float() for k, v in load_file(str(path(step))).items()})
    return net.eval(), step


def scores() -> dict:
    """scores.json as train/induction.py wrote it: {"steps": [...], per-checkpoint lists, "eval": {...}}."""
    return json.loads((FOLDER / "scores.json").read_text())


class Induction(BuiltinDecoder):
    family = "induction"  # ui.family: its own kind (no Hugging Face decoder parts)
    vocab = VOCAB         # token strings by id (experiments.patching names answers by them)

    def __init__(self, device: str, dtype: str, checkpoint: int | None) -> None:
        net, self.step = read(checkpoint)
        self.notices = self._place(net, device, dtype)
        self.label = (
            f"induction: attention-only, {self.shape()}, trained on random syllables with a repeated segment "
            f"(checkpoint at step {self.step:,} of {steps()[-1]:,})"
        )

    def ids(self, text: str) -> torch.Tensor:
        return torch.tensor([encode(text)], device=self.device)  # (1, T)

    @torch.no_grad()
    def logits(self, text: str) -> torch.Tensor:
        """Next-token logits (T, V) at every position of `text`."""
        out, _ = self.net(self.ids(text))
        return out[0].float()

    @torch.no_grad()
    def attend(self, text: str, text_b: str | None = None) -> AttentionTrace:
        ids = self.ids(text)
        logits, atts = self.net(ids)  # (1, T, V), [(1, nh, T, T)]
        w = torch.stack([a[0] for a in atts]).float().cpu().numpy()  # (L, nh, T, T)
        tokens = [VOCAB[i] for i in ids[0].tolist()]
        return AttentionTrace(tokens=tokens, key_tokens=list(tokens), weights=w, kind="causal",
                              output=VOCAB[int(logits[0, -1].argmax())], notices=self.notices)

    def head_qkv(self, text: str, layer: int, head: int) -> HeadQKV:
        """Tokens, the attention input X (T, C), head `head`'s q, k, v (T, hs) and its own weights (T, T)."""
        ids = encode(text)
        return self._head_qkv(ids, [VOCAB[i] for i in ids], layer, head, own_weights=True)


def load(name: str = "induction", device: str = "cpu", dtype: str = "float32",
         checkpoint: int | None = None) -> Induction:
    return Induction(device, dtype, checkpoint)
