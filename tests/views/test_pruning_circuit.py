"""AppTest of the pruning lab's "keep the circuit's heads": on the built-in gpt, the heads of the top edges found by
EAP on the bracket task kept, beside as many heads kept by importance and at random, each plan scored by the lab's
metric; checked against experiments.circuits run here."""

import pytest

from data.circuit_tasks import brackets
from experiments.circuits import edge_scores
from models import load
from tests.views.view_at import open_view
from ui.pruning_circuit import PAIRS, SEEDS, heads_of


def test_heads_of_reads_senders_and_receivers():
    import pandas as pd

    edges = pd.DataFrame({"sender": ["embed", "L0H2", "L1.mlp"], "receiver": ["L0H1.q", "L1H3.k", "logits"]})
    assert heads_of(edges) == {(0, 1), (0, 2), (1, 3)}


@pytest.mark.slow
def test_gpt_circuit_plan_beside_importance_and_random_at_the_same_number_of_heads(one_thread):
    at = open_view("pruning", model="gpt", text="The assert statement checks a condition.", prune_score=4,
                   prune_eval=4, circ_top=10)
    at.toggle(key="prune_circuit").set_value(True).run()
    assert not at.exception and not at.error, at.exception
    table = at.dataframe[-1].value
    assert list(table.plan[:2]) == ["the circuit's heads", "the most important heads"] and len(table) == 2 + SEEDS
    E = edge_scores(load("gpt"), brackets(PAIRS))
    kept = sorted(heads_of(E.loc[E.score.abs().nlargest(10).index]))
    assert table["heads"][0] == " ".join(f"L{a}H{b}" for a, b in kept)
    assert set(table["heads kept"]) == {len(kept)} and table.metric.between(0, 1).all()  # each plan keeps as many
    every = 4 * 4                                                           # gpt: 4 layers × 4 heads
    assert (len(kept) == every) == any("touch every head" in i.value for i in at.info)
    if len(kept) < every:  # and with a circuit of every edge, the plans keep every head: said, not shown as a race
        at.session_state["circ_top"] = 500
        at.run()
        assert any("strongest edges touch every head" in i.value for i in at.info)
