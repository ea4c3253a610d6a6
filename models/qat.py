"""Quantization-aware training for int8: fake-quantize every linear layer, fine-tune, take the float weights.

prepare() swaps each nn.Linear for torchao's FakeQuantizedLinear with the same int8 scheme as the int8
dynamic PTQ variant (models.variants): weights symmetric with one scale per output channel, activations
affine with one scale and zero point per token, both recomputed on every forward. The forward pass then rounds as
the int8 model will, while gradients pass the rounding straight through (the straight-through
estimator), so training moves the weights to where rounding hurts least. convert() swaps the float
nn.Linear back; the shipped file holds those float weights, and models.variants quantizes them with
the PTQ config at load time. finetune() is the loop every train/<name>_qat.py script runs.
Does not choose data or learning rates: the scripts do.

    prepare(net); finetune(net, batches, loss_fn, steps=1500, lr=3e-4); convert(net)
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import torch
import torch.nn as nn

from models.variants import torchao_api


def _qat():
    """torchao's QAT module (after models.variants quiets torchao's extension-loading noise)."""
    torchao_api()
    import torchao.quantization.qat as qat

    return qat


def prepare(module: nn.Module) -> nn.Module:
    """Every nn.Linear of `module` fake-quantized in place (int8 weights per channel, activations per token)."""
    qat = _qat()
    activations = qat.IntxFakeQuantizeConfig(torch.int8, "per_token", is_symmetric=False)
    weights = qat.IntxFakeQuantizeConfig(torch.int8, "per_channel", is_symmetric=True)
    torchao_api().quantize_(module, qat.QATConfig(activation_config=activations, weight_config=weights,
                                                  step="prepare"))
    return module


def convert(module: nn.Module) -> nn.Module:
    """The fake-quantized layers back to plain nn.Linear with the trained float weights, in place."""
    torchao_api().quantize_(module, _qat().QATConfig(step="convert"))
    return module


def lr_at(step: int, steps: int, lr: float, warmup: int) -> float:
    """Linear warm-up to lr, then cosine down to lr / 100."""
    if step < warmup:
        return lr * (step + 1) / warmup
    t = (step - warmup) / max(1, steps - warmup)
    return lr / 100 + 0.5 * (lr - lr / 100) * (1 + math.cos(math.pi * t))


def finetune(module: nn.Module, batches: Iterator, loss_fn: Callable[[nn.Module, object], torch.Tensor], steps: int,
             lr: float, warmup: int = 50, log: Callable[[int, float], None] | None = None) -> nn.Module:
    """AdamW on loss_fn(module, next(batches)) for `steps` steps (clip 1.0, no weight decay), in train mode."""
    module.train()
    opt = torch.optim.AdamW(module.parameters(), lr=lr, betas=(0.9, 0.98), weight_decay=0.0)
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, steps, lr, warmup)
        loss = loss_fn(module, next(batches))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(module.parameters(), 1.0)
        opt.step()
        if log:
            log(step, loss.item())
    return module.eval()
