"""One name per view: views/X.py finds its measurements in experiments/X*.py, its figures in viz/X*.py and its
glue in ui/X*.py, so a newcomer walks from a view to its figure by name. This test fails when a view, or the ui/
glue named after it, imports an experiments/ or viz/ module that carries another view's name (`X` or `X_...`),
unless SHARED lists that module for that view with the reason it is shared. It does not judge modules that carry
no view's name (viz.common, experiments.importance, viz.efficient: Sparse's and Tiled's): those are shared by
name, and their docstrings say who uses them."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VIEWS = sorted(p.stem for p in (ROOT / "views").glob("*.py") if p.stem != "__init__")

# module -> (the other views that may import it, why it is shared rather than split or renamed)
SHARED = {
    "viz.heads": ({"induction", "corpus", "pruning"},
                  "the layer × head grid and one head large: Induction marks its heads on the grid, Corpus draws "
                  "one chosen head, Pruning draws the grid of importances; one drawing, the Heads view's"),
    "experiments.patching": ({"circuits", "pruning"},
                             "patch_heads and the clean/corrupt runs are the Patching view's measurement; Circuits "
                             "scores its task's heads with the same runs before scoring edges, and the pruning lab's "
                             "patching section (ui/pruning_patching.py) ranks heads by it"),
    "viz.patching": ({"pruning"}, "versus_figure, patching scores against gradient importance, is drawn by the "
                                  "Patching view and by the pruning lab's patching section alike"),
    "experiments.circuits": ({"pruning"}, "the pruning lab's circuit section (ui/pruning_circuit.py) keeps the heads "
                                          "of the circuit the Circuits view finds (edge_scores)"),
}


def owner(module: str) -> str | None:
    """The view whose name a module carries: 'viz.kv_cache' -> 'kv_cache', 'ui.kv_cache_hf' -> 'kv_cache',
    'viz.common' -> None. The longest view name wins ('inside_head' over a view named 'inside')."""
    stem = module.split(".")[1] if "." in module else module
    named = [v for v in VIEWS if stem == v or stem.startswith(v + "_")]
    return max(named, key=len) if named else None


def project_imports(source: str) -> set[str]:
    """The experiments/, viz/ and ui/ modules a source imports anywhere (inside functions too), as
    'package.module': 'from viz import sinks as V' and 'from viz.sinks import nll' -> {'viz.sinks'}."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            parts = node.module.split(".")
            names = [f"{node.module}.{a.name}" for a in node.names] if len(parts) == 1 else [node.module]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] in ("experiments", "viz", "ui") and len(parts) > 1:
                dotted = ".".join(parts[:2])
                if (ROOT / parts[0] / f"{parts[1]}.py").exists() or (ROOT / parts[0] / parts[1]).is_dir():
                    found.add(dotted)
    return found


def crossings(view: str, source: str) -> list[tuple[str, str]]:
    """(file, module) for each experiments/ or viz/ module carrying another view's name that `view` reaches: from
    its source, or from the ui/ glue named after it that the source imports (ui/<view>.py, ui/<view>_*.py)."""
    files = {f"views/{view}.py": source}
    for mod in sorted(project_imports(source)):
        path = ROOT / (mod.replace(".", "/") + ".py")
        if mod.startswith("ui.") and owner(mod) == view and path.exists():
            files[f"{mod.replace('.', '/')}.py"] = path.read_text()
    return [(f, m) for f, text in files.items() for m in sorted(project_imports(text))
            if m.split(".")[0] in ("experiments", "viz") and owner(m) not in (None, view)]


def test_the_check_sees_a_view_reaching_another_views_module():
    # a view importing Sinks' figures directly, and a name inside a function
    assert crossings("heads", "from viz import sinks as V\n") == [("views/heads.py", "viz.sinks")]
    assert crossings("bpe", "def f():\n    from experiments.kv_cache import Record\n") == [
        ("views/bpe.py", "experiments.kv_cache")]
    assert crossings("sinks", "from viz import sinks as V\nfrom viz.common import style\n") == []
    # through the view's own glue: the pruning lab's ui/pruning.py draws Heads' grid
    assert ("ui/pruning.py", "viz.heads") in crossings("pruning", "from ui import pruning\n")
    assert owner("ui.kv_cache_hf") == "kv_cache" and owner("viz.common") is None
    assert owner("experiments.inside_head") == "inside_head" and owner("viz.heads") == "heads"


