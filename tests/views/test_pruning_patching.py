"""AppTest of the pruning view's patching beside its importance: on the built-in gpt, the Patching view's example
pair patched head by head next to the next-token importance the page scored, with their Spearman ρ; checked
against experiments.patching and the task's own scoring run here."""
import numpy as np
import pytest

from experiments import patching, prune_tasks
from models import load
from tests.views.view_at import open_view
from ui.patching import PAIRS


@pytest.mark.slow
def test_gpt_patching_scores_beside_gradient_importance_with_their_rank_correlation(one_thread):
    at = open_view("pruning", model="gpt", text="The assert statement checks a condition.", prune_score=4,
                   prune_eval=4)
    pair = PAIRS["gpt"]
    assert any(c.value.startswith(f"Behaviour: “{pair.clean}” → {pair.answer!r}") for c in at.caption)
    at.toggle(key="prune_patch").set_value(True).run()
    assert not at.exception and not at.error, at.exception
    said = next(c.value for c in at.caption if c.value.startswith("Spearman ρ = "))

    m = load("gpt")
    p = patching.patch_heads(m, pair.clean, pair.corrupt, pair.answer, pair.wrong)
    grad = prune_tasks.for_model(m, "", "gpt").score(4, None)[0]
    rho = patching.rank_correlation(np.abs(p.scores), grad)
    assert said.startswith(f"Spearman ρ = {rho:.2f} between |patching score| and the gradient importance above "
                           "(next-token prediction), over 16 heads.")
    assert -1 <= rho <= 1 and p.scores.shape == grad.shape == (4, 4)
