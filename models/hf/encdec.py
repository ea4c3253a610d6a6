"""Encoder-decoders through transformers (T5, BART, Marian): the three kinds of attention of one input.

attend(text) encodes the text, writes the output greedily (models.beam.search with width 1: the one
beam search here, shared with the GRU date models), then runs one teacher-forced forward pass over what
it wrote and returns the model's own output_attentions: the cross-attention (kind "cross": decoder
tokens over encoder tokens, Q from the decoder, K and V from the encoder) with parts["encoder"] (self)
and parts["decoder"] (causal). With a second text, the decoder is fed that instead (teacher forcing,
as bertviz shows a source and a target). The decoder tokens are what the decoder was fed: its start
token, then every written token but the last, so row t is the attention that chose written token t.
hypotheses(text, width) is beam search with each hypothesis's score and cross-attention. The search
keeps keys and values in transformers' own cache; the attention shown comes from the one full pass.
It does not sample; loading rules are models.hf.common's.

    s2s = load_encdec("./my-marian")
    trace = s2s.attend("3 march 2021")          # trace.parts["encoder"], trace.parts["decoder"]
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

import limits
from analysis.trace import AttentionTrace
from limits.errors import UserError
from models import layout
from models.beam import Hypothesis, search
from models.hf import common
from models.hf.common import check_text

MAX_NEW = 64  # tokens the decoder writes at most for one input (limits.current().new_tokens may be lower)


@dataclass(frozen=True)
class Written:
    """One decoded output: what was written, its score, and the model's attention while writing it."""
    source: list[str]            # encoder tokens
    output: list[str]            # written tokens, without the end-of-sequence token
    score: float                 # summed log-probability (0 for a fed target)
    finished: bool               # wrote the end-of-sequence token
    trace: AttentionTrace        # cross-attention over decoder inputs, with parts encoder and decoder


