"""What the Seq2seq view reads of the shipped date and reversal models besides their attention: how each GRU
scores (words, formula, code), the accuracy by input length train/seq2seq.py measured, the exact-match share on
long inputs, one layer's (or head's) cross-attention rows of a transformer's hypothesis, and the table of greedy
against beam search. It runs no model (the view decodes through models.seq2seq and models.hf.encdec and passes the
results in) and draws nothing (viz/seq2seq.py draws).
"""
from __future__ import annotations

import json

import numpy as np

from models.hf.encdec import Written, source_rows
from models.seq2seq import WEIGHTS

LONG = 40  # "long" strings to reverse: 40-60 letters, where one fixed context vector fails

SCORING = {  # model -> (title, how it scores, formula, the line of code in models/seq2seq.py)
    "seq2seq-bahdanau": ("Bahdanau (additive)", "Bahdanau et al. 2015: scored with the previous decoder state.",
                         r"\begin{aligned}e_{ti} &= v^\top \tanh(W_s\, s_{t-1} + W_h\, h_i)\\"
                         r"c_t &= \textstyle\sum_i \mathrm{softmax}_i(e_{ti})\, h_i\end{aligned}",
                         "e = v(torch.tanh(W_s(s_prev).unsqueeze(1) + W_h(h))).squeeze(-1)  # (B, T_in)"),
    "seq2seq-luong": ("Luong (general)", "Luong et al. 2015: scored with the current state; the context "
                      "joins after the RNN.",
                      r"\begin{aligned}e_{ti} &= s_t^\top W h_i\\"
                      r"\tilde s_t &= \tanh(W_c\,[c_t; s_t])\end{aligned}",
                      "e = torch.bmm(s, W(h).transpose(1, 2))  # (B, T_out, T_in)"),
}


def length_figures() -> dict:
    """seq2seq_eval.json as train/seq2seq.py wrote it: {'reverse': {'lengths': [4, ...], 'reverse-attention':
    {'exact': [...], 'char': [...]}, 'reverse-none': {...}}, 'dates_exact': ...}."""
    return json.loads((WEIGHTS / "seq2seq_eval.json").read_text())


def long_exact(reverse: dict, name: str) -> float:
    """The mean exact match of `name` ('reverse-attention' or 'reverse-none') over the lengths of LONG or more:
    {'lengths': [39, 40, 41], 'x': {'exact': [1, .5, 0]}}, 'x' -> 0.25."""
    long = [i for i, n in enumerate(reverse["lengths"]) if n >= LONG]
    return sum(reverse[name]["exact"][i] for i in long) / len(long)


def cross_rows(w: Written, layer: int, head: int | None) -> np.ndarray:
    """[len(output), S]: the cross-attention rows that chose each written token, in one head of `layer`, or the mean
    over the layer's heads when head is None."""
    rows = source_rows(w)  # (L, H, T_out, S)
    return rows[layer].mean(0) if head is None else rows[layer, head]


def hypotheses_table(greedy: Written, beams: list[Written]) -> list[dict]:
    """A row per hypothesis, greedy first: its name, output, log-probability (4 decimals) and whether it ended."""
    return [{"": "greedy" if i < 0 else f"beam {i + 1}", "output": "".join(h.output),
             "log-probability": round(h.score, 4), "ended with </s>": h.finished}
            for i, h in [(-1, greedy), *enumerate(beams)]]
