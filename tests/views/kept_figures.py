"""Helpers for the tests of figures a view builds through ui.show.figure: count a viz builder's calls, and compare
a chart the page shows with a fresh build of the same figure, number for number."""
import json

import plotly.io

from viz.common import labels_never_hidden, readable_text


def count_builds(monkeypatch, module, *names: str, calls: dict | None = None) -> dict[str, list]:
    """Replace module.name by a wrapper that records its calls (a view imports it by name at each run, so the
    wrapper is what the page calls); returns each name's calls, (args, kwargs) each (in `calls` when given), as
    the page runs. The original builds a fresh figure from them: fresh(module_before, calls, name)."""
    calls = {} if calls is None else calls
    for name in names:
        calls[name] = []
        build = getattr(module, name)

        def counted(*args, _build=build, _name=name, **kwargs):
            calls[_name].append((args, kwargs))
            return _build(*args, **kwargs)

        monkeypatch.setattr(module, name, counted)
    return calls


def counts(calls: dict[str, list]) -> dict[str, int]:
    return {name: len(c) for name, c in calls.items()}


def charts(at) -> list[dict]:
    """The page's plotly charts as the browser gets them (their JSON), in order."""
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def as_shown(fig) -> dict:
    """A freshly built figure as ui.show.plot hands it to a light page (tick labels never hidden, text readable)."""
    return json.loads(plotly.io.to_json(labels_never_hidden(readable_text(fig)), validate=False))


def same_figure(spec: dict, fig) -> bool:
    """Whether a shown chart has the fresh figure's traces and layout, every number equal."""
    want = as_shown(fig)
    return spec["data"] == want["data"] and {k: v for k, v in spec["layout"].items() if k != "template"} == {
        k: v for k, v in want["layout"].items() if k != "template"}
