"""ui.runtime.preload: the element chunks it names exist in the installed Streamlit, and its script is constant."""
import json
import re

from streamlit.testing.v1 import AppTest

from ui.runtime import preload, streamlit_private


def test_every_element_has_one_chunk_in_the_pinned_streamlit():
    """An upgrade that renames a chunk fails here, not silently in a student's first chart."""
    assert len(preload.chunks()) == len(streamlit_private.PRELOAD_ELEMENTS)
    for name, chunk in zip(streamlit_private.PRELOAD_ELEMENTS, preload.chunks()):
        assert re.fullmatch(re.escape(name) + r"\.[\w-]+\.js", chunk) and (streamlit_private.STATIC / chunk).is_file()


def test_the_sidebar_carries_one_constant_script():
    at = AppTest.from_file("../../../app.py", default_timeout=60)
    at.query_params["text"] = "<script>alert(1)</script>"
    at.run()
    scripts = [e for e in at.sidebar if e.type == "html" and "__elementsPreloading" in e.proto.body]
    assert len(scripts) == 1 and "alert(1)" not in scripts[0].proto.body
    queue = re.search(r"const queue = (\[.*?\]);", scripts[0].proto.body).group(1)
    assert json.loads(queue) == list(preload.chunks())
