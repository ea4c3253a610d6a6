"""AppTest of views/kv_cache.py through the app frame, with a small decoder so it runs in seconds."""
import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import limits
from tests.views.test_page_corpus import array

SMALL = {"kv_layers": 1, "kv_d_model": 64, "kv_nh": 4, "kv_tokens": 16}


pytestmark = pytest.mark.usefixtures("one_thread")


def run(**state) -> AppTest:
    at = AppTest.from_file("../../app.py", default_timeout=90)
    for key, value in {**SMALL, **state}.items():
        at.session_state[key] = value
    at.switch_page("views/kv_cache.py")
    return at.run()


def finish(at: AppTest, key: str) -> AppTest:
    """Wait for the page's background job `key` (ui.runtime.work), then run the page again, as its poll would."""
    at.session_state["_work_jobs"][key].thread.join(120)
    return at.run()


def memory(at: AppTest) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The cache memory figure's points: cached positions and KiB measured from the tensors, then the formula's."""
    formula, measured = next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if c.key == "kv_mem")["data"]
    return tuple(array(v).astype(float) for v in (measured["x"], measured["y"], formula["x"], formula["y"]))


def test_generate_compares_cached_and_uncached_live():
    at = run(kv_kvh=2)
    assert not at.exception and not at.error
    assert "Work: " in " ".join(c.value for c in at.caption)  # the budget is shown before the click
    at.button(key="kv_go").click().run()
    assert not at.exception and not at.error
    finish(at, "kv_generate")
    assert not at.exception and not at.error
    summary = at.success[0].value
    assert "same tokens: **True**" in summary and "the fastest of 3 interleaved generations of each" in summary
    assert ("× faster** with the cache" in summary) != ("× slower** with the cache" in summary)
    per_token = 2 * 1 * 2 * 16 * 4  # 1 layer, 2 kv heads of 64 / 4, float32
    t, kib, t_formula, kib_formula = memory(at)  # measured from the tensors, then the formula
    assert t[-1] == 31 and kib[-1] * 1024 == 31 * per_token  # 16 prompt + 15 fed tokens
    np.testing.assert_allclose(kib_formula * 1024, t_formula * per_token)
    titles = [c.proto.spec for c in at.get("plotly_chart")]
    assert any("Latency per token" in t for t in titles) and any("Cache memory" in t for t in titles)


def test_table_lists_known_models_and_the_users_decoder():
    at = run(kv_kvh=1, kv_context=8192)
    assert not at.exception
    table = at.dataframe[0].value
    assert list(table["model"])[:4] == ["GPT-2 small", "Llama-2-7B", "Llama-3-8B", "Falcon-7B"]
    assert list(table["per_token"])[:4] == ["36 KiB", "512 KiB", "128 KiB", "8 KiB"]
    assert table["kind"].iloc[-1] == "MQA" and table["at 8,192 tokens"].iloc[2] == "1 GiB"


def test_kv_heads_choices_divide_heads_and_a_stale_choice_is_dropped():
    at = run(kv_nh=8, kv_kvh=4)
    assert not at.exception
    assert list(at.selectbox(key="kv_kvh").options) == ["8 (MHA)", "4 (GQA)", "2 (GQA)", "1 (MQA)"]
    at.selectbox(key="kv_nh").set_value(2).run()  # 4 kv heads no longer divide the heads
    assert not at.exception and not at.error
    assert list(at.selectbox(key="kv_kvh").options) == ["2 (MHA)", "1 (MQA)"]
    assert at.selectbox(key="kv_kvh").value == 2


def test_a_configuration_over_the_memory_cap_is_refused_with_a_sentence():
    at = run(kv_layers=16, kv_d_model=2048, kv_nh=32, kv_kvh=32, kv_tokens=16)  # ~800M parameters, few FLOPs
    at.button(key="kv_go").click().run()
    assert not at.exception
    assert "over the 2 GiB cap" in at.error[0].value and "fewer layers" in at.error[0].value
    assert not any("the formula gives" in s.value for s in at.success)


def test_a_request_over_its_work_budget_is_refused_before_it_starts():
    at = run(kv_layers=32, kv_d_model=4096, kv_nh=32, kv_kvh=32, kv_tokens=512)
    assert not at.exception
    assert "GFLOP, over the 1,500 one request may use here" in at.error[0].value
    assert not at.button or all(b.key != "kv_go" for b in at.button)


def test_hosted_budget_is_tighter_and_shown(monkeypatch):
    monkeypatch.setenv(limits.ENV, "1")
    at = run(kv_layers=16, kv_d_model=1024, kv_nh=8, kv_kvh=8, kv_tokens=128)
    assert not at.exception
    assert "over the 40 one request may use here" in at.error[0].value
    at = run()
    assert any("of 40 allowed per request here" in c.value for c in at.caption)


@pytest.mark.parametrize("hosted", [False, True])
def test_a_decoder_over_the_kept_size_is_built_for_its_request_alone(monkeypatch, hosted):
    """Hosted, a decoder whose weights pass kept_decoder_bytes (4 x 512: ~50 MB, over 32 MiB) is not held in the model
    store after its generation (the hosted maximum, ~200 MB, held a replica's memory up); on a laptop it is."""
    from ui.runtime import cache

    if hosted:
        monkeypatch.setenv(limits.ENV, "1")
    cache.STORES["models"].clear()
    at = run(kv_layers=4, kv_d_model=512, kv_nh=8, kv_kvh=8, kv_tokens=16)
    at.button(key="kv_go").click().run()
    finish(at, "kv_generate")
    assert not at.exception and not at.error and "faster" in at.success[0].value
    decoders = [k for k in cache.STORES["models"]._values if "warm_decoder" in k[0]]
    assert decoders == ([] if hosted else [decoders[0]]) and (hosted or decoders[0][1][0] == (4, 512, 8, 8))
    at = run(kv_layers=4, kv_d_model=256, kv_nh=8, kv_kvh=8)  # the page's own default decoder (15 MiB) is kept,
    at.button(key="kv_go").click().run()                       # hosted too
    finish(at, "kv_generate")
    assert [k[1][0] for k in cache.STORES["models"]._values if "warm_decoder" in k[0]][-1] == (4, 256, 8, 8)


def test_variants_and_the_tiny_decoder():
    at = run(kv_variants=True, kv_digits="31415")
    assert not at.exception and not at.error
    finish(at, "kv_variants")
    assert not at.exception and not at.error
    assert any("KV bytes per token" in c.proto.spec for c in at.get("plotly_chart"))
    assert any("**`11345.`**" in m.value for m in at.markdown)


def test_tiny_decoder_explains_letters():
    at = run(kv_digits="hello")
    assert not at.exception and "only sorts digits" in at.error[0].value


def test_an_uncached_run_too_costly_for_the_cpu_is_skipped_with_a_reason():
    at = run(kv_layers=2, kv_d_model=512, kv_nh=8, kv_kvh=1, kv_tokens=512)  # about 1.8 TFLOP uncached
    at.button(key="kv_go").click().run()
    assert not at.exception and not at.error
    assert "GFLOP more, over what one request may use here, so only the cached run is done" in at.info[0].value
    finish(at, "kv_generate")
    assert memory(at)[0][-1] == 527 and "faster" not in at.success[0].value  # cached positions; no comparison


def test_playing_token_by_token_keeps_no_frame_and_the_finished_cache_is_kept_once(monkeypatch):
    """Play draws each step's cache once and keeps none of the frames in the shared results store; the finished
    cache's figure is built once per server for the digits, whoever asks."""
    from data.sorting import VOCAB
    from ui.runtime import cache
    from viz import kv_cache as V

    built = []  # the tiny decoder's grids (the page draws a Hugging Face decoder's cache with it too)
    real = V.cache_grid
    monkeypatch.setattr(V, "cache_grid", lambda *a, **k: (all(t in VOCAB for t in a[1]) and built.append(a))
                        or real(*a, **k))
    at = run(kv_digits="2718")
    assert not at.exception and len(built) == 1  # the finished cache, built for these digits
    run(kv_digits="2718")
    assert len(built) == 1  # another session: the kept figure
    kept = len(cache.STORES["results"])
    at.button(key="kv_play").click().run()
    assert not at.exception
    frames = len(built) - 1
    assert frames >= 4 and len(cache.STORES["results"]) == kept  # every step drawn once, none kept
    at.run()
    assert len(built) == 1 + frames  # back to the finished cache: kept, not built again


def test_a_multi_query_falcon_writing_one_token(tmp_path):
    """falcon-7b's layout (multi_query): the formula said 4 kv heads (12.5 KiB against 3.12 measured), off the chart's
    y range, and the caption said 'the 1 tokens'."""
    from bench.tiny_any import save

    spec = save("falcon", "causal", tmp_path, multi_query=True, new_decoder_architecture=False, num_kv_heads=4)
    at = run(model="hf:", hf_spec=spec, kv_hf_tokens=1)
    assert not at.exception and not at.error
    shown = " ".join(c.value for c in at.caption)
    assert "the 1 token the model wrote" in shown and "4 query heads share 1 key/value head" in shown
    summary = next(s.value for s in at.success if "Cache after" in s.value)
    assert ": 2 · 1 kv heads · 8 · 4 bytes = 64 per layer" in summary
    measured = summary.split("measured")[0].split(": ")[-1]
    formula = summary.split("the formula says ")[1].split(":")[0]
    assert measured.strip() == formula
    fig = next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if c.key == "kv_hf_mem")
    low, high = fig["layout"]["yaxis"]["range"]
    assert low == 0 and high >= max(max(array(t["y"]).astype(float)) for t in fig["data"])


