"""The Circuits view's tasks: which tasks a model is offered, the names task's and the built-in tasks' pairs (clean,
corrupt, answer, wrong), the check that every answer is a token the model knows, and a task's one-line description.

Built-in tasks go with their built-in model (data.circuit_tasks.BUILT_IN; the date model's pairs are two sources);
the names task (indirect object identification) with any decoder whose tokenizer reads at least
data.circuit_tasks.MIN_NAMES first names as one known token each (GPT-2's does, the built-ins' do not); the Patching
view's pair and a CSV of pairs with every model (ui/circuits_task.py reads those two from the page). An answer the
tokenizer does not know is refused here, where a word-level tokenizer would otherwise read it as its one unknown
token and the metric would compare [UNK] with the other answer. Runs no model (it reads its tokenizer).

    offered("hf:", gpt2_model) -> ["Names (indirect object)", "The Patching view's pair", "Pairs from a CSV file"]
"""
from __future__ import annotations

from data import circuit_tasks as tasks
from experiments import patching
from limits.errors import UserError

BUILT, NAMES, PATCHING, CSV = TASKS = ("Built-in task", "Names (indirect object)", "The Patching view's pair",
                                       "Pairs from a CSV file")


def _tokenizer(model):
    """The Hugging Face tokenizer of a decoder, else None (the built-ins 'induction' and 'tiny' have their own)."""
    return model.tokenizer if model.family == "decoder" else None


def _one(tok):
    """one(" Mary") -> True where the tokenizer reads it as one token that is not its unknown token."""
    def one(word: str) -> bool:
        ids = tok.encode(word, add_special_tokens=False)
        return len(ids) == 1 and ids[0] != tok.unk_token_id
    return one


def names_offered(model) -> bool:
    """Whether the names task fits this model's tokenizer."""
    tok = _tokenizer(model)
    return tok is not None and len(tasks.one_token_names(_one(tok))) >= tasks.MIN_NAMES


def names_pairs(model, n: int, seed: int = 0) -> list[tuple[str, str, str, str]]:
    """data.circuit_tasks.names with this model's tokenizer (texts counted as patching runs them)."""
    tok = _tokenizer(model)
    if tok is None:
        raise UserError("The names task reads names with a Hugging Face tokenizer: pick an hf: decoder such as "
                         "GPT-2, or another task.")
    return tasks.names(n, _one(tok), lambda text: len(patching.token_ids(model, text)), seed)


def offered(model_key: str, model) -> list[str]:
    """The tasks this model is offered, in TASKS order."""
    return [t for t in TASKS if (t != BUILT or model_key in tasks.BUILT_IN) and (t != NAMES or names_offered(model))]


def known_answers(model, pairs) -> None:
    """ValueError with one sentence where a pair's answer or wrong answer holds the tokenizer's unknown token (a
    decoder's, or an encoder-decoder's, whose answer is the first token it writes)."""
    tok = model.tokenizer if model.family in ("decoder", "encoder-decoder") else None
    if tok is None or tok.unk_token_id is None:
        return
    for i, pair in enumerate(pairs):
        for what, word in (("answer", pair[2]), ("wrong answer", pair[3])):
            if tok.unk_token_id in tok.encode(word, add_special_tokens=False):
                where = f"Pair {i + 1}: the" if len(pairs) > 1 else "The"
                raise UserError(f"{where} {what} '{word}' is not in this tokenizer's vocabulary, so it would be read "
                                 f"as its unknown token {tok.unk_token}: give a word it knows.")


def built_in_pairs(model_key: str, n: int) -> list[tuple]:
    """n pairs of the built-in task that goes with this built-in model, or UserError with one sentence."""
    if model_key not in tasks.BUILT_IN:
        raise UserError("Built-in tasks are for 'gpt' (brackets), 'induction' (repeated syllables), 'tiny' "
                        "(sorting digits) and 'seq2seq-transformer' (dates): pick one of those, the Patching "
                        "view's pair, or a CSV file.")
    return tasks.BUILT_IN[model_key][0](n)


def described(task: str, model_key: str) -> str:
    """What the task is, for the caption under the pairs ('' for your own pairs)."""
    if task == BUILT:
        return f" The task: {tasks.BUILT_IN[model_key][1]}."
    return f" The task: {tasks.NAMES_TASK}." if task == NAMES else ""


def counted(task: str, asked: int, got: int) -> str:
    """How many pairs run, and why fewer than the Pairs box asked for when they are fewer:
    counted(CSV, 10, 3) -> "3 pairs, not the 10 in the Pairs box: the file holds 3 rows of pairs"."""
    said = f"{got} pair{'' if got == 1 else 's'}"
    if got >= asked:
        return said
    why = {CSV: f"the file holds {got} row{'' if got == 1 else 's'} of pairs",
           NAMES: "no more distinct name pairs line up token by token in this tokenizer"}.get(
        task, "the task has no more")
    return f"{said}, not the {asked} in the Pairs box: {why}"