def test_no_view_reaches_a_module_named_after_another_view_unless_it_is_listed_as_shared():
    unexplained, used = [], set()
    for view in VIEWS:
        for file, module in crossings(view, (ROOT / "views" / f"{view}.py").read_text()):
            if view in SHARED.get(module, (set(), ""))[0]:
                used.add((module, view))
            else:
                unexplained.append(f"{file} imports {module}, named after the {owner(module)} view")
    assert not unexplained, ("name the module after the view that uses it, or move what both use to a module "
                             "named for it, or list it in SHARED with why:\n" + "\n".join(unexplained))
    stale = [(m, v) for m, (views, _) in SHARED.items() for v in views if (m, v) not in used]
    assert not stale, f"SHARED lists imports no view makes any more: {stale}"


def test_each_views_own_modules_use_its_name():
    """The modules renamed so a view's files share its name stay so (kv, streaming, heatmaps, seq2seq_tf were the
    old names); no experiments/, viz/ or ui/ module keeps an old name beside the new one; and the glue folded into
    its view (ui/induction.py, ui/bpe.py, ui/positional.py, ui/inside_head.py, ui/kv_cache.py) or merged into one
    (Circuits' pick and task glue, now ui/circuits.py) does not come back."""
    for path in ("experiments/kv_cache.py", "viz/kv_cache.py", "ui/kv_cache_hf.py", "experiments/sinks.py",
                 "viz/sinks.py", "ui/sinks.py", "viz/heads.py", "ui/seq2seq.py"):
        assert (ROOT / path).exists(), path
    for old in ("experiments/kv.py", "viz/kv.py", "ui/kv.py", "ui/kv_hf.py", "experiments/streaming.py",
                "viz/streaming.py", "ui/streaming.py", "viz/heatmaps.py", "ui/seq2seq_tf.py", "ui/induction.py",
                "ui/bpe.py", "ui/positional.py", "ui/inside_head.py", "ui/kv_cache.py", "ui/circuits_pick.py",
                "ui/circuits_task.py"):
        assert not (ROOT / old).exists(), old


# views whose glue other views share, so their walk may be longer: view -> why
SHARED_GLUE = {"corpus": "ui/corpus.py is also the Finder's and the pruning lab's (head_scores, redundancy_hints), "
                         "and picks among three sources, the result folder's in ui/corpus_results.py"}


def walk(view: str, read=lambda path: path.read_text() if path.exists() else "") -> dict[str, int]:
    """The experiments/ and viz/ modules a view reaches, each with the number of project files on the shortest
    walk to it: views/X.py itself, then the ui/ glue named after X (ui/X*.py) it passes through, then the module.
    Shared ui/ helpers (show, state, family, runtime) are not walked: they draw no view's figure.
    walk('heads') -> {'viz.heads': 2, 'experiments.heads': 2, ...}; `read` maps a path to its source."""
    depth, frontier, reached = {f"views.{view}": 1}, [f"views.{view}"], {}
    while frontier:
        following = []
        for module in frontier:
            for name in sorted(project_imports(read(ROOT / (module.replace(".", "/") + ".py")))):
                package = name.split(".")[0]
                if name in depth or (package == "ui" and owner(name) != view):
                    continue
                depth[name] = depth[module] + 1
                if package == "ui":
                    following.append(name)
                else:
                    reached[name] = depth[name]
        frontier = following
    return reached


def test_the_walk_counts_each_file_between_a_view_and_its_figure():
    sources = {"views/pruning.py": "from ui import pruning\nfrom ui import show\n",
               "ui/pruning.py": "from ui import pruning_patching\nfrom viz import pruning\n",
               "ui/pruning_patching.py": "from experiments import patching\n",
               "ui/show.py": "from viz import heads\n"}

    def read(path):
        return sources.get(str(path.relative_to(ROOT)), "")
    assert walk("pruning", read) == {"viz.pruning": 3, "experiments.patching": 4}


def test_each_view_reaches_its_figures_and_measurements_within_three_files():
    """views/X -> ui/X -> viz/X or experiments/X at most (issue: a view's code spanned four files to its figure)."""
    deep = {view: {m: d for m, d in walk(view).items() if d > 3} for view in VIEWS if view not in SHARED_GLUE}
    assert not {v: d for v, d in deep.items() if d} and walk("heads"), deep
    assert all(walk(view) for view in SHARED_GLUE)
