"""Which task judges the heads of a loaded model, in one shape the pruning page can use.

Also whether its heads can be cut out and exported (prunable; unprunable says why not) and the lines that load
the export. tiny decoder -> sorting digits (experiments.sorting: exact match on held-out strings); a decoder ->
next-token prediction (experiments.next_token_task); an encoder-decoder -> its target's next-token prediction
with teacher forcing on paraphrase pairs (experiments.encdec_task); an encoder loaded with its masked-LM head ->
masked-LM on the user's text (experiments.masked_lm); any other BERT-style encoder (MiniLM) -> the built-in
paraphrase task (experiments.paraphrase).
Builds nothing expensive: scoring and metrics run only when the page calls them.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from data import sorting as data_sorting
from experiments import encdec_task, masked_lm, next_token_task, paraphrase, sorting
from limits.errors import UserError
from models import gates, layout
from models.pruned_hf import groups_note, load_code, load_line
from models.pruned_modeling import attention_layers, original_plan

DECODER_SCORE_MAX = 16  # a decoder's metric windows start after the most its importance may read


@dataclass(frozen=True)
class Task:
    net: object                     # the module whose heads are gated and pruned
    name: str                       # "the paraphrase task"
    metric_name: str                # "Retrieval accuracy"
    about: Callable[[int], str]     # n_eval -> what the metric was measured on
    score: Callable                 # (n_score, progress) -> importance [L, H], confidence [L, H], labels
    metric: Callable                # n_eval -> metric(plan) -> float
    tokenizer: object               # for timing inputs (None: token-id lists)
    timing: list                    # sentences (or equal-length id lists) that time the pruned model
    reload: str                     # how to load the exported files again
    items: str | None = None        # what the sliders count ("pairs"); None: the sidebar text, no sliders
    score_range: tuple[int, int, int, int] = (8, 40, 16, 8)   # slider min, max, default, step
    eval_range: tuple[int, int, int, int] = (10, 80, 30, 10)
    uses_text: bool = False         # the scores depend on the sidebar text
    chance: Callable[[int], tuple[float, str]] = lambda n: (0.0, "")  # n_eval -> (metric of a blind guess, which)
    prunable: bool = True           # its heads can be cut out for real (BERT layouts, GPT-2, Llama-style, tiny)
    unprunable: str = ""            # why not, when prunable is False
    load_code: str = ""             # Python lines that load the export where this project is not
    groups_note: Callable[[dict], str] = lambda plan: ""  # plan -> what it leaves of shared key/value groups (GQA)


ENC_DEC = ("Cutting heads out of the weights covers BERT-style encoders, GPT-2, Llama-style decoders (Llama, Mistral, "
           "Qwen2) and the tiny decoder; an encoder-decoder (T5, BART) is not sliced or exported here, so for it the "
           "gates above show what removing heads costs.")


NO_TASK = ("The pruning lab judges heads by a task: BERT-layout encoders (encoder.layer[i].attention.self.query/key/"
           "value: BERT, RoBERTa, ELECTRA, and XLM-R or CamemBERT on RoBERTa's classes), decoders with a "
           "language-model head (gpt, GPT-2, Llama, Mistral, Qwen2, GPT-NeoX) and the tiny decoder have one here, and "
           "this model has none")


def bert_like(m) -> bool:
    """Whether a loaded encoder's attention sits where the built-in tasks gate, score and cut it: encoder.layer[i].
    attention.self.query/key/value (BERT, RoBERTa, ELECTRA, XLM-R); False for DistilBERT (q_lin), ALBERT (shared
    layer groups) or DeBERTa-v2 (query_proj). Read from the modules, not the architecture's name."""
    try:
        attention = m.model.encoder.layer[0].attention.self
    except (AttributeError, IndexError, TypeError):
        return False
    return all(hasattr(attention, part) for part in ("query", "key", "value"))


def no_task(m=None) -> str:
    """The sentence for a model no built-in task fits: NO_TASK, with why for an encoder laid out otherwise."""
    kind = layout.name(m)
    if m is not None and m.family == "encoder" and kind:
        return f"{NO_TASK}: its {kind} attention is laid out otherwise."
    return f"{NO_TASK}."


