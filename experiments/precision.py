"""Measure a model's precision variants (models.variants) against its fp32 self.

- compare_variant(): per layer × head Jensen-Shannon divergence of a variant's attention from fp32 on one
  text (analysis.precision), on the tokens both runs share (a decoder's variant may write another answer).
- Probe / probe_for(): the model's task on held-out items, in one shape: outputs() gives the vectors
  that cosine agreement compares, the choices that top-1 agreement compares, and the task metric.
  paraphrase retrieval (MiniLM: top-1 = the same retrieved paraphrase), masked-LM on the text (an
  encoder with its MLM head: the same guess), sorting (tiny decoder: the same next token under teacher
  forcing; metric exact match), a decoder with its language-model head or a BERT-style causal LM run causal:
  causal_lm_probe() (perplexity on held-out windows of the Python reference, lm_windows(); the same next
  token), a 10-class image
  classifier (the built-in vit): classifier_probe() (accuracy on held-out digits, digits(); the same class).
- latency(): seconds per forward of each variant, the median of interleaved runs after one warm-up, so a
  busy machine slows every variant alike. It never changes torch's thread count (shared by the process).
Does not make the variants (models.variants) or draw anything.
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from analysis.precision import head_divergence, max_weight_change
from limits.errors import UserError
from models.devices import synchronize

Progress = Callable[[float], None] | None


@dataclass(frozen=True)
class Outputs:
    vectors: torch.Tensor   # (N, D) float32: what cosine agreement compares
    choices: torch.Tensor   # (M,) long: what top-1 agreement compares
    metric: float


@dataclass(frozen=True)
class Probe:
    name: str                                  # "the paraphrase task"
    metric_name: str                           # "Retrieval accuracy"
    about: str                                 # what the metric was measured on
    agreement: str                             # what top-1 agreement means here
    outputs: Callable[[object], Outputs]       # a loaded model (any variant) -> its outputs on the held-out items
    forward: Callable[[object], None]          # one forward of the timing batch
    timing: str                                # "batch 16 × 128 tokens"
    higher_is_better: bool = True


# --- attention ---------------------------------------------------------------------------------------------------

def _shared(a: list[str], b: list[str]) -> int:
    """Length of the common prefix of two token lists."""
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def compare_traces(ref, var) -> dict:
    """max_js, mean_js [L, H], the largest single weight change, and the rows compared, on the tokens both share.

    Causal rows depend only on earlier tokens, so the shared prefix is compared exactly; an encoder's tokens
    are always the same in both runs.
    """
    n, k = _shared(ref.tokens, var.tokens), _shared(ref.key_tokens, var.key_tokens)
    if n == 0 or k == 0:
        raise UserError("The variant's run shares no token with fp32's, so their attention cannot be compared.")
    a, b = ref.weights[:, :, :n, :k], var.weights[:, :, :n, :k]
    max_js, mean_js = head_divergence(a, b)
    return {"max_js": max_js, "mean_js": mean_js, "max_change": max_weight_change(a, b), "tokens": ref.tokens[:n],
            "key_tokens": ref.key_tokens[:k], "ref": a, "var": b, "output": var.output,
            "same_output": var.output == ref.output}


def clip(model, text: str, n_tokens: int) -> tuple[str, int]:
    """The text cut after its first n_tokens tokens (the model's tokenizer, no special tokens), and how many were
    cut. A model without a Hugging Face tokenizer (the tiny decoder reads at most 10 digits) gets the text whole."""
    tok = model.tokenizer
    if tok is None or not getattr(tok, "is_fast", False) or not text:
        return text, 0
    spans = tok(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)["offset_mapping"]
    if len(spans) <= n_tokens:
        return text, 0
    return text[:spans[n_tokens - 1][1]], len(spans) - n_tokens


def compare_variant(ref, model, text: str, text_b: str | None = None) -> dict:
    """compare_traces() of `model`'s attention on `text` against the fp32 trace `ref`, or {"error": sentence}
    when the variant fails to run on it (a kernel its dtype lacks on this device)."""
    try:
        return compare_traces(ref, model.attend(text, text_b))
    except (RuntimeError, NotImplementedError, TypeError) as err:
        return {"error": f"{getattr(model, 'variant', 'This variant')} could not run this model here "
                         f"({type(err).__name__})."}


# --- agreement and task metric -----------------------------------------------------------------------------------

def agreement(ref: Outputs, var: Outputs) -> dict:
    """Top-1 agreement (share of equal choices) and mean cosine of matching vectors, variant vs fp32."""
    cos = F.cosine_similarity(ref.vectors.double(), var.vectors.double(), dim=-1)
    return {"top1_agreement": float((ref.choices == var.choices).double().mean()),
            "cosine": float(cos.mean()), "metric": var.metric}


def _f32(t: torch.Tensor) -> torch.Tensor:
    return t.detach().to(torch.float32).cpu()


def paraphrase_probe(enc, n_eval: int, batch: int = 16) -> Probe:
    """MiniLM (models.hf.Encoder without an MLM head): retrieval on n_eval held-out pairs with scrambled distractors."""
    from experiments import paraphrase

    held = paraphrase.task(enc.tokenizer, 0, n_eval, device=enc.device)[1]
    timing = timing_batch(enc.tokenizer, enc.device, batch, min(TIMING_TOKENS, enc.max_tokens))

    @torch.no_grad()
    def outputs(m) -> Outputs:
        e = paraphrase.embed(m.model, held)                                 # (3N, D)
        n = len(e) // 3
        picks = (e[:n] @ e[n:].T).argmax(1)                                  # (N,) index among all b and s
        return Outputs(_f32(e), picks.cpu(), float((picks.cpu() == torch.arange(n)).double().mean()))

    return Probe("the paraphrase task", "Retrieval accuracy", f"{len(held['input_ids']) // 3} held-out pairs, "
                 "scrambled copies as "
                 "distractors", "the same retrieved paraphrase", outputs,
                 lambda m: synchronize(m.device, after=m.model(**timing)), _timing_words(timing))


def masked_lm_probe(enc, text: str, batch: int = 16) -> Probe:
    """An encoder with its MLM head: masked-token accuracy on the user's text."""
    from experiments import masked_lm

    copies, labels = masked_lm.task(enc, text)
    keep = labels != -100                                                    # (N, T)
    timing = timing_batch(enc.tokenizer, enc.device, batch, min(TIMING_TOKENS, enc.max_tokens))

    @torch.no_grad()
    def outputs(m) -> Outputs:
        logits = m.mlm(**copies).logits[keep]                               # (M, V)
        picks = logits.argmax(-1).cpu()
        return Outputs(_f32(logits), picks, float((picks == labels[keep].cpu()).double().mean()))

    return Probe("masked-LM on your text", "Masked-token accuracy", masked_lm.describe(labels),
                 "the same guess for each hidden token", outputs,
                 lambda m: synchronize(m.device, after=m.model(**timing)), _timing_words(timing))


def sorting_probe(tiny, n_eval: int, batch: int = 16) -> Probe:
    """The tiny decoder: exact match on n_eval held-out strings (teacher forcing, as experiments.sorting)."""
    from data.sorting import held_out, timing_ids
    from experiments import sorting

    x, y = sorting.encode(held_out(n_eval), tiny.device)
    scored = y != -1                                                         # (B, T)
    ids = torch.tensor(timing_ids(batch), device=tiny.device)                # (batch, 21)

    @torch.no_grad()
    def outputs(m) -> Outputs:
        logits, _ = m.net(x)                                                 # (B, T, V)
        right = (logits.argmax(-1) == y) | ~scored                           # (B, T)
        return Outputs(_f32(logits[scored]), logits.argmax(-1)[scored].cpu(), float(right.all(1).double().mean()))

    return Probe("the sorting task", "Exact match", f"{n_eval} held-out digit strings",
                 "the same next token at every answer position", outputs,
                 lambda m: synchronize(m.device, after=m.net(ids)[0]), f"batch {batch} × 21 tokens")


def causal_lm_probe(module_of: Callable[[object], torch.nn.Module], ids: torch.Tensor, about: str,
                    labels: torch.Tensor | None = None, batch: int | None = None) -> Probe:
    """A Hugging Face causal LM: perplexity of ids (B, T) and the same next token at every scored position.
    module_of(model) picks the *ForCausalLM module out of a loaded model (or variant); labels (B, T) marks
    targets not scored with -100, as transformers' loss does (default: every next token); the first `batch`
    rows make the timing batch (default: all)."""
    targets = (ids if labels is None else labels)[:, 1:].cpu()              # (B, T-1)
    scored = targets != -100
    timed = ids[:batch or len(ids)]

    @torch.no_grad()
    def outputs(m) -> Outputs:
        logits = _f32(module_of(m)(input_ids=ids).logits[:, :-1])[scored]   # (M, V)
        nll = F.cross_entropy(logits, targets[scored])
        return Outputs(logits, logits.argmax(-1), float(torch.exp(nll)))

    return Probe("next-token prediction", "Perplexity", about, "the same next token at every position", outputs,
                 lambda m: synchronize(ids.device, after=module_of(m)(input_ids=timed)), f"batch {timed.shape[0]} × "
                 f"{ids.shape[1]} tokens", higher_is_better=False)


def classifier_probe(module_of: Callable[[object], torch.nn.Module], pixels: torch.Tensor, labels: torch.Tensor,
                     about: str, batch: int = 16, metric_name: str = "Accuracy") -> Probe:
    """A Hugging Face image classifier (ViT): accuracy on pixels (N, C, H, W) and the same predicted class; the
    first `batch` images make the timing batch."""

    @torch.no_grad()
    def outputs(m) -> Outputs:
        module = module_of(m)
        logits = _f32(module(pixel_values=pixels.to(module.dtype)).logits)  # (N, classes)
        return Outputs(logits, logits.argmax(-1), float((logits.argmax(-1) == labels.cpu()).double().mean()))

    def forward(m) -> None:
        module = module_of(m)
        synchronize(pixels.device, after=module(pixel_values=pixels[:batch].to(module.dtype)))

    return Probe("image classification", metric_name, about, "the same predicted class", outputs, forward,
                 f"batch {min(batch, len(pixels))} images")


LM_WINDOWS = 8  # held-out windows of the built-in gpt the perplexity is measured on (training.json's "subset")


def lm_windows(dec, name: str = "", n: int = LM_WINDOWS) -> tuple[torch.Tensor, torch.Tensor, str]:
    """The first n non-overlapping windows over data.python_reference's held-out topics: ids (n, T), labels
    (-100 where not scored) and what they are. The built-in gpt models get the windows their training script
    measured (models.gpt_windows: laid out as trained, <s> or <sink> first and not scored); any other decoder
    gets the documents through its own tokenizer, each ended by its end-of-text token, and a BERT-style causal LM
    each as its tokenizer frames it ([CLS] … [SEP]; a tokenizer that adds no mark joins them unmarked), in windows
    of min(128, its context)."""
    from data import python_reference
    from models import gpt_windows
    from models.hf.decoders import Decoder

    layout = {folder: variant for variant, folder in gpt_windows.VARIANTS.items()}.get(name)
    if layout:
        x = gpt_windows.heldout_windows(dec.tokenizer, layout)[:n]
        y = gpt_windows.labels(x, gpt_windows.special_ids(dec.tokenizer))
    else:
        size = min(gpt_windows.CONTEXT, dec.max_tokens)
        end = [dec.eos] if isinstance(dec, Decoder) and dec.eos is not None else []  # BERT's tokenizer adds [SEP]
        tokens = []
        for doc in python_reference.documents("test"):
            tokens += dec.tokenizer(doc, verbose=False)["input_ids"] + end
            if len(tokens) >= n * size:
                break
        x = torch.tensor([tokens[i * size:(i + 1) * size] for i in range(min(n, len(tokens) // size))])
        y = x
    if len(x) == 0:
        raise UserError("The held-out text is shorter than one window of this decoder: no perplexity here.")
    return x.to(dec.device), y.to(dec.device), (f"{len(x)} held-out windows of {x.shape[1]} tokens of the Python "
                                                "reference (topics never trained on)")


def digits(vis, n: int) -> tuple[torch.Tensor, torch.Tensor, str]:
    """The first n digits of data.digits' held-out split as the model's pixel_values (n, C, H, W), their labels,
    and what they are. Digits are 0..16; the model's processor gets them in 0..pixel_max."""
    from data import digits as data

    images, labels = data.load()
    pick = data.split()[1][:n]
    frames = [vis.to_model_frame(images[i] / data.INK * vis.pixel_max) for i in pick]     # as Vision.pixels, at once
    pixels = vis.processor(frames, do_resize=False, return_tensors="pt", input_data_format="channels_last")
    pixels = pixels["pixel_values"].to(vis.device, torch.float32)                        # (n, C, H, W)
    return pixels, torch.from_numpy(labels[pick]), f"{len(pick)} held-out scikit-learn digits"


def probe_for(m, text: str, n_items: int, batch: int = 16, name: str = "") -> Probe | None:
    """The task probe of a loaded model (models.tiny.Tiny, models.hf.Encoder, a Decoder with its language-model
    head, a Vision model with a 10-class head), or None when it has no task here; `batch` sequences (images)
    make the timing batch; `name` is the registry key (the built-in gpt's held-out windows)."""
    from models.hf import Encoder
    from models.hf.decoders import Decoder
    from models.hf.vision import Vision
    from models.tiny import Tiny

    if isinstance(m, Tiny):
        return sorting_probe(m, n_items, batch)
    if isinstance(m, Encoder) and m.writes:  # a BERT-style causal LM run causal: its own next-token loss
        ids, labels, about = lm_windows(m, name)
        return causal_lm_probe(lambda v: v.task, ids, about, labels, batch)
    if isinstance(m, Encoder):
        return masked_lm_probe(m, text, batch) if reads_text(m) else paraphrase_probe(m, n_items, batch)
    if isinstance(m, Decoder) and m.lm:
        ids, labels, about = lm_windows(m, name)
        return causal_lm_probe(lambda v: v.model, ids, about, labels, batch)
    if isinstance(m, Vision) and m.classifier and m.config.num_labels == 10:
        pixels, labels, about = digits(m, n_items)
        return classifier_probe(lambda v: v.model, pixels, labels, about, batch, "Digits accuracy")
    return None


def next_token_windows(m) -> bool:
    """Whether probe_for(m, ...) reads the fixed held-out windows of next-token prediction (a decoder, or a
    BERT-style causal LM with its head), not n_items held-out items."""
    from models.hf import Encoder

    return m.family == "decoder" or (isinstance(m, Encoder) and m.writes)


def reads_text(m) -> bool:
    """Whether probe_for(m, text, ...) depends on `text`: only an encoder with its MLM head checks it (masked
    tokens of the text); every other probe reads held-out items, the same for any text."""
    from models.hf import Encoder

    return isinstance(m, Encoder) and m.mlm is not None


def no_task(m) -> str:
    """Why probe_for found no task to check model `m` by, in one sentence the page shows."""
    family = m.family
    if m.predicts == "image class":
        return (f"No task metric here: this image classifier's {m.config.num_labels} classes are not the ten "
                "held-out digits this page checks a ViT's classes on. Its attention and sizes are compared above.")
    if family == "decoder":
        return ("No task metric here: these weights hold no language-model head, so there is no next-token loss to "
                "check. Its attention and sizes are compared above.")
    return "No task metric for this model here: its attention and sizes are compared above."


TIMING_TOKENS = 128  # the timing batch's length, or the model's context where that is shorter


def _timing_words(timing: dict) -> str:
    """'batch 16 × 128 tokens' for a timing batch."""
    b, t = timing["input_ids"].shape
    return f"batch {b} × {t} tokens"


def timing_batch(tokenizer, device: str, batch: int = 16, tokens: int = TIMING_TOKENS) -> dict:
    """`batch` built-in sentences run together until each is exactly `tokens` tokens long: (B, T) inputs
    (callers pass min(TIMING_TOKENS, the model's context))."""
    from data.paraphrases import load_pairs

    words = " ".join(a for a, _ in load_pairs())
    texts = [words[i * 97:] + " " + words for i in range(batch)]  # each starts elsewhere, all over `tokens` long
    enc = tokenizer(texts, truncation=True, max_length=tokens, padding="max_length", return_tensors="pt")
    return {k: v.to(device) for k, v in enc.items()}


def measure(ref_model, models: dict[str, object], probe: Probe, runs: int, progress: Progress = None) -> dict:
    """Per variant key: top1_agreement, cosine, metric (probe) and seconds per forward (latency, `runs` rounds)."""
    ref = probe.outputs(ref_model)
    rows = {}
    steps = len(models) + runs
    for i, (key, m) in enumerate(models.items()):
        try:
            rows[key] = agreement(ref, probe.outputs(m))
        except (RuntimeError, NotImplementedError, TypeError) as err:
            rows[key] = {"error": f"{key} could not run this model here ({type(err).__name__})."}
        if progress:
            progress((i + 1) / steps)
    timed = {k: m for k, m in models.items() if "error" not in rows[k]}
    seconds = latency({k: (lambda m=m: probe.forward(m)) for k, m in timed.items()}, runs,
                      None if progress is None else lambda f: progress((len(models) + f * runs) / steps))
    for key, s in seconds.items():
        rows[key]["seconds"] = s
    return rows


@torch.no_grad()
def latency(forwards: dict[str, Callable[[], None]], runs: int, progress: Progress = None) -> dict[str, float]:
    """Median seconds of each forward over `runs` interleaved rounds (one untimed warm-up round first)."""
    for f in forwards.values():
        f()
    times: dict[str, list[float]] = {k: [] for k in forwards}
    for r in range(runs):
        for key, f in forwards.items():
            t0 = time.perf_counter()
            f()
            times[key].append(time.perf_counter() - t0)
        if progress:
            progress((r + 1) / runs)
    return {k: statistics.median(v) for k, v in times.items()}
