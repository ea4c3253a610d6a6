"""A tiny decoder-only transformer that sorts 1-10 digits: "31415=" -> "11345.".

nanoGPT's GPT cut down to 2 layers x 4 heads x d_model 64, with attention computed explicitly
so every layer returns its weights, and an explicit KVCache (models/kv_cache.py) for generation.
Its weights were trained by train/tiny.py and ship in models/weights/tiny.safetensors
(config and measured accuracy in the file's metadata). It does not train here, and it knows
nothing about text beyond the twelve symbols 0-9, '=' (answer follows) and '.' (answer ends).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from analysis.trace import AttentionTrace, HeadQKV
from data.sorting import END, MAX_DIGITS, VOCAB, encode
from models.attention import CausalSelfAttention
from models.builtin import BuiltinDecoder
from models.causal_lm import Block, CausalLM
from models.generate import stream

WEIGHTS = Path(__file__).parent / "weights" / "tiny.safetensors"


@dataclass(frozen=True)
class TinyConfig:
    vocab_size: int = len(VOCAB)
    block_size: int = 2 * MAX_DIGITS + 2  # digits, '=', sorted digits, '.'
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 64


class TinyDecoder(CausalLM):
    def __init__(self, cfg: TinyConfig) -> None:
        blocks = [Block(cfg.n_embd, CausalSelfAttention(cfg.n_embd, cfg.n_head)) for _ in range(cfg.n_layer)]
        super().__init__(cfg.vocab_size, cfg.block_size, cfg.n_embd, blocks)
        self.cfg = cfg

    def attention_input(self, idx: torch.Tensor, layer: int) -> torch.Tensor:
        """The normalised residual stream entering `layer`'s attention: idx (B, T) -> (B, T, C)."""
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))  # (B, T, C)
        for block in self.blocks[:layer]:
            x, _ = block(x, None, 0)
        return self.blocks[layer].ln_1(x)

    @torch.no_grad()
    def generate(self, idx: torch.Tensor, max_new: int, use_cache: bool = True
                 ) -> tuple[torch.Tensor, torch.Tensor, list[torch.Tensor] | None]:
        """Greedy decoding until '.' or max_new tokens (models.generate.stream).

        Returns new tokens (B, n), step logits (B, n, V), and, with the cache, the attention rows of
        every position fed in: per layer (B, nh, T_fed, T_fed) with the upper triangle zero.
        """
        steps = list(stream(self, idx, max_new, use_cache, stop=END))
        out, logits = torch.cat([s.ids for s in steps], dim=1), torch.stack([s.logits for s in steps], dim=1)
        if not use_cache:
            return out, logits, None
        T = steps[-1].weights[0].shape[-1]
        weights = [
            torch.cat([F.pad(s.weights[layer], (0, T - s.weights[layer].shape[-1])) for s in steps], dim=2)
            for layer in range(len(self.blocks))
        ]  # each (B, nh, T, T)
        return out, logits, weights


def read_weights(path: Path = WEIGHTS) -> tuple[TinyDecoder, dict]:
    """Build the decoder from a .safetensors file whose metadata holds its config and training record
    (or, for a file models.pruned_hf.export wrote, the pruned heads: those are sliced out before loading)."""
    from safetensors import safe_open
    from safetensors.torch import load_file

    from models.prune import prune_heads

    with safe_open(str(path), "pt") as f:
        meta = f.metadata()
    cfg = TinyConfig(**json.loads(meta["config"]))
    model = prune_heads(TinyDecoder(cfg), json.loads(meta.get("pruned_heads", "{}")))
    model.load_state_dict(load_file(str(path)))
    return model.eval(), json.loads(meta.get("record", "{}"))


class Tiny(BuiltinDecoder):
    family = "tiny"  # models.contract.AttentionModel

    def __init__(self, device: str, dtype: str) -> None:
        net, self.record = read_weights()
        self._notices = self._place(net, device, dtype)
        self.notices: tuple[str, ...] = ()  # the device fallback (_notices) rides on every trace instead
        self.label = (
            f"tiny decoder: {self.shape()}, trained to sort 1-{MAX_DIGITS} digits "
            f"({100 * self.record['heldout_exact']:.2f}% exact on {self.record['heldout_n']:,} held-out strings)"
        )

    def run(self, text: str) -> tuple[list[int], list[int], list[torch.Tensor], bool]:
        """Prompt ids, answer ids (without '.'), per-layer causal weights (nh, T, T) over every position
        fed in, and whether the answer ended with '.'"""
        prompt = encode(text)
        idx = torch.tensor([prompt], device=self.device)  # (1, T0)
        new, _, weights = self.net.generate(idx, max_new=MAX_DIGITS + 1)
        gen = new[0].tolist()
        finished = gen[-1] == END
        return prompt, gen[:-1] if finished else gen, [w[0] for w in weights], finished

    def attend(self, text: str, text_b: str | None = None) -> AttentionTrace:
        prompt, answer, weights, finished = self.run(text)
        # the last token produced is never fed back, so it has no row: with '.' that loses nothing
        tokens = [VOCAB[i] for i in prompt + answer][: weights[0].shape[-1]]
        notices = self._notices if finished else self._notices + (
            f"The decoder did not end its answer within {MAX_DIGITS + 1} tokens; showing what it wrote.",
        )
        w = torch.stack(weights).float().cpu().numpy()  # (L, nh, T, T)
        return AttentionTrace(
            tokens=tokens, key_tokens=list(tokens), weights=w, kind="causal",
            output="".join(VOCAB[i] for i in answer), notices=notices,
        )

    def head_qkv(self, text: str, layer: int, head: int) -> HeadQKV:
        """Tokens, the attention input X (T, C) and head `head`'s q, k, v (T, hs) over prompt + answer."""
        prompt, answer, _, _ = self.run(text)
        return self._head_qkv(prompt + answer, [VOCAB[i] for i in prompt + answer], layer, head, own_weights=False)


def load(name: str = "tiny", device: str = "cpu", dtype: str = "float32") -> Tiny:
    return Tiny(device, dtype)