def for_model(m, text: str, name: str = "") -> Task:
    """The task for a loaded model (models.tiny.Tiny, models.hf.Encoder, or a Decoder with its language-model head;
    `name` is the registry key: the built-in gpt reads its own held-out windows), or an encoder-decoder (T5, BART:
    its target's next-token prediction, experiments.encdec_task); ValueError if it has none."""
    if m.family == "encoder-decoder":
        gates.head_counts(m.model)
        return Task(
            net=m.model, name="the target's next-token prediction", metric_name="Target-token accuracy",
            about=encdec_task.about,
            score=lambda n, progress: encdec_task.score_heads(m, n, progress=progress),
            metric=lambda n: encdec_task.held_out_metric(m, n),
            tokenizer=m.tokenizer, timing=[], reload="", items="pairs", score_range=(8, encdec_task.SCORE_MAX, 16, 8),
            eval_range=(10, 60, 30, 10), prunable=False, unprunable=ENC_DEC,
            chance=lambda n: (1 / len(m.tokenizer), f"a random token of the {len(m.tokenizer):,} in the vocabulary"))
    if m.family == "decoder":
        if not m.lm:
            raise UserError("These weights hold no language-model head, so there is no next-token loss to judge "
                            "heads by: load a folder saved from a *ForCausalLM model, or pick 'gpt'.")
        gates.head_counts(m.model)
        try:
            attention_layers(m.model)
            why = ""
        except ValueError as err:
            why = f"{err} The gates above show what removing heads costs."
        return Task(
            net=m.model, name="next-token prediction", metric_name="Next-token accuracy",
            about=lambda n: next_token_task.about(m, name, n),
            score=lambda n, progress: next_token_task.score_heads(m, name, n, progress=progress),
            metric=lambda n: next_token_task.held_out_metric(m, name, DECODER_SCORE_MAX, n),
            tokenizer=m.tokenizer, timing=[a for a, _ in paraphrase.load_pairs()[:16]],
            load_code=load_code("AutoModelForCausalLM"),
            reload=f"{load_line('AutoModelForCausalLM')} anywhere transformers is", items="windows",
            score_range=(4, 16, 8, 4), eval_range=(4, 16, 8, 4), prunable=not why, unprunable=why,
            groups_note=lambda plan: groups_note(original_plan(m.model, plan) or {}, m.n_heads, m.kv_heads),
            chance=lambda n: (1 / len(m.tokenizer), f"a random token of the {len(m.tokenizer):,} in the vocabulary"))
    if m.family in ("tiny", "induction", "rnn"):  # a decoder written here (or a seq2seq, which gates refuse)
        gates.head_counts(m.net)
        return Task(
            net=m.net, name="the sorting task", metric_name="Exact match",
            about=lambda n: f"{n} held-out digit strings, greedy answers",
            score=lambda n, progress: sorting.score_heads(m, n, progress=progress),
            metric=lambda n: sorting.held_out_metric(m.net, n, m.device),
            tokenizer=None, timing=data_sorting.timing_ids(),
            reload="models.tiny.read_weights(Path('model.safetensors'))",
            items="strings", score_range=(16, 256, 64, 16), eval_range=(50, 500, 200, 50),
            chance=lambda n: (sorting.chance(n), "a random symbol at every answer position"))
    gates.layers(m.model)
    sentences = [a for a, _ in paraphrase.load_pairs()[:16]]
    reload = f"{load_line('AutoModel')} anywhere transformers is, or hf:<folder> in the sidebar"
    if m.family == "encoder" and m.mlm is not None:
        about = masked_lm.describe(masked_lm.task(m, text)[1])
        return Task(
            net=m.model, name="masked-LM on your text", metric_name="Masked-token accuracy", about=lambda n: about,
            score=lambda n, progress: masked_lm.score_heads(m, text, progress=progress),
            metric=lambda n: masked_lm.text_metric(m, text),
            tokenizer=m.tokenizer, timing=sentences, reload=reload, uses_text=True, load_code=load_code("AutoModel"),
            chance=lambda n: (1 / len(m.tokenizer), f"a random token of the {len(m.tokenizer):,} in the vocabulary"))
    return Task(
        net=m.model, name="the paraphrase task", metric_name="Retrieval accuracy",
        about=lambda n: f"{n} held-out pairs, scrambled copies as distractors",
        score=lambda n, progress: paraphrase.score_heads(m, n, progress=progress),
        metric=lambda n: paraphrase.held_out_metric(m.model, m.tokenizer, n, m.device),
        tokenizer=m.tokenizer, timing=sentences, reload=reload, items="pairs", load_code=load_code("AutoModel"),
        chance=lambda n: (1 / (2 * n), f"a random pick among the {2 * n} candidates"))