@dataclass(kw_only=True)
class EncoderDecoder(common.HFModel):
    tokenizer: object
    lm: bool = True  # the weights hold a language-model head, so it can write

    @property
    def predicts(self) -> str | None:
        """models.contract.PREDICTS: the next token of its output with a language-model head, else nothing."""
        return "target token" if self.lm else None
    family = "encoder-decoder"

    @property
    def start(self) -> int:
        """The decoder's first token: the config's, else its generation config's, else its end of text (PLBart's
        checkpoints name none: its decoder input is the target shifted right behind the target's last token)."""
        for cfg in (self.config, getattr(self.model, "generation_config", None)):
            start = getattr(cfg, "decoder_start_token_id", None)
            if start is not None:
                return start
        return self.eos

    @property
    def eos(self) -> int | None:
        """The token that ends an output: the config's, else its decoder config's (an EncoderDecoderModel joins
        two), else its generation config's, else the tokenizer's end mark (bert2bert's [SEP])."""
        cfg = self.config
        for found in (getattr(cfg, "eos_token_id", None), getattr(getattr(cfg, "decoder", None), "eos_token_id", None),
                      getattr(getattr(self.model, "generation_config", None), "eos_token_id", None),
                      self.tokenizer.eos_token_id, self.tokenizer.sep_token_id):
            if found is not None:
                return found
        return None

    @property
    def max_tokens(self) -> int:
        limit = getattr(self.config, "max_position_embeddings", None) or 512
        return int(min(limit, getattr(self.tokenizer, "model_max_length", limit) or limit))

    @property
    def max_new(self) -> int:
        return min(MAX_NEW, limits.current().new_tokens, self.max_tokens - 1)

    def encode(self, text: str) -> tuple[dict, tuple[str, ...]]:
        full = self.tokenizer(check_text(text), verbose=False)["input_ids"]
        enc = self.tokenizer(check_text(text), truncation=True, max_length=self.max_tokens, return_tensors="pt")
        dropped = len(full) - enc["input_ids"].shape[1]
        notes = (f"Truncated to {self.max_tokens} tokens ({dropped} dropped).",) if dropped > 0 else ()
        return {k: v.to(self.device) for k, v in enc.items() if k in ("input_ids", "attention_mask")}, notes

    def _decoder_step(self, enc: dict, instead: str = ""):
        """A function (last tokens (k, 1), cache rows or None) -> the model's output for one decoder step of k
        hypotheses. The encoder runs once here; each step reads the encoder's own output (Switch's carries its router
        logits, which its model's forward reads from it), one row per hypothesis, and the EncoderDecoderCache the
        model makes at its first step and fills after, reordered to `rows` (each hypothesis's row before) when
        given. UserError without a language-model head, its sentence ending with `instead` (what else the caller's
        view can do)."""
        if not self.lm:
            raise UserError("These weights hold no language-model head, so the decoder cannot write: pick a folder "
                            f"saved from a *ForConditionalGeneration model{instead}.")
        own, cache = self.model.get_encoder()(**enc), None  # own.last_hidden_state (1, S, C)

        def step(last: torch.Tensor, rows: list[int] | None):
            nonlocal cache
            k = last.shape[0]
            if rows is not None:
                cache.reorder_cache(torch.tensor(rows, device=self.device))
            encoded = own if k == 1 else type(own)(**{**own, "last_hidden_state":
                                                      own.last_hidden_state.expand(k, -1, -1)})   # (k, S, C)
            out = self.model(encoder_outputs=encoded, attention_mask=enc["attention_mask"].expand(k, -1),
                             decoder_input_ids=last, past_key_values=cache, use_cache=True)
            cache = out.past_key_values
            return out

        return step

    @torch.no_grad()
    def search(self, enc: dict, width: int) -> list[Hypothesis]:
        """Beam search (width 1: greedy) over the decoder (_decoder_step): transformers' own cache holds the decoder's
        keys and values, one row per live hypothesis, reordered after each step."""
        decode = self._decoder_step(enc, ", or type the target in the second sentence box to feed it instead")

        def step(prefixes, rows):  # rows: each hypothesis's row in the cache (None before the first step)
            last = torch.tensor([[p[-1] if p else self.start] for p in prefixes], device=self.device)  # (k, 1)
            out = decode(last, None if rows[0] is None else rows)
            return out.logits[:, -1].float().log_softmax(-1), list(range(len(prefixes))), None   # (k, V)

        return search(step, width, self.max_new, self.eos)

    @torch.no_grad()
    def cache_steps(self, enc: dict, n: int):
        """Greedy writing of up to n tokens, one hypothesis through the same decoder step as search: after each step,
        (the token written, the decoder's self-attention cache, its cross-attention cache), both as
        models.hf.writing.HFCache over the model's own cache objects. Stops after the end token."""
        from models.hf.writing import HFCache

        decode, own, cross, token = self._decoder_step(enc), HFCache(), HFCache(), self.start
        for _ in range(n):
            out = decode(torch.tensor([[token]], device=self.device), None)
            own.inner, cross.inner = out.past_key_values.self_attention_cache, out.past_key_values.cross_attention_cache
            token = int(out.logits[0, -1].argmax())
            yield token, own, cross
            if token == self.eos:
                return

    def decoder_windows(self) -> list[int | None]:
        """Each decoder layer's sliding window in tokens (None: full attention), from the decoder's config (T5Gemma's
        every other layer; none for T5, BART or bert2bert)."""
        cfg = (layout.halves(self.config) or (None, self.config))[1]
        return layout.windows(cfg, list(range(self.decoder_shape()[0])))

    def decoder_shape(self) -> tuple[int, int, int]:
        """(decoder layers, key/value heads of its self-attention, head size) from the config, for the KV cache's
        formula: BART's decoder_attention_heads, T5's num_heads and d_kv, bert2bert's and T5Gemma's decoder config."""
        cfg = (layout.halves(self.config) or (None, self.config))[1]
        heads = (getattr(cfg, "decoder_attention_heads", None) or getattr(cfg, "num_heads", None)
                 or cfg.num_attention_heads)
        width = getattr(cfg, "d_model", None) or cfg.hidden_size
        size = getattr(cfg, "d_kv", None) or getattr(cfg, "head_dim", None) or width // heads
        return shape(self.config)[1], getattr(cfg, "num_key_value_heads", None) or heads, size

    @torch.no_grad()
    def traced(self, enc: dict, fed: list[int], notes: tuple[str, ...], output: str | None) -> AttentionTrace:
        """The three attentions of one teacher-forced pass with decoder inputs `fed`."""
        dec = torch.tensor([fed], device=self.device)                 # (1, t)
        out = self.model(**enc, decoder_input_ids=dec, output_attentions=True)
        if not out.cross_attentions or out.cross_attentions[0] is None:
            raise UserError("This model returned no attention weights; load it with attn_implementation='eager'.")
        stack = lambda atts: torch.stack(atts, dim=1)[0].float().cpu().numpy()  # noqa: E731  (L, H, Tq, Tk)
        src = self.tokenizer.convert_ids_to_tokens(enc["input_ids"][0].tolist())
        tgt = self.tokenizer.convert_ids_to_tokens(fed)
        parts = {"encoder": AttentionTrace(src, list(src), stack(out.encoder_attentions), "self"),
                 "decoder": AttentionTrace(tgt, list(tgt), stack(out.decoder_attentions), "causal")}
        return AttentionTrace(tgt, src, stack(out.cross_attentions), "cross", output, notes, parts)

    def written(self, enc: dict, hyp: Hypothesis, notes: tuple[str, ...] = ()) -> Written:
        ids = list(hyp.ids[:-1] if hyp.finished else hyp.ids)
        text = self.tokenizer.decode(ids, skip_special_tokens=True)
        trace = self.traced(enc, [self.start, *hyp.ids[:-1]], notes, text)
        return Written(trace.key_tokens, self.tokenizer.convert_ids_to_tokens(ids), hyp.score, hyp.finished, trace)

    def hypotheses(self, text: str, width: int) -> list[Written]:
        """Every hypothesis beam search of `width` ended with, best first, each with its score and attention."""
        cap = limits.current().beam_width
        if not 1 <= width <= cap:
            raise UserError(f"Choose a beam width from 1 to {cap}, not {width}.")
        enc, notes = self.encode(text)
        return [self.written(enc, hyp, notes) for hyp in self.search(enc, width)]

    @torch.no_grad()
    def attend(self, text: str, text_b: str | None = None) -> AttentionTrace:
        """Cross-attention (with parts encoder and decoder) while writing the output greedily, or while
        reading text_b as the target when it is given."""
        enc, notes = self.encode(text)
        if text_b and text_b.strip():
            target = self.tokenizer(text_target=text_b[:limits.current().text_chars], add_special_tokens=False,
                                    verbose=False)["input_ids"][: self.max_tokens - 1]
            notes += ("The decoder reads the second sentence as its target (teacher forcing).",)
            return self.traced(enc, [self.start, *target], notes, None)
        best = self.search(enc, 1)[0]
        if not best.finished:
            notes += (f"The decoder wrote {len(best.ids)} tokens without ending its output (its limit); its rows are "
                      "what it read: its start token, then each written token but the last.",)
        return self.written(enc, best, notes).trace


