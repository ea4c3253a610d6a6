"""Attention flow against networkx's Edmonds-Karp, the previous solver (general Dinic), closed forms for one and two
layers, and rollout."""
import networkx as nx
import numpy as np
import pytest

from analysis.flow import attention_flow, dinic_flow_values, max_flow_values
from analysis.rollout import mix_residual, residual_attention, rollout


def _networkx_flows(a_hat):
    """The original per-pair computation: one Edmonds-Karp max flow per (top token, input token)."""
    n_layers, n, _ = a_hat.shape
    g = nx.DiGraph()
    g.add_nodes_from((layer, i) for layer in range(n_layers + 1) for i in range(n))
    for layer in range(1, n_layers + 1):
        for i in range(n):
            for j in range(n):
                if a_hat[layer - 1, i, j] > 0:
                    g.add_edge((layer, i), (layer - 1, j), capacity=float(a_hat[layer - 1, i, j]))
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            out[i, j] = nx.maximum_flow_value(
                g, (n_layers, i), (0, j), flow_func=nx.algorithms.flow.edmonds_karp
            )
    return out


def _random_a_hat(rng, layers, n, sharpness, residual, causal=False, sparse=False):
    logits = rng.normal(size=(layers, n, n)) * sharpness
    if causal:
        logits = np.where(np.tril(np.ones((n, n))) > 0, logits, -np.inf)
    a = np.exp(logits - logits.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    if sparse:  # exact zeros: edges that do not exist
        a[a < 0.12] = 0.0
    return mix_residual(a, residual)


@pytest.mark.parametrize("seed", range(8))
def test_matches_networkx_edmonds_karp(seed):
    rng = np.random.default_rng(seed)
    a_hat = _random_a_hat(
        rng,
        layers=int(rng.integers(2, 6)),
        n=int(rng.integers(3, 7)),
        sharpness=float(rng.uniform(0.5, 4.0)),
        residual=float(rng.choice([0.0, 0.3, 0.5])),
        causal=seed % 3 == 0,
        sparse=seed % 2 == 1,
    )
    assert np.abs(max_flow_values(a_hat) - _networkx_flows(a_hat)).max() < 1e-6


def test_bert_shaped_input_matches_networkx():
    # peaked attention with a sink column, like [CLS]/[SEP] in BERT: the bottleneck is not the sink's own edges
    rng = np.random.default_rng(11)
    logits = rng.normal(size=(4, 8, 8)) * 1.5
    logits[:, :, 0] += 2.5
    a = np.exp(logits)
    a_hat = mix_residual(a / a.sum(-1, keepdims=True), 0.5)
    assert np.abs(max_flow_values(a_hat) - _networkx_flows(a_hat)).max() < 1e-6


def test_one_and_two_layers_in_closed_form():
    rng = np.random.default_rng(5)
    one = _random_a_hat(rng, layers=1, n=5, sharpness=2.0, residual=0.5)
    assert np.allclose(max_flow_values(one), one[0])  # a single edge per pair
    two = _random_a_hat(rng, layers=2, n=5, sharpness=2.0, residual=0.2)
    # each middle token j carries min(capacity in, capacity out), independently of the others
    expected = np.minimum(two[1][:, :, None], two[0][None, :, :]).sum(axis=1)
    assert np.allclose(max_flow_values(two), expected, atol=1e-12)


def test_hand_checked_bottleneck():
    # two tokens, three layers. Token 1 pours everything into token 0 in the middle layer, so all
    # flow from top token 1 must pass through node (1, 0), whose only way to input 1 is 0.25 wide.
    a_hat = np.array(
        [
            [[0.75, 0.25], [0.5, 0.5]],  # layer 1
            [[1.0, 0.0], [1.0, 0.0]],  # layer 2
            [[0.5, 0.5], [0.0, 1.0]],  # layer 3
        ]
    )
    flows = max_flow_values(a_hat)
    assert np.allclose(flows, [[0.75, 0.25], [0.75, 0.25]])
    assert np.allclose(attention_flow(a_hat[:, None].astype(np.float32), residual=0.0), flows)


@pytest.mark.parametrize("fusion", ["mean", "max", "min"])
def test_rows_sum_to_one_and_flow_dominates_rollout(fusion):
    rng = np.random.default_rng(7)
    w = rng.dirichlet(np.ones(9), size=(4, 3, 9)).astype(np.float32)  # (L, H, T, T)
    flow = attention_flow(w, residual=0.5, fusion=fusion)
    assert np.allclose(flow.sum(-1), 1.0)
    # rollout's proportional split is itself a feasible flow, so the maximum is never below it
    raw = max_flow_values(residual_attention(w, 0.5, fusion))
    assert np.all(raw >= rollout(w, 0.5, fusion) - 1e-12)


def test_progress_reports_each_row_in_order():
    rng = np.random.default_rng(2)
    seen = []
    max_flow_values(_random_a_hat(rng, layers=3, n=5, sharpness=2.0, residual=0.0), progress=seen.append)
    assert seen == [pytest.approx((i + 1) / 5) for i in range(5)]


def test_rejects_cross_attention():
    with pytest.raises(ValueError, match="square"):
        attention_flow(np.full((2, 1, 3, 4), 0.25, dtype=np.float32))


def layered_graph(a_hat: np.ndarray):
    """a_hat [L, T, T] -> int32 capacities on (L+1)*T nodes, as scipy's maximum_flow takes them; node l*T + i is
    token i after layer l. The whole graph, written apart from analysis.flow's row solvers: the reference."""
    import scipy.sparse

    from analysis.flow import fixed_point

    n_layers, n_tok, _ = a_hat.shape
    caps = fixed_point(a_hat)  # (L, T, T)
    layer, i, j = np.nonzero(caps)
    src = (layer + 1) * n_tok + i                  # node i of layer l+1 ...
    dst = layer * n_tok + j                        # ... sends to node j of layer l
    n = (n_layers + 1) * n_tok
    return scipy.sparse.csr_array((caps[layer, i, j].astype(np.int32), (src, dst)), shape=(n, n))


def _scipy_flows(a_hat):
    """The previous implementation: scipy's Dinic on the whole layered graph, one call per pair."""
    from scipy.sparse.csgraph import maximum_flow

    from analysis.flow import SCALE

    n_layers, n, _ = a_hat.shape
    graph = layered_graph(a_hat)
    return np.array([[maximum_flow(graph, n_layers * n + i, j).flow_value for j in range(n)]
                     for i in range(n)]) / SCALE


@pytest.mark.parametrize("seed", range(4))
def test_same_numbers_as_scipy_on_the_whole_graph(seed):
    # a maximum-flow value is unique: on the same fixed-point capacities the results are bit-identical
    rng = np.random.default_rng(100 + seed)
    a_hat = _random_a_hat(rng, layers=int(rng.integers(2, 7)), n=int(rng.integers(8, 17)), sharpness=2.0,
                          residual=0.5, causal=seed == 1, sparse=seed == 2)
    assert np.array_equal(max_flow_values(a_hat), _scipy_flows(a_hat))


def test_two_workers_give_the_same_rows_and_report_progress_in_order():
    rng = np.random.default_rng(3)
    a_hat = _random_a_hat(rng, layers=4, n=10, sharpness=2.0, residual=0.5)
    seen = []
    assert np.array_equal(max_flow_values(a_hat, workers=2, progress=seen.append), max_flow_values(a_hat))
    assert seen == [pytest.approx((i + 1) / 10) for i in range(10)]


def test_a_progress_callback_that_raises_cancels_the_rest():
    rng = np.random.default_rng(4)
    a_hat = _random_a_hat(rng, layers=3, n=12, sharpness=2.0, residual=0.5)
    seen = []

    def stop_after_three(fraction):
        seen.append(fraction)
        if len(seen) == 3:
            raise KeyboardInterrupt

    for workers in (1, 2):
        seen.clear()
        with pytest.raises(KeyboardInterrupt):
            max_flow_values(a_hat, workers=workers, progress=stop_after_three)
        assert len(seen) == 3


# the layered solver (analysis._layered) against the previous one, general Dinic on a CSR graph per problem: a
# maximum-flow value is unique, so on the same fixed-point capacities the numbers must agree to the last unit
@pytest.mark.parametrize("seed", range(12))
def test_layered_solver_equals_the_previous_dinic_on_random_graphs(seed):
    rng = np.random.default_rng(200 + seed)
    a_hat = _random_a_hat(rng, layers=int(rng.integers(2, 8)), n=int(rng.integers(5, 41)),
                          sharpness=float(rng.uniform(0.5, 5.0)), residual=float(rng.choice([0.0, 0.2, 0.5])),
                          causal=seed % 3 == 0, sparse=seed % 4 == 1)
    new, old = max_flow_values(a_hat), dinic_flow_values(a_hat)
    assert np.abs(new - old).max() < 1e-9
    assert np.array_equal(new, old)


def test_layered_solver_equals_the_previous_dinic_past_64_tokens():
    # more than one 64-bit word per bit set; no residual, so later phases (flow sent back up) are needed
    rng = np.random.default_rng(9)
    for residual, causal in ((0.0, False), (0.5, True)):
        a_hat = _random_a_hat(rng, layers=4, n=70, sharpness=3.0, residual=residual, causal=causal)
        assert np.array_equal(max_flow_values(a_hat), dinic_flow_values(a_hat))


def _minilm(n_tokens):
    import models
    from bench.heads import text_of

    trace = models.load("bert", "cpu").attend(text_of(n_tokens))
    assert trace.weights.shape[-1] == n_tokens
    return trace.weights


@pytest.mark.parametrize("fusion, residual", [("mean", 0.5), ("max", 0.0)])
def test_layered_solver_equals_the_previous_dinic_on_real_attention(fusion, residual):
    a_hat = residual_attention(_minilm(40), residual, fusion)
    assert np.abs(max_flow_values(a_hat, workers=2) - dinic_flow_values(a_hat)).max() < 1e-9


@pytest.mark.slow
def test_layered_solver_equals_the_previous_dinic_on_real_attention_at_128_tokens():
    a_hat = residual_attention(_minilm(128), 0.5, "mean")
    assert np.abs(max_flow_values(a_hat, workers=2) - dinic_flow_values(a_hat, workers=2)).max() < 1e-9


def test_rows_run_on_two_threads_on_a_laptop_and_one_when_hosted(monkeypatch):
    import os

    import limits
    from analysis.flow import default_workers

    monkeypatch.delenv(limits.ENV, raising=False)
    assert default_workers() == min(2, os.cpu_count() or 1)
    monkeypatch.setenv(limits.ENV, "1")
    assert default_workers() == 1
    rng = np.random.default_rng(12)
    a_hat = _random_a_hat(rng, layers=5, n=12, sharpness=2.0, residual=0.5)
    assert np.array_equal(max_flow_values(a_hat), max_flow_values(a_hat, workers=2))
