"""AppTest: the Circuits view on a tiny random Qwen3, GPT-J, Falcon and Gemma 2 folder (models.circuit_families'
layouts; GPT-J's residual is parallel, Gemma 2's norms are sandwiched), a Qwen3-MoE and a Mistral 4 (latent attention),
taken as Llama by their modules' names and checked against their logits, on the Patching view's pair: it draws the
graph and its table is experiments.circuits' top edges. GLM-4, named as Llama but computing more, gets the sentence
that says so."""
import numpy as np
import pytest

import models
from tests.views.view_at import finished, open_linked


@pytest.mark.parametrize("family, extra", [("qwen3", {}), ("gptj", {}), ("falcon", {}),
                                           ("gemma2", {"sliding_window": 64}),  # a window longer than the pair
                                           ("qwen3_moe", {}), ("mistral4", {})])  # experts; latent attention
def test_a_tiny_folder_draws_its_circuit_on_the_patching_views_pair(family, extra, tmp_path):
    from bench.tiny_any import save
    from experiments.circuits import edge_scores
    from ui.patching import IOI_LETTERS

    folder = save(family, "causal", tmp_path, **extra)
    at = open_linked("circuits", 300, state={"model": "hf:", "hf_spec": folder}, circ_task="The Patching view's pair")
    at = finished(at, "circuits", 300)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert len(at.get("plotly_chart")) == 3
    pair = (IOI_LETTERS.clean, IOI_LETTERS.corrupt, IOI_LETTERS.answer, IOI_LETTERS.wrong)
    E = edge_scores(models.load("hf:" + folder), [pair])
    want = E.iloc[E.score.abs().argsort(kind="stable")[::-1]].head(20)
    table = at.dataframe[0].value
    assert list(zip(table.sender, table.receiver)) == list(zip(want.sender, want.receiver))
    assert np.allclose(table.score, want.score, atol=5e-5)


def test_a_folder_named_as_llama_whose_pieces_miss_its_logits_gets_one_sentence(tmp_path):
    from bench.tiny_any import save

    folder = save("glm4", "causal", tmp_path)
    at = open_linked("circuits", 300, state={"model": "hf:", "hf_spec": folder}, circ_task="The Patching view's pair")
    at = finished(at, "circuits", 300)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert not at.get("plotly_chart")
    said = " ".join(i.value for i in at.info)
    assert ("This model (glm4) has modules named as Llama's (or as DeepSeek-V3's latent attention), but the pieces "
            "taken for them do not rebuild its logits") in said
    assert "pairs do not fit" not in said and at.button  # the model, not the pairs: buttons to switch model