def load_encdec(spec: str, device: str = "cpu", dtype: str = "float32", local: bool | None = None,
                name: str | None = None) -> EncoderDecoder:
    """An encoder-decoder from a folder or hub id, with its language-model head when the weights have one."""
    from transformers import AutoModel, AutoModelForSeq2SeqLM

    heads = ("ForConditionalGeneration", "MTModel", "EncoderDecoderModel")  # the classes whose weights hold an LM head
    p = common.load_parts(spec, local, device, dtype, common.tokenizer, heads, AutoModelForSeq2SeqLM, AutoModel)
    spec, cfg, lm = p.spec, p.config, p.head
    layers, dec_layers, heads = shape(cfg)
    label = (f"{name or common.name_of(spec)} ({layout.name(p.model)} encoder-decoder, {layers} + {dec_layers} "
             f"layers × {heads} heads{'' if lm else ', no language-model head'})")
    return EncoderDecoder(model=p.model, tokenizer=p.reader, label=label, device=p.device, dtype=p.dtype, lm=lm,
                          notices=p.notices)


def shape(cfg) -> tuple[int, int, int]:
    """(encoder layers, decoder layers, encoder heads) of an encoder-decoder's config: BART's and T5's own fields, or
    its two halves' (the two configs an EncoderDecoderModel joins, bert2bert; T5Gemma's encoder and decoder)."""
    if halves := layout.halves(cfg):
        return halves[0].num_hidden_layers, halves[1].num_hidden_layers, halves[0].num_attention_heads
    heads = getattr(cfg, "encoder_attention_heads", None) or cfg.num_heads
    layers = getattr(cfg, "encoder_layers", None) or cfg.num_layers
    return layers, getattr(cfg, "decoder_layers", None) or getattr(cfg, "num_decoder_layers", None) or layers, heads


def source_rows(w: Written) -> np.ndarray:
    """[L, H, len(output), S]: the cross-attention rows that chose each written token (the first len(output) rows)."""
    return w.trace.weights[:, :, : len(w.output)]
