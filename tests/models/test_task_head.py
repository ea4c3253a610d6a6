"""Every task head a folder may have: found from config.architectures, scored by its own loss, exported, reloaded."""
import csv
import io

import pytest
import torch

from data import reviews
from data.labelled import read_table
from experiments import own
from models import task_head
from models.classifier import tokenizer


def _rows(head: str, n: int = 24) -> bytes:
    """Generated rows in the shape each head reads: tags per word, a question with a context, or bare text."""
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\n")
    out.writerow(["text", "context", "label"])
    for r in reviews.rows(n, seed=5):
        adjective = r["text"].split()[-1]
        if head == "token classification":
            out.writerow([r["text"], "", " ".join("ADJ" if w == adjective else "O" for w in r["text"].split())])
        elif head == "question answering":
            out.writerow(["was it good", r["text"], adjective])
        else:
            out.writerow([r["text"], "", ""])
    return buf.getvalue().encode()


HEADS = {"token classification": "BertForTokenClassification", "masked LM": "BertForMaskedLM",
         "causal LM": "BertLMHeadModel", "question answering": "BertForQuestionAnswering"}


@pytest.mark.parametrize("head", HEADS)
def test_each_head_is_found_scored_and_reloads_as_gated(head, tmp_path, one_thread):
    import transformers

    tok = tokenizer()
    cfg = transformers.BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                  intermediate_size=48, max_position_embeddings=64, is_decoder=head == "causal LM",
                                  id2label={0: "O", 1: "ADJ"}, label2id={"O": 0, "ADJ": 1})
    torch.manual_seed(0)
    getattr(transformers, HEADS[head])(cfg).eval().save_pretrained(tmp_path / "model")
    tok.save_pretrained(tmp_path / "model")
    tm = task_head.load(str(tmp_path / "model"))
    assert tm.head == head and tm.architecture == HEADS[head] and head in tm.label
    pair = "context" if head == "question answering" else None
    label = None if tm.kind == "none" else "label"
    task = own.prepare(tm, read_table(_rows(head), "rows.csv", 10**6), "text", label, pair, own.Settings())
    assert task.n_eval == 12 and len(task.held) == 1 and 0 < task.chance
    got = task.measure({})
    if head.endswith("LM"):  # one held-out batch: perplexity is exp of the model's own mean loss on it
        with torch.no_grad():
            loss = float(tm.model(**task.held[0]).loss)
        assert got["loss"] == pytest.approx(loss, rel=1e-5) and got["perplexity"] == pytest.approx(2.718281828 ** loss)
        assert task.chance < len(tok)  # a token's frequency beats a uniform guess over the vocabulary
    else:
        assert 0 <= got[task.metric_name] <= 1
    check = own.export_and_check(task, {0: [1], 1: [0, 3]}, str(tmp_path / "pruned"))
    assert check["reload_ok"] and check["class"] == f"Pruned{HEADS[head]}", check
