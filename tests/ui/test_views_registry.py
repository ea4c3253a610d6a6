"""The registry of views: looked up once per process, and each page run gets Page objects of its own."""
from streamlit.testing.v1 import AppTest

from ui import views


def test_each_run_gets_its_own_pages_made_from_one_lookup():
    at = AppTest.from_file("../../app.py", default_timeout=120).run()  # a run, so st.Page has its context
    assert not at.exception
    made = views._made_pages()
    first, second = views.pages(), views.pages()
    assert [p.url_path for p in first] == [p.url_path for p in second] == [p.url_path for p in made]
    assert [p.title for p in first] == [v.title for v in views.present()]
    # st.navigation marks the page it will run on the object: sessions must never share one
    assert not {id(p) for p in first} & ({id(p) for p in second} | {id(p) for p in made})