def test_mistral_4s_latent_cache_is_measured_against_its_own_formula_and_named_by_row(tmp_path):
    """Mistral 4 (multi-head latent attention) caches a latent and a rotary key per layer: 6.09 KiB measured was set
    against 9.75 KiB, and the grid called the two tensors k and v."""
    from bench.tiny_any import save

    at = run(model="hf:", hf_spec=save("mistral4", "causal", tmp_path))
    assert not at.exception and not at.error
    summary = next(s.value for s in at.success if "Cache after" in s.value)
    assert "(16 latent + 4 rotary key) · 4 bytes = 80 per layer" in summary
    assert any("one latent and one rotary key per written token in each layer that attends" in c.value
               for c in at.caption)
    assert summary.split("measured")[0].split(": ")[-1].strip() == summary.split("the formula says ")[1].split(":")[0]
    grid = next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if c.key == "kv_hf_grid")
    assert grid["layout"]["yaxis"]["ticktext"] == ["L0 latent", "L0 rotary k", "L1 latent", "L1 rotary k"]
    memory = next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if c.key == "kv_hf_mem")
    assert memory["data"][0]["name"] == "formula (latent + rotary key)·L·bytes·T"   # not 2·L·kv_heads·head_dim


def test_a_bert_style_causal_lm_in_the_sidebar_is_said_to_be_one_not_no_decoder(tmp_path):
    """The section on a real decoder's own cache said a BERT causal LM (is_decoder) "is not a decoder", while Heads
    and Next token show it writing: it says what it is, and shows the built-in decoder's cache."""
    from bench.tiny_any import save

    at = run(model="hf:", hf_spec=save("bert", "causal", tmp_path, is_decoder=True))
    assert not at.exception
    said = " ".join(c.value for c in at.caption)
    assert ("the built-in one: the sidebar's model writes with a cache too, but it is an encoder run as a causal LM"
            in said)
