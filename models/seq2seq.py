"""Character-level encoder-decoder RNNs with Bahdanau, Luong or no attention; greedy and beam decoding.

Encoder: embedding -> bidirectional GRU, annotations h_i = [h_fwd_i; h_bwd_i]. Decoder: a GRU whose
first state comes from the encoder's two final states. The three ways to read the input:

    bahdanau  e_ti = v^T tanh(W_s s_{t-1} + W_h h_i)   previous state scores; context enters the GRU
    luong     e_ti = s_t^T W h_i  ("general")           current state scores; [c_t; s_t] -> tanh -> out
    none      c = [h_fwd_T; h_bwd_1] for every step     one fixed vector (Cho et al. 2014), no weights

`load(name, device, dtype)` gives the date models ("seq2seq-bahdanau", "seq2seq-luong",
"seq2seq-none") and the string-reversal pair ("reverse-attention", "reverse-none") from the
.safetensors files that train/seq2seq.py writes into models/weights/. This file holds the
networks and decoding only; data lives in data/dates.py and data/reverse.py, training in
train/seq2seq.py.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from analysis.trace import AttentionTrace
from data import dates, reverse
from limits.errors import UserError
from models.beam import Hypothesis, search
from models.devices import DTYPES, resolve

PAD, SOS, EOS = 0, 1, 2
SPECIALS = ["<pad>", "<s>", "</s>"]
WEIGHTS = Path(__file__).parent / "weights"

# registry key -> (weights file stem, task); the task fixes the alphabets and length limits
MODELS = {
    "seq2seq-bahdanau": ("seq2seq_dates_bahdanau", "dates"),
    "seq2seq-luong": ("seq2seq_dates_luong", "dates"),
    "seq2seq-none": ("seq2seq_dates_none", "dates"),
    "reverse-attention": ("seq2seq_reverse_attention", "reverse"),
    "reverse-none": ("seq2seq_reverse_none", "reverse"),
}
TASKS = {
    "dates": dict(src=dates.CHARS, tgt="0123456789-", max_in=dates.MAX_LEN, max_out=12),
    "reverse": dict(src=reverse.CHARS, tgt=reverse.CHARS, max_in=reverse.MAX_LEN, max_out=reverse.MAX_LEN + 2),
}


@dataclass(frozen=True)
class Config:
    task: str            # "dates" or "reverse"
    attention: str       # "bahdanau", "luong" or "none"
    emb: int = 32
    hidden: int = 64     # per direction in the encoder; the decoder's state size
    attn: int = 64       # Bahdanau's hidden scoring size (unused by luong/none)


class Vocab:
    """Characters <-> ids with <pad>=0, <s>=1, </s>=2: Vocab('ab').encode('ba') -> [4, 3]"""

    def __init__(self, chars: str):
        self.itos = SPECIALS + list(chars)
        self.stoi = {c: i for i, c in enumerate(self.itos)}

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, text: str) -> list[int]:
        return [self.stoi[c] for c in text]

    def decode(self, ids) -> list[str]:
        """Characters up to (not including) </s>."""
        out = []
        for i in ids:
            if i == EOS:
                break
            out.append(self.itos[i])
        return out


def pad_batch(seqs: list[list[int]], device: str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """[[5, 6], [7]] -> ids [[5, 6], [7, 0]] (B, T), lengths [2, 1] (B,)"""
    T = max(len(q) for q in seqs)
    ids = torch.tensor([q + [PAD] * (T - len(q)) for q in seqs], dtype=torch.long, device=device)
    return ids, torch.tensor([len(q) for q in seqs], dtype=torch.long, device=device)


def additive_attention(s_prev, keys, values, mask, W_s, v):
    """Bahdanau: e_ti = v^T tanh(W_s s_{t-1} + W_h h_i); keys = W_h h (precomputed once per input)."""
    e = v(torch.tanh(W_s(s_prev).unsqueeze(1) + keys)).squeeze(-1)  # (B, T_in)
    alpha = torch.softmax(e.masked_fill(~mask, -math.inf), dim=-1)  # (B, T_in)
    context = torch.bmm(alpha.unsqueeze(1), values).squeeze(1)      # (B, 2H)
    return context, alpha


def general_attention(s, keys, values, mask):
    """Luong "general": score(s_t, h_i) = s_t^T W h_i; keys = W h (precomputed). s may hold many steps."""
    e = torch.bmm(s, keys.transpose(1, 2))                          # (B, T_out, T_in)
    alpha = torch.softmax(e.masked_fill(~mask.unsqueeze(1), -math.inf), dim=-1)  # (B, T_out, T_in)
    context = torch.bmm(alpha, values)                              # (B, T_out, 2H)
    return context, alpha


class Seq2Seq(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.cfg = cfg
        task = TASKS[cfg.task]
        self.src_vocab, self.tgt_vocab = Vocab(task["src"]), Vocab(task["tgt"])
        H, E = cfg.hidden, cfg.emb
        self.src_emb = nn.Embedding(len(self.src_vocab), E, padding_idx=PAD)
        self.encoder = nn.GRU(E, H, batch_first=True, bidirectional=True)
        self.bridge = nn.Linear(2 * H, H)
        self.tgt_emb = nn.Embedding(len(self.tgt_vocab), E)
        if cfg.attention == "bahdanau":
            self.W_h = nn.Linear(2 * H, cfg.attn)
            self.W_s = nn.Linear(H, cfg.attn, bias=False)
            self.v = nn.Linear(cfg.attn, 1, bias=False)
            self.decoder = nn.GRU(E + 2 * H, H, batch_first=True)
            self.out = nn.Linear(H + 2 * H, len(self.tgt_vocab))
        elif cfg.attention == "luong":
            self.W = nn.Linear(2 * H, H, bias=False)
            self.decoder = nn.GRU(E, H, batch_first=True)
            self.W_c = nn.Linear(2 * H + H, H)
            self.out = nn.Linear(H, len(self.tgt_vocab))
        elif cfg.attention == "none":
            self.decoder = nn.GRU(E + 2 * H, H, batch_first=True)
            self.out = nn.Linear(H + 2 * H, len(self.tgt_vocab))
        else:
            raise ValueError(f"attention must be bahdanau, luong or none, not {cfg.attention!r}")

    def encode(self, src, lengths):
        """src (B, T_in) ids, lengths (B,) -> memory dict: annotations, mask, keys, first state, fixed context."""
        x = self.src_emb(src)                                            # (B, T_in, E)
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        h, h_n = self.encoder(packed)
        h, _ = nn.utils.rnn.pad_packed_sequence(h, batch_first=True, total_length=src.shape[1])  # (B, T_in, 2H)
        final = torch.cat([h_n[0], h_n[1]], dim=-1)                      # (B, 2H) forward end, backward start
        mem = {"h": h, "mask": src != PAD, "s0": torch.tanh(self.bridge(final)), "fixed": final}
        if self.cfg.attention == "bahdanau":
            mem["keys"] = self.W_h(h)                                    # (B, T_in, A)
        elif self.cfg.attention == "luong":
            mem["keys"] = self.W(h)                                      # (B, T_in, H)
        return mem

    def step(self, y_prev, s_prev, mem):
        """One decoding step. y_prev (B,), s_prev (B, H) -> log-probs (B, V), s (B, H), alpha (B, T_in) or None."""
        y = self.tgt_emb(y_prev)                                         # (B, E)
        kind = self.cfg.attention
        if kind == "bahdanau":
            context, alpha = additive_attention(s_prev, mem["keys"], mem["h"], mem["mask"], self.W_s, self.v)
            _, s = self.decoder(torch.cat([y, context], -1).unsqueeze(1), s_prev.unsqueeze(0))
            s = s.squeeze(0)                                             # (B, H)
            logits = self.out(torch.cat([s, context], -1))               # (B, V)
        elif kind == "luong":
            _, s = self.decoder(y.unsqueeze(1), s_prev.unsqueeze(0))
            s = s.squeeze(0)                                             # (B, H)
            context, alpha = general_attention(s.unsqueeze(1), mem["keys"], mem["h"], mem["mask"])
            context, alpha = context.squeeze(1), alpha.squeeze(1)        # (B, 2H), (B, T_in)
            logits = self.out(torch.tanh(self.W_c(torch.cat([context, s], -1))))
        else:
            context, alpha = mem["fixed"], None
            _, s = self.decoder(torch.cat([y, context], -1).unsqueeze(1), s_prev.unsqueeze(0))
            s = s.squeeze(0)
            logits = self.out(torch.cat([s, context], -1))
        return F.log_softmax(logits.float(), dim=-1), s, alpha

    def forward(self, src, lengths, tgt_in):
        """Teacher forcing: tgt_in (B, T_out) starts with <s> -> logits (B, T_out, V), alpha (B, T_out, T_in) or None.
        luong and none run the decoder GRU over all steps at once (their context never enters the GRU
        through attention); bahdanau must go step by step because c_t feeds s_t."""
        mem = self.encode(src, lengths)
        y = self.tgt_emb(tgt_in)                                         # (B, T_out, E)
        kind = self.cfg.attention
        if kind == "bahdanau":
            s, logits, alphas = mem["s0"], [], []
            for t in range(tgt_in.shape[1]):
                context, alpha = additive_attention(s, mem["keys"], mem["h"], mem["mask"], self.W_s, self.v)
                _, s = self.decoder(torch.cat([y[:, t], context], -1).unsqueeze(1), s.unsqueeze(0))
                s = s.squeeze(0)                                         # (B, H)
                logits.append(self.out(torch.cat([s, context], -1)))
                alphas.append(alpha)
            return torch.stack(logits, 1), torch.stack(alphas, 1)
        if kind == "luong":
            s, _ = self.decoder(y, mem["s0"].unsqueeze(0))               # (B, T_out, H)
            context, alpha = general_attention(s, mem["keys"], mem["h"], mem["mask"])
            return self.out(torch.tanh(self.W_c(torch.cat([context, s], -1)))), alpha
        fixed = mem["fixed"].unsqueeze(1).expand(-1, y.shape[1], -1)     # (B, T_out, 2H)
        s, _ = self.decoder(torch.cat([y, fixed], -1), mem["s0"].unsqueeze(0))
        return self.out(torch.cat([s, fixed], -1)), None

    @torch.no_grad()
    def greedy(self, src, lengths, max_out):
        """Batched greedy decoding -> ids (B, T) (rows padded after </s>), alpha (B, T, T_in) or None."""
        mem = self.encode(src, lengths)
        B = src.shape[0]
        y, s = torch.full((B,), SOS, dtype=torch.long, device=src.device), mem["s0"]
        done = torch.zeros(B, dtype=torch.bool, device=src.device)
        ids, alphas = [], []
        for _ in range(max_out):
            logp, s, alpha = self.step(y, s, mem)
            y = logp.argmax(-1).masked_fill(done, PAD)                   # (B,)
            ids.append(y)
            alphas.append(alpha)
            done |= y == EOS
            if done.all():
                break
        alpha = None if alphas[0] is None else torch.stack(alphas, 1).float()
        return torch.stack(ids, 1), alpha

    @torch.no_grad()
    def hypotheses(self, src, lengths, max_out, width) -> list[Hypothesis]:
        """Beam search for one input (B = 1) with models.beam.search: every hypothesis it ended with,
        best first, each with its summed log-probability and attention rows."""
        mem = self.encode(src, lengths)

        def step(prefixes, states):
            k = len(prefixes)
            prev = torch.tensor([p[-1] if p else SOS for p in prefixes], device=src.device)  # (k,)
            mem_k = {key: val.expand(k, *val.shape[1:]) for key, val in mem.items()}
            logp, s, alpha = self.step(prev, torch.stack(states), mem_k)  # (k, V), (k, H), (k, T_in)
            return logp, list(s), alpha

        return search(step, width, max_out, EOS, state=mem["s0"][0])

    def beam(self, src, lengths, max_out, width):
        """The best hypothesis of beam search -> ids (T,) ending in </s> when found, alpha (T, T_in) or None.
        Width 1 is exactly greedy."""
        best = self.hypotheses(src, lengths, max_out, width)[0]
        alpha = torch.stack(best.alphas).float() if best.alphas else None
        return torch.tensor(best.ids), alpha


def from_file(path: Path, device: str = "cpu", dtype: str = "float32") -> Seq2Seq:
    """Rebuild a Seq2Seq from a .safetensors file whose metadata holds its Config."""
    from safetensors import safe_open
    from safetensors.torch import load_file

    with safe_open(str(path), framework="pt") as f:
        cfg = Config(**json.loads(f.metadata()["config"]))
    net = Seq2Seq(cfg)
    net.load_state_dict(load_file(str(path)))
    return net.to(device=device, dtype=DTYPES[dtype]).eval()


@dataclass(frozen=True)
class Decoded:
    source: list[str]          # input characters as the model read them (spaces collapsed, case kept)
    output: list[str]          # produced characters, without </s>
    weights: np.ndarray | None  # float32 (len(output), len(source)): attention while producing each; None without
    notices: tuple[str, ...]
    score: float | None = None  # summed log-probability, for a beam-search hypothesis
    finished: bool = True       # wrote </s> (a beam hypothesis may stop without it)


class Seq2SeqModel:
    """A trained Seq2Seq with its task's input rules: decode() text, or attend() for an AttentionTrace."""

    family = "rnn"  # models.contract.AttentionModel
    predicts = "target token"  # the next character of its output
    next_token_model = None  # a recurrent seq2seq, not a transformers causal LM
    tokenizer = None  # reads characters through its own vocabulary
    windows = ()
    kv_head_of = None

    def __init__(self, name: str, net: Seq2Seq, device: str, dtype: str, notices: tuple[str, ...] = ()):
        self.name, self.net, self.device, self.dtype, self.notices = name, net, device, dtype, notices
        cfg = net.cfg
        what = {"bahdanau": "Bahdanau (additive) attention", "luong": "Luong (general) attention",
                "none": "no attention (one fixed context vector)"}[cfg.attention]
        task = {"dates": "written dates → ISO 8601", "reverse": "reversing strings of 4–60 letters"}[cfg.task]
        self.label = f"Char-level GRU encoder-decoder ({cfg.hidden} units) with {what}, trained on {task}"

    def _clean(self, text: str) -> str:
        task, limits = self.net.cfg.task, TASKS[self.net.cfg.task]
        clean = " ".join((text or "").split())
        what = "a date such as 'march 3, 2021'" if task == "dates" else "some letters, e.g. 'attention'"
        if not clean:
            raise UserError(f"Type {what} to decode.")
        if len(clean) > limits["max_in"]:
            raise UserError(f"That input is {len(clean)} characters; these models read at most "
                            f"{limits['max_in']}, so shorten it to {what}.")
        bad = sorted(set(clean.lower()) - set(limits["src"]))
        if task == "dates" and {"/", "-"} & set(bad):
            raise UserError("Numeric dates like 3/3/2021 are not among the formats these models learned; "
                            "write the month as a word, e.g. '3 march 2021'.")
        if bad:
            allowed = ("letters, digits, spaces, commas and periods" if task == "dates"
                       else "the letters a-z, with no spaces")
            raise UserError(f"This model reads only {allowed}; remove {' '.join(repr(c) for c in bad)}.")
        return clean

    def _notices(self, clean: str, output: str) -> tuple[str, ...]:
        if self.net.cfg.task == "reverse":
            if len(clean) < reverse.MIN_LEN:
                return (f"The reversal models were trained on {reverse.MIN_LEN}–{reverse.MAX_LEN} letters; "
                        "shorter inputs are outside what they saw.",)
            return ()
        iso, found = dates.parse(clean), dates.fields(clean)
        if iso is None and found is not None:
            year, month, day = found
            if not dates.FIRST.year <= year <= dates.LAST.year:
                return (f"The format is one the model learned, but it only saw years {dates.FIRST.year}–"
                        f"{dates.LAST.year}: for {year} its output cannot be trusted.",)
            return (f"The format is one the model learned, but {year} has no day {day} in month {month}: "
                    "the output cannot be right.",)
        if iso is None:
            return ("This does not read as a date in the formats the model was trained on "
                    "(e.g. '3rd of march 2021', 'tue, march 3, 2021'): it still decodes, but the model "
                    "only knows dates, so the output means nothing.",)
        if iso != output:
            return (f"A rule-based reader makes this {iso}; the model wrote {output}.",)
        return ()

    def decode(self, text: str, beam: int = 1) -> Decoded:
        """Greedy (beam = 1) or beam-search decoding of one input. Raises ValueError for unusable input."""
        clean = self._clean(text)
        net, max_out = self.net, TASKS[self.net.cfg.task]["max_out"]
        src, lengths = pad_batch([net.src_vocab.encode(clean.lower())], self.device)
        if beam <= 1:
            ids, alpha = net.greedy(src, lengths, max_out)
            ids, alpha = ids[0], None if alpha is None else alpha[0]
        else:
            ids, alpha = net.beam(src, lengths, max_out, beam)
        output = net.tgt_vocab.decode(ids.tolist())
        weights = None if alpha is None else alpha[: len(output)].cpu().numpy().astype(np.float32)
        return Decoded(list(clean), output, weights, self.notices + self._notices(clean, "".join(output)))

    def hypotheses(self, text: str, width: int) -> list[Decoded]:
        """Every hypothesis beam search of `width` ended with, best first, each with its score and alignment."""
        clean = self._clean(text)
        net, max_out = self.net, TASKS[self.net.cfg.task]["max_out"]
        src, lengths = pad_batch([net.src_vocab.encode(clean.lower())], self.device)
        out = []
        for hyp in net.hypotheses(src, lengths, max_out, width):
            output = net.tgt_vocab.decode(hyp.ids)
            weights = (torch.stack(hyp.alphas)[: len(output)].float().cpu().numpy() if hyp.alphas else None)
            out.append(Decoded(list(clean), output, weights, self.notices, hyp.score, hyp.finished))
        return out

    def attend(self, text: str, text_b: str | None = None, beam: int = 1) -> AttentionTrace:
        """Cross-attention of the decoder over the input: weights [1, 1, T_out, T_in], output = decoded text."""
        if self.net.cfg.attention == "none":
            raise UserError("This model has no attention to show: it reads one fixed context vector.")
        d = self.decode(text, beam)
        notices = d.notices + (("The seq2seq models read one input; the second text is ignored.",)
                               if text_b and text_b.strip() else ())
        return AttentionTrace(tokens=d.output, key_tokens=d.source, weights=d.weights[None, None],
                              kind="cross", output="".join(d.output), notices=notices)


def load(name: str, device: str = "cpu", dtype: str = "float32") -> Seq2SeqModel:
    """A shipped model by name: seq2seq-bahdanau | seq2seq-luong | seq2seq-none | reverse-attention | reverse-none."""
    if name not in MODELS:
        raise UserError(f"Unknown seq2seq model '{name}': choose one of {', '.join(MODELS)}.")
    path = WEIGHTS / f"{MODELS[name][0]}.safetensors"
    if not path.exists():
        raise UserError(f"The weights {path.name} are missing; run `python -m train.seq2seq` to make them.")
    device, dtype, notices = resolve(device, dtype)
    return Seq2SeqModel(name, from_file(path, device, dtype), device, dtype, notices)
