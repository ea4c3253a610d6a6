"""An explicit key/value cache for decoder attention: one k and one v tensor per layer.

It stores what a decoder has already computed for earlier positions so the next step only
projects the new token. It does not know about any model: a layer hands it keys and values
shaped [B, kv_heads, T, head_dim] and gets back everything cached so far. Memory is measured
from the tensors it holds, never estimated.

Without a capacity each append concatenates, which copies the whole cache (O(T) per token).
With one, the first append allocates [B, kv_heads, capacity, head_dim] buffers and later appends
write into them in place, as serving engines do, so a step's cost does not grow with the copy.

    cache = KVCache(n_layers=2)
    k_all, v_all = cache.append(0, k_new, v_new)   # (B, kvh, T_old + T_new, hd)
"""
from __future__ import annotations

import torch

from limits.errors import UserError


class KVCache:
    def __init__(self, n_layers: int, capacity: int | None = None) -> None:
        self.capacity = capacity
        self.keys: list[torch.Tensor | None] = [None] * n_layers    # each (B, kvh, T, hd)
        self.values: list[torch.Tensor | None] = [None] * n_layers  # each (B, kvh, T, hd)
        self._buffers: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * n_layers  # (B, kvh, capacity, hd)

    @property
    def n_layers(self) -> int:
        return len(self.keys)

    def seq_len(self, layer: int = 0) -> int:
        """Number of cached positions in `layer` (0 before the first append)."""
        k = self.keys[layer]
        return 0 if k is None else k.shape[2]

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Add new positions (B, kvh, T_new, hd) to `layer`; return all keys and values so far."""
        if k.ndim != 4 or k.shape != v.shape:
            raise ValueError(f"k and v must both be [B, kv_heads, T, head_dim], "
                             f"got {tuple(k.shape)} and {tuple(v.shape)}")
        if self.capacity is not None:
            return self._write(layer, k, v)
        if self.keys[layer] is None:
            self.keys[layer], self.values[layer] = k, v
        else:
            self.keys[layer] = torch.cat([self.keys[layer], k], dim=2)      # (B, kvh, T_old + T_new, hd)
            self.values[layer] = torch.cat([self.values[layer], v], dim=2)  # (B, kvh, T_old + T_new, hd)
        return self.keys[layer], self.values[layer]

    def _write(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        start = self.seq_len(layer)
        end = start + k.shape[2]
        if end > self.capacity:
            raise UserError(f"The cache holds {self.capacity} positions and {end} were asked for: make it larger.")
        if self._buffers[layer] is None:
            B, kvh, _, hd = k.shape
            self._buffers[layer] = tuple(k.new_empty(B, kvh, self.capacity, hd) for _ in "kv")
        buf_k, buf_v = self._buffers[layer]  # (B, kvh, capacity, hd)
        buf_k[:, :, start:end], buf_v[:, :, start:end] = k, v
        self.keys[layer], self.values[layer] = buf_k[:, :, :end], buf_v[:, :, :end]  # views (B, kvh, end, hd)
        return self.keys[layer], self.values[layer]

    def nbytes(self) -> int:
        """Bytes of the cached positions in every k and v tensor, from their element size and count."""
        return sum(t.element_size() * t.numel() for t in self.keys + self.values if t is not None)

    def bytes_per_layer(self) -> list[int]:
        """[bytes of layer 0 k+v, bytes of layer 1 k+v, ...]"""
        return [
            0 if k is None else k.element_size() * k.numel() + v.element_size() * v.numel()
            for k, v in zip(self.keys, self.values)
        ]
