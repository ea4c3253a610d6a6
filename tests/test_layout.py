"""The layout's rules that import-linter does not see: training scripts live in train/ and nothing at run time
imports them; app.py (a module, which import-linter cannot take as a root) sits on top; no module cycle, not
even through an import inside a function (import-linter's layers see those imports too, but only between
layers, not between two modules of one package)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("views", "prune", "corpus_heads", "train", "api", "bench", "ui", "classroom", "viz", "experiments",
            "models", "analysis", "data", "limits")
RUNTIME = ("app", "views", "ui", "classroom", "viz", "experiments", "models", "analysis", "data", "limits", "prune",
           "corpus_heads")


def _name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    """Every project module by dotted name: 'app', 'models', 'models.hf.common', ..."""
    files = [ROOT / "app.py"] + [p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")]
    return {_name(p): p for p in files}


def imports(mods: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the project modules it imports anywhere in its file (top level or inside a function).
    'from models import gates' is models.gates; 'from models import load' is the package models."""
    def known(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for mod, path in mods.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {known(a.name) for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                found |= {known(f"{base}.{a.name}") if f"{base}.{a.name}" in mods else known(base) for a in node.names}
        graph[mod] = found - {None, mod}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan): {a: {b}, b: {a}, c: {a}} -> [[a, b]]"""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_even_through_imports_inside_functions():
    graph = imports(modules())
    assert graph["models"] and graph["app"], "the graph sees the project's imports"
    assert cycles(graph) == []


def test_app_py_is_on_top_of_the_layers():
    """import-linter takes packages only, so app.py's place is checked here: it is the frame over ui/ and below
    (it opens the views by path, never by import), and nothing imports it."""
    graph = imports(modules())
    assert {t.split(".")[0] for t in graph["app"]} <= {"ui", "models", "analysis", "data", "limits"}
    assert "ui" in {t.split(".")[0] for t in graph["app"]}
    assert [mod for mod, targets in graph.items() if "app" in targets] == []


def test_no_file_under_models_is_a_training_script():
    scripts = [p.relative_to(ROOT).as_posix() for p in (ROOT / "models").rglob("*.py")
               if p.name.startswith("train") or "__main__" in p.read_text()]
    assert scripts == []


def test_every_training_script_runs_as_python_m_train_name():
    scripts = [p for p in (ROOT / "train").glob("*.py") if p.name not in ("__init__.py", "shipped_folder.py")]
    assert {"gpt.py", "vit.py", "tiny.py", "seq2seq.py", "classifier.py"} <= {p.name for p in scripts}
    for path in scripts:
        text = path.read_text()
        assert 'if __name__ == "__main__"' in text, path.name
        assert f"python -m train.{path.stem}" in text, f"{path.name}'s docstring names its command"


def test_no_runtime_code_imports_a_training_script():
    graph = imports(modules())
    climbing = {mod: sorted(t for t in targets if t.split(".")[0] == "train") for mod, targets in graph.items()
                if mod.split(".")[0] in RUNTIME}
    assert {mod: t for mod, t in climbing.items() if t} == {}


def test_no_source_line_holds_a_control_character():
    """A TAB, a form feed or a backspace in a line is an escape written inside a raw string or pasted (a literal
    TAB where `\\t` was meant showed "s = ext fittedslope" on the Efficient attention page)."""
    control = re.compile(r"[\x00-\x09\x0b-\x1f]")
    found = [f"{path.relative_to(ROOT)}:{n}" for path in modules().values()
             for n, line in enumerate(path.read_text().split("\n"), 1) if control.search(line.rstrip("\r"))]
    assert found == []


PRIVATE_STREAMLIT = re.compile(r"^\s*(?:from|import) streamlit\.(?:runtime|web|proto|elements\.lib)\b", re.M)


def test_streamlits_private_modules_are_read_in_one_place():
    """The app reads Streamlit's private modules only in ui/runtime/streamlit_private.py, where each use has a test;
    the benchmark's server and simulated students (bench/) drive Streamlit from outside and may. The pattern must
    find the fenced module's own imports, or this test could not fail."""
    readers = sorted(str(p.relative_to(ROOT)) for p in modules().values()
                     if PRIVATE_STREAMLIT.search(p.read_text()) and p.parts[len(ROOT.parts)] != "bench")
    assert readers == ["ui/runtime/streamlit_private.py"]


# a config's model_type, or a set of architecture names (models.layout's, or one a module keeps for itself)
FAMILY_BRANCH = re.compile(r"\bmodel_type\b|\b(?:BERT_LAYOUT|LLAMA_STYLE|LLAMA_LIKE)\b"
                           r"|\blayout\.(?:LLAMA|BERT|ROTARY)\b|from models\.layout import")


def test_nothing_outside_models_branches_on_an_architectures_name():
    """Only models/ reads a config's model_type (models.layout says which layout a model has): elsewhere a view or an
    experiment asks `layout.bert(m)`, `layout.rotary(m)`, ... . The pattern must find models/'s own reads, or this
    test could not fail."""
    def reads(path: Path) -> bool:
        return bool(FAMILY_BRANCH.search(path.read_text()))

    outside = sorted(str(p.relative_to(ROOT)) for mod, p in modules().items()
                     if reads(p) and not mod.startswith(("models", "bench", "train")))
    assert outside == []
    assert reads(ROOT / "models" / "layout.py") and reads(ROOT / "models" / "internals.py")
    assert reads(ROOT / "models" / "hf" / "encoders.py")  # BERT_LAYOUT = layout.BERT
