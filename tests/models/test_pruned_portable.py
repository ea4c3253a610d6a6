"""A pruned export loads where this project is not: a fresh process whose path holds only the folder and transformers
builds it with trust_remote_code (Auto class and pipeline) and predicts as the model gated here; a stock class refuses
it instead of loading it with re-initialised attention."""
import json
import os
import subprocess
import sys
import textwrap

import torch

from experiments import own
from models.gates import gated, head_counts, mask
from models.pruned_hf import load_line
from tests.experiments.test_own import _task

OUTSIDE = textwrap.dedent("""
    import json, sys
    import torch, transformers
    folder = sys.argv[1]
    assert not any(m == "models" or m.startswith("models.") for m in sys.modules), "the project was imported"
    tok = transformers.AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(folder, trust_remote_code=True).eval()
    enc = tok(sys.argv[2:], return_tensors="pt", padding=True)
    with torch.no_grad():
        logits = model(**enc).logits.tolist()
    pipe = transformers.pipeline("text-classification", model=folder, trust_remote_code=True)
    labels = [r["label"] for r in pipe(sys.argv[2:])]
    heads = [layer.attention.self.num_attention_heads for layer in model.base_model.encoder.layer]
    try:
        transformers.BertForSequenceClassification.from_pretrained(folder, ignore_mismatched_sizes=True)
        stock = "loaded"
    except OSError as err:
        stock = "refused: " + str(err).splitlines()[0]
    print(json.dumps({"logits": logits, "labels": labels, "heads": heads, "stock": stock,
                      "class": type(model).__name__}))
""")


def test_export_loads_anywhere_with_transformers_alone(classifier, tmp_path, one_thread):
    task, plan = _task(classifier), {0: [1], 1: [0, 2]}
    folder = tmp_path / "pruned"
    assert own.export_and_check(task, plan, str(folder))["reload_ok"]
    config = json.loads((folder / "config.json").read_text())
    assert config["auto_map"]["AutoModelForSequenceClassification"] == \
        "modeling_pruned.PrunedBertForSequenceClassification"
    script = tmp_path / "outside.py"
    script.write_text(OUTSIDE)
    texts = ["a great and lovely film", "dull, slow and bad"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"HF_HUB_OFFLINE": "1",
                                                                         "HF_HOME": str(tmp_path / "hf")}
    run = subprocess.run([sys.executable, "-I", str(script), str(folder), *texts], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "Do you wish to run the custom code" not in run.stdout + run.stderr
    out = json.loads(next(line for line in run.stdout.splitlines() if line.startswith("{")))
    assert out["class"] == "PrunedBertForSequenceClassification" and out["heads"] == [3, 2]
    assert out["stock"].startswith("refused: ") and "model.safetensors" in out["stock"]
    model, tok = task.tm.model, task.tm.tokenizer
    enc = tok(texts, return_tensors="pt", padding=True)
    with torch.no_grad(), gated(model, mask(head_counts(model), plan)):
        want = model(**enc).logits
    torch.testing.assert_close(torch.tensor(out["logits"]), want, rtol=0, atol=1e-5)
    assert out["labels"] == [model.config.id2label[i] for i in want.argmax(-1).tolist()]


def test_the_load_line_names_trust_remote_code():
    assert load_line("AutoModelForSequenceClassification") == \
        "transformers.AutoModelForSequenceClassification.from_pretrained(OUT, trust_remote_code=True)"


def test_every_place_that_shows_an_export_prints_the_same_two_lines():
    from models.pruned_hf import load_code

    assert load_code("AutoModel") == ("model = transformers.AutoModel.from_pretrained(OUT, trust_remote_code=True)\n"
                                      'pipe = transformers.pipeline("feature-extraction", model=OUT, '
                                      "trust_remote_code=True)")
    causal = load_code("AutoModelForCausalLM").splitlines()
    assert causal[1].startswith('pipe = transformers.pipeline("text-generation"')
