"""AppTest of views/positional.py through the app frame: every tab renders, the numbers are right."""
from streamlit.testing.v1 import AppTest


def open_page(**state) -> AppTest:
    at = AppTest.from_file("../../app.py", default_timeout=120)
    for key, value in state.items():
        at.session_state[key] = value
    at.switch_page("views/positional.py")
    return at.run()


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_page_renders_every_tab_with_the_right_numbers():
    at = open_page()
    assert not at.exception
    assert at.title[0].value == "Positional encodings"
    values = metrics(at)
    assert float(values["max |PE(pos+k) \u2212 M\u2096 PE(pos)|, float64"]) < 1e-9
    assert float(values["Largest spread of q\u00b7k among equal offsets n \u2212 m"]) < 1e-9
    rows = [m.value for m in at.metric if m.label.startswith("max |row 0 \u2212 row 3|")]
    assert rows[0] == "0.000" and float(rows[1]) > 0.1  # without positions, then with
    titles = [c.proto.spec for c in at.get("plotly_chart")]
    assert any("Learned (bert)" in spec for spec in titles)
    assert any("without positions" in spec for spec in titles) and any("with positions" in spec for spec in titles)


def test_changing_the_offset_and_the_sentence():
    at = open_page()
    at.slider(key="pos_k").set_value(40)
    at.text_input(key="pos_demo_text").set_value("dog bites man").run()
    assert not at.exception
    assert "PE(pos+40)" in "".join(c.proto.spec for c in at.get("plotly_chart"))
    assert not any(m.label.startswith("max |row") for m in at.metric)  # no repeated word, no row comparison
    at.text_input(key="pos_demo_text").set_value("  ").run()
    assert not at.exception
    assert any("at least two words" in i.value for i in at.info)


def test_a_model_that_cannot_load_falls_back_to_minilm():
    at = open_page(model="hf:", hf_spec="")
    assert not at.exception
    assert any("built-in MiniLM" in w.value for w in at.warning)
    assert any("Learned (bert)" in c.proto.spec for c in at.get("plotly_chart"))
