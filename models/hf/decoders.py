"""Decoders through transformers (GPT-2, GPT-NeoX, Llama, Mistral, Qwen2 wired by hand; OPT, Phi-3, Gemma, Qwen3,
Falcon, GPT-J, BLOOM and any other causal LM transformers builds for attention): causal attention, greedy tokens,
grouped-query attention and transformers' own KV cache. A hybrid (Jamba, Qwen3-Next, LFM2) is shown by its layers that
attend alone, numbered L0, L1, ... in order, with a notice naming the model's own numbers (`attending`).

attend(text, new_tokens=N) runs the prompt, writes N tokens greedily with models.generate.stream (the
one decode loop here, driving transformers' DynamicCache through models.hf.writing.HFCache), then returns the causal
attention of one forward pass over prompt + written tokens: recorded by models.capture when the model's family
goes through transformers' attention registry and is not wired by hand, else the model's output_attentions.
Which query heads share a key/value head (GQA/MQA) comes from the config, in transformers' repeat_kv
order: query head h reads kv head h // (heads / kv_heads). Q and K of one head, RoPE applied, are in
models.internals. It does not sample, batch, or train; loading rules are models.hf.common's.

    gpt = load_decoder("./my-llama")
    gpt.kv_head_of                 # [0, 0, 1, 1]: 4 query heads share 2 key/value heads
    trace = gpt.attend("def f(x):", new_tokens=8)
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

import limits
from analysis.trace import AttentionTrace, HeadQKV
from limits.errors import UserError
from models import layout
from models.hf import common, reach
from models.hf.writing import lm_steps, prompt_tensor, takes_cache


@dataclass(kw_only=True)
class Decoder(common.HFModel):
    """A loaded decoder: the transformers module (a causal LM when `lm`), its tokenizer, and where it runs."""

    tokenizer: object
    lm: bool = True  # the weights hold a language-model head, so it can write tokens
    # the classifier around `model` when config.json names one and the weights hold it (GPT2ForSequenceClassification:
    # "sequence classification" or "token classification"): one model for every view, the heads' judge included
    task: torch.nn.Module | None = None
    task_head: str | None = None

    @property
    def predicts(self) -> str | None:
        """models.contract.PREDICTS: the next token with a language-model head, a classifier's class, else nothing."""
        return "next token" if self.lm else "class" if self.task is not None else None
    family = "decoder"

    @property
    def takes_cache(self) -> bool:
        """Whether its class reads a KV cache as it writes (models.hf.writing.takes_cache)."""
        return takes_cache(self.model)

    @property
    def next_token_model(self) -> torch.nn.Module | None:
        """The module whose forward gives next-token logits (the causal LM), or None without a language-model head."""
        return self.model if self.lm else None

    @property
    def attending(self) -> list[int]:
        """The model's own numbers of the layers shown, in order: every layer, but only those that attend in a
        hybrid (models.layout.attending: Jamba's mamba layers keep no attention weights, so its L0 is its layer 4)."""
        kept = layout.attending(self.config)
        return list(range(self.config.num_hidden_layers)) if kept is None else kept

    @property
    def n_layers(self) -> int:
        return len(self.attending)

    @property
    def kv_heads(self) -> int:
        """Key/value heads per layer, as the attention module splits its projections: Falcon's new architecture
        (falcon-40b) has `num_kv_heads`; multi-query (falcon-7b, GPT-BigCode) one, whatever `num_kv_heads` says;
        other Falcons one per query head; else `num_key_value_heads` (Llama's name), else one per query head."""
        cfg = self.config
        if getattr(cfg, "new_decoder_architecture", False):
            return getattr(cfg, "num_kv_heads", None) or self.n_heads
        if getattr(cfg, "multi_query", False):
            return 1
        return getattr(cfg, "num_key_value_heads", None) or self.n_heads

    @property
    def cached_kv_heads(self) -> int:
        """Key/value heads per layer that transformers' cache holds: kv_heads, but every query head for Falcon's new
        architecture, whose attention broadcasts each group's key and value to its query heads before caching them."""
        return self.n_heads if getattr(self.config, "new_decoder_architecture", False) else self.kv_heads

    @property
    def latent_cache(self) -> tuple[int, int] | None:
        """(latent width, rotary key width) where the attention caches, per layer and position, one compressed latent
        of its keys and values and one rotary key shared by every head, not each head's key and value (multi-head
        latent attention as transformers caches it: DeepSeek-V2/V3, MiniCPM3, GLM-4-MoE-Lite, Mistral 4); read from
        the config (kv_lora_rank, qk_rope_head_dim); None otherwise."""
        rank, rope = getattr(self.config, "kv_lora_rank", None), getattr(self.config, "qk_rope_head_dim", None)
        return (int(rank), int(rope)) if rank and rope is not None else None  # a rotary width of 0: no rotary key

    @property
    def head_dim(self) -> int:
        return getattr(self.config, "head_dim", None) or self.config.hidden_size // self.n_heads

    @property
    def windows(self) -> list[int | None]:
        """Each layer's sliding window in tokens (None: full attention), as the config declares it
        (models.layout.windows)."""
        return layout.windows(self.config, self.attending)

    @property
    def kv_head_of(self) -> list[int]:
        """Query head -> the key/value head it reads (repeat_kv's order): 4 heads, 2 kv heads -> [0, 0, 1, 1]."""
        group = self.n_heads // self.kv_heads
        return [h // group for h in range(self.n_heads)]

    @property
    def max_tokens(self) -> int:
        limit = getattr(self.config, "max_position_embeddings", None) or getattr(self.config, "n_positions", 1024)
        if limit < 1:  # no limit of its own (XLNet says -1): the tokenizer's, else 1024
            limit = 1024
        return int(min(limit, getattr(self.tokenizer, "model_max_length", limit) or limit))

    @property
    def eos(self) -> int | None:
        eos = self.tokenizer.eos_token_id if self.tokenizer.eos_token_id is not None else self.config.eos_token_id
        return eos[0] if isinstance(eos, list) else eos

    def encode(self, text: str, room: int = 0) -> tuple[torch.Tensor, tuple[str, ...]]:
        """Prompt ids (1, T), cut to leave `room` positions for written tokens, with a notice when cut. The special
        tokens a tokenizer puts before the text (a start token) are kept; those it appends after it (an end token,
        '<s>The cat</s>') are not: a decoder predicts what follows the text, not what follows its end."""
        return prompt_tensor(self.tokenizer, text, self.max_tokens, self.device, room)

    def check_new(self, new_tokens: int) -> int:
        cap = limits.current().new_tokens
        if not 0 <= new_tokens <= cap:
            raise UserError(f"Ask for 0 to {cap} new tokens, not {new_tokens}.")
        if new_tokens and not self.lm:
            raise UserError("These weights hold no language-model head, so the decoder cannot write: set new "
                            "tokens to 0, or load a folder saved from a *ForCausalLM model.")
        return new_tokens

    def steps(self, ids: torch.Tensor, new_tokens: int, use_cache: bool = True, stop: int | None = None,
              choose=None):
        """models.generate.stream over this model, with transformers' cache (HFCache) when use_cache; `choose`
        (logits (B, V) -> ids (B, 1)) picks each token instead of the argmax."""
        return lm_steps(self.model, ids, new_tokens, use_cache, stop, choose)

    @torch.no_grad()
    def write(self, ids: torch.Tensor, new_tokens: int) -> tuple[list[int], bool]:
        """Greedy continuation of ids (1, T): the new ids (the end-of-sequence token included, if written)
        and whether it was written."""
        new = [step.token for step in self.steps(ids, new_tokens, stop=self.eos)]
        return new, bool(new) and new[-1] == self.eos

    @torch.no_grad()
    def attend(self, text: str, text_b: str | None = None, new_tokens: int = 0) -> AttentionTrace:
        """Causal attention over the prompt and `new_tokens` greedy tokens (output: what was written)."""
        self.check_new(new_tokens)
        ids, notes = self.encode(text, room=new_tokens)
        new, ended = self.write(ids, new_tokens) if new_tokens else ([], False)
        if new_tokens:
            notes += (f"Wrote {len(new)} tokens greedily after the prompt"
                      + (", ending with its end-of-text token." if ended else ".")
                      + " Their rows are the attention that chose each next token.",)
        if text_b and text_b.strip():
            notes += ("A decoder reads one text: the second sentence is ignored.",)
        full = torch.cat([ids, torch.tensor([new], dtype=ids.dtype, device=ids.device)], dim=1)  # (1, T + n)
        attentions = common.self_attentions(self.model, input_ids=full)  # per layer that attends (1, H, T, T)
        if len(attentions) != self.n_layers:  # a hybrid whose attention the capture did not see layer by layer
            raise UserError(f"This model gave attention weights for {len(attentions)} layers where {self.n_layers} "
                            "attend, so its layers cannot be numbered: pick a model whose attention transformers "
                            "routes through its attention registry, such as Llama, Qwen3 or Jamba.")
        plan = getattr(self.config, "pruned_heads", None)
        if plan:  # an export of models.pruned_hf: layers hold fewer heads, shown at their original indices
            from models.pruned_modeling import head_positions

            attentions, notes = common.unpruned(attentions, plan, self.n_heads, notes, head_positions(self.model))
        weights = torch.stack(attentions, dim=1)[0]  # (L, H, T, T) from (B, L, H, T, T)
        tokens = self.tokenizer.convert_ids_to_tokens(full[0].tolist())
        return AttentionTrace(tokens=tokens, key_tokens=list(tokens), weights=weights.float().cpu().numpy(),
                              kind="causal", output=self.tokenizer.decode(new) if new_tokens else None,
                              notices=notes)

    def head_qkv(self, text: str, layer: int, head: int, text_b: str | None = None) -> HeadQKV:
        """One head's X, Q, K (RoPE applied), V and the model's own weights: models.internals."""
        from models.internals import decoder_head_qkv

        return decoder_head_qkv(self, text, layer, head)


def causal_lm_classes() -> tuple[str, ...]:
    """The endings of the architectures that hold a language-model head: *ForCausalLM, *LMHeadModel, and the classes
    transformers' causal-LM mapping names otherwise (BertGenerationDecoder)."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    return ("ForCausalLM", "LMHeadModel", *sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values()))


def load_decoder(spec: str, device: str = "cpu", dtype: str = "float32", local: bool | None = None,
                 name: str | None = None) -> Decoder:
    """A decoder from a folder or hub id, with its language-model head when the weights have one."""
    import transformers
    from transformers import AutoModel, AutoModelForCausalLM

    from models.hf.encoders import CLASSIFIERS, task_head_of

    if local is None:
        spec, local = reach.where(spec)
    with common.loading(spec, local):
        found = task_head_of(spec, local, CLASSIFIERS)  # a classifier the config names and the weights hold
    if found:
        head, auto, prefixes = found
        p = common.load_parts(spec, local, device, dtype, common.tokenizer, tuple(CLASSIFIERS),
                              getattr(transformers, auto), AutoModel, prefixes)
        task, model = p.model, p.model.base_model
    else:
        p = common.load_parts(spec, local, device, dtype, common.tokenizer, causal_lm_classes(),
                              AutoModelForCausalLM, AutoModel)
        head, task, model = None, None, p.model
    spec, cfg, lm = p.spec, p.config, p.head and task is None
    dec = Decoder(model=model, tokenizer=p.reader, label="", device=p.device, dtype=p.dtype, lm=lm,
                  notices=p.notices, task=task, task_head=head)
    shared = (f", {dec.n_heads} query heads share {dec.kv_heads} key/value head{'s' if dec.kv_heads > 1 else ''}"
              if dec.kv_heads < dec.n_heads else "")
    kept = f", with its {head} head" if task is not None else "" if lm else ", no language-model head"
    layers = (f"{dec.n_layers} layers" if dec.n_layers == cfg.num_hidden_layers else
              f"{dec.n_layers} of its {cfg.num_hidden_layers} layers attend{'s' * (dec.n_layers == 1)}")
    dec.label = (f"{name or common.name_of(spec)} ({cfg.model_type} decoder, {layers} × {dec.n_heads} "
                 f"heads{shared}{kept})")
    if dec.n_layers < cfg.num_hidden_layers:
        dec.notices = (*dec.notices, hybrid_notice(cfg, dec.attending))
    return dec


def hybrid_notice(cfg, attending: list[int]) -> str:
    """What a hybrid's shown layers are: 'Only 2 of this model's 8 layers attend (its layers 3 and 7, shown as L0 and
    L1); the other 6 (mamba) have no attention weights, so they have no map and no number here.'"""
    n, shown = cfg.num_hidden_layers, len(attending)
    own = [str(layer) for layer in attending]
    own = own[0] if shown == 1 else f"{', '.join(own[:-1])} and {own[-1]}" if shown <= 8 else f"{', '.join(own[:8])}, …"
    labels = "L0" if shown == 1 else "L0 and L1" if shown == 2 else f"L0 to L{shown - 1}"
    one, rest = shown == 1, n - shown == 1
    return (f"Only {shown} of this model's {n} layers attend{'s' * one} (its layer{'s' * (not one)} {own}, shown as "
            f"{labels}); the other {'one' if rest else n - shown} ({', '.join(layout.not_attending(cfg))}) "
            f"{'has' if rest else 'have'} no attention weights, so {'it has' if rest else 'they have'} no map and no "
            "number here.")
