"""What the app says about a family is true of it: one shared key/value head is written in the singular, and the
Pruning view names the sidebar's own "Other model" choice."""
import shutil

import torch
from streamlit.testing.v1 import AppTest

import models
from ui.state import MODEL_LABELS


def test_a_qwen2_with_one_key_value_head_says_head(tiny_folder, tmp_path):
    from transformers import AutoConfig, Qwen2ForCausalLM

    folder = tmp_path / "qwen2-mqa"
    shutil.copytree(tiny_folder("qwen2"), folder)
    cfg = AutoConfig.from_pretrained(folder)
    cfg.num_key_value_heads = 1
    torch.manual_seed(0)
    Qwen2ForCausalLM(cfg).save_pretrained(folder)  # the same tokenizer, one key/value head for the 4 query heads
    m = models.load(f"hf:{folder}")
    assert m.kv_head_of == [0, 0, 0, 0]
    assert "4 query heads share 1 key/value head)" in m.label and "1 key/value heads" not in m.label
    assert "4 query heads share 2 key/value heads" in models.load("hf:" + tiny_folder("qwen2")).label


def test_pruning_names_the_sidebars_other_model_choice():
    at = AppTest.from_file("../../app.py", default_timeout=180)
    at.session_state["prune_source"] = "your model on your labelled rows"
    at.run()
    at.switch_page("views/pruning.py").run()
    assert not at.exception
    said = " ".join(i.value for i in at.info)
    assert f"choose 'hf:' in its Model box ({MODEL_LABELS['hf:']})" in said and "Other encoder" not in said
    assert "hf:" in at.sidebar.selectbox(key="model").options  # the choice the sidebar offers, and what it then says
    at.sidebar.selectbox(key="model").set_value("hf:").run()
    assert at.sidebar.caption[0].value == MODEL_LABELS["hf:"]
