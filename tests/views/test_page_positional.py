"""AppTest of views/positional.py through the app frame: every tab renders, the numbers are right, only the
open tab runs and the others keep their settings."""
from streamlit.testing.v1 import AppTest


def open_page(**state) -> AppTest:
    at = AppTest.from_file("../../app.py", default_timeout=120)
    for key, value in state.items():
        at.session_state[key] = value
    at.switch_page("views/positional.py")
    return at.run()


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def show_tab(at: AppTest, label: str) -> AppTest:
    at.session_state["pos_tab"] = label
    return at.run()


def test_page_renders_every_tab_with_the_right_numbers():
    at = open_page()
    assert not at.exception
    assert at.title[0].value == "Positional encodings"
    values = {}
    for label in ("Shift = rotation", "RoPE"):
        values |= metrics(show_tab(at, label))
    assert float(values["max |PE(pos+k) \u2212 M\u2096 PE(pos)|, float64"]) < 1e-9
    assert float(values["Largest spread of q\u00b7k among equal offsets n \u2212 m"]) < 1e-9
    show_tab(at, "Why positions?")
    rows = [m.value for m in at.metric if m.label.startswith("max |row 0 \u2212 row 3|")]
    assert rows[0] == "0.000" and float(rows[1]) > 0.1  # without positions, then with
    titles = [c.proto.spec for c in at.get("plotly_chart")]
    assert any("without positions" in spec for spec in titles) and any("with positions" in spec for spec in titles)
    assert any("Learned (bert)" in c.proto.spec for c in show_tab(at, "Learned").get("plotly_chart"))


def test_only_the_open_tab_runs_and_a_hidden_tab_keeps_its_settings():
    at = open_page()
    assert {m.label for m in at.metric} == set() and len(at.get("plotly_chart")) == 5  # Sinusoids only
    at.slider(key="pos_d").set_value(32)
    at.slider(key="pos_n").set_value(50).run()
    show_tab(at, "Shift = rotation")
    assert len(at.get("plotly_chart")) == 1 and not [s for s in at.slider if s.key == "pos_d"]
    assert at.slider(key="pos_k").max == 49  # the offset stops inside the Sinusoids tab's 50 positions
    show_tab(at, "Sinusoids")
    assert at.slider(key="pos_d").value == 32 and at.slider(key="pos_n").value == 50  # kept meanwhile


def test_changing_the_offset_and_the_sentence():
    at = show_tab(open_page(), "Shift = rotation")
    at.slider(key="pos_k").set_value(40).run()
    assert not at.exception
    assert "PE(pos+40)" in "".join(c.proto.spec for c in at.get("plotly_chart"))
    show_tab(at, "Why positions?")
    at.text_input(key="pos_demo_text").set_value("dog bites man").run()
    assert not any(m.label.startswith("max |row") for m in at.metric)  # no repeated word, no row comparison
    at.text_input(key="pos_demo_text").set_value("  ").run()
    assert not at.exception
    assert any("at least two words" in i.value for i in at.info)


def test_a_model_that_cannot_load_falls_back_to_minilm():
    at = open_page(model="hf:", hf_spec="", pos_tab="Learned")
    assert not at.exception
    assert any("built-in MiniLM" in w.value for w in at.warning)
    assert any("Learned (bert)" in c.proto.spec for c in at.get("plotly_chart"))


def test_the_sinusoid_figures_are_built_once_per_server_and_show_the_same_numbers(monkeypatch):
    """The Sinusoids tab depends on its sliders only: a fresh link (a new session) and a rerun draw the kept
    figures, each built once and equal to a fresh build; another d_model builds its own."""
    from tests.views.kept_figures import charts, count_builds, counts, same_figure
    from ui.runtime import cache
    from viz import positional as V

    names = ("dimension_curves", "table_heatmap", "wavelength_plot", "similarity_heatmap", "offset_plot")
    fresh = {n: getattr(V, n) for n in names}
    cache.STORES["results"].clear()
    built = count_builds(monkeypatch, V, *names)
    first = open_page(text="The otter slid into the river.")
    assert not first.exception and counts(built) == dict.fromkeys(names, 1)
    second = open_page(text="A heron waited in the reeds.")
    second.multiselect(key="pos_dims").set_value([4, 5, 6, 7]).run()  # a rerun
    assert not second.exception and counts(built) == dict.fromkeys(names, 1)
    assert charts(second) == charts(first)
    shown = charts(second)
    for spec, name in zip(shown, names):
        (args, _), = built[name]
        assert same_figure(spec, fresh[name](*args)), name
    assert not same_figure(shown[0], fresh["table_heatmap"](*built["table_heatmap"][0][0]))
    second.slider(key="pos_d").set_value(32).run()
    assert not second.exception and counts(built)["wavelength_plot"] == 2
