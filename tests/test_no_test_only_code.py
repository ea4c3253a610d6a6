"""No function in the app's code is called by tests alone: a function only tests reach is either dead (remove it),
the one implementation of something the app does a second way (use it), or an independent reference a test checks
against (it belongs in tests/, beside the test). The public API, whose callers are notebooks and scripts outside
the repository, is the short allowlist below.

What it does: reads every module with `ast`, lists the top-level functions and the methods of top-level classes of
the app's packages, and resolves each name the code reads (a name, `module.name`, `from module import name`, a
re-export through a package's `__init__`, a string equal to the name, a method called as `x.name`) to the
definitions it may mean. What it does not: follow calls made through a computed name (`getattr(m, f"{x}_y")`);
a method is matched by its name alone, so a method sharing its name with anything the app reads counts as used."""
from __future__ import annotations

import ast
import functools
import json
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
APP = ("models", "analysis", "experiments", "viz", "ui", "views", "api", "data", "limits", "classroom")
# the code that calls the app from outside tests: the frame, the command lines, the benchmark, training, the notebook
CALLERS = APP + ("app.py", "bench", "train", "prune", "corpus_heads", "docs")

# The contract in DESIGN.md and api/: its callers are outside the repository.
PUBLIC = {
    "models.load", "models.supported", "models.available",
    "models.hf.encoders.Encoder.predicts", "models.hf.decoders.Decoder.predicts",  # models.load("hf:...").predicts
    "models.hf.encdec.EncoderDecoder.predicts", "models.hf.vision.Vision.predicts",
    "analysis.rollout.rollout", "analysis.flow.attention_flow", "analysis.positional.sinusoidal",
    "analysis.bpe.train_bpe", "analysis.bpe.merge_steps", "analysis.kv.kv_bytes_per_token",
    "analysis.efficient.tiled_attention", "analysis.efficient.sparse_attention",
    "analysis.sampling.next_token_probs",
    "experiments.logit_lens.decompose", "experiments.attribution.attribute", "experiments.attribution.faithfulness",
    "experiments.patching.patch_heads", "experiments.circuits.edge_scores", "experiments.circuits.faithfulness",
}
PUBLIC_PACKAGES = ("api.", "classroom.store.ClassStore.")  # every function of api/ and ClassStore's methods
# called by Python or a library through a protocol, never by name: IPython shows a View, logging filters a record;
# or shown, not run: the BPE view prints analysis.bpe_teaching's source for the reader (tests check it trains as
# the tokenizers library does)
PROTOCOL = {"api.show.View._repr_mimebundle_", "models._TorchaoImportNoise.filter", "analysis.bpe_teaching.train"}
# test-only today, each for a reason that is not this test's to settle: the test fails when one is no longer
# test-only, so the list cannot go stale
PENDING: dict[str, str] = {}  # name -> why


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def _sources() -> dict[str, tuple[Path, ast.Module]]:
    """module -> (path, tree) for every Python file the app and its callers hold, the notebooks' code cells
    included (as module 'docs.<notebook>')."""
    found = {}
    for top in CALLERS:
        base = ROOT / top
        for path in ([base] if base.suffix == ".py" else sorted(base.rglob("*.py"))):
            found[_module(path)] = (path, ast.parse(path.read_text()))
    for book in sorted((ROOT / "docs").rglob("*.ipynb")):
        cells = json.loads(book.read_text())["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        lines = [line for line in code.split("\n") if not line.lstrip().startswith(("%", "!"))]
        found[f"docs.{book.stem}"] = (book, ast.parse("\n".join(lines)))
    return found


def definitions(sources) -> dict[str, tuple[str, int, int, bool]]:
    """'models.gates.patched' -> (module, first line, last line, is a method), for the top-level functions and the
    methods of top-level classes (dunder methods left out: Python calls them) of the app's packages."""
    defs = {}
    for mod, (_path, tree) in sources.items():
        if mod.split(".")[0] not in APP:
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name != "__getattr__":
                defs[f"{mod}.{node.name}"] = (mod, node.lineno, node.end_lineno, False)
            elif isinstance(node, ast.ClassDef):
                for sub in node.body:
                    if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) and not sub.name.startswith("__"):
                        defs[f"{mod}.{node.name}.{sub.name}"] = (mod, sub.lineno, sub.end_lineno, True)
    return defs


def _bindings(mod: str, path: Path, tree: ast.Module) -> dict[str, str]:
    """local name -> the dotted thing it is bound to by the file's imports (anywhere in the file):
    'from models import gates' -> {'gates': 'models.gates'}; 'import numpy as np' -> {'np': 'numpy'}."""
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            named = _module_named(node.value)  # cache = sys.modules.get("ui.runtime.cache")
            if named:
                bound[node.targets[0].id] = named
        elif isinstance(node, ast.Import):
            for a in node.names:
                bound[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = _from(node, mod, path)
            for a in node.names:
                bound[a.asname or a.name] = f"{base}.{a.name}"
    return bound


def _from(node: ast.ImportFrom, mod: str, path: Path) -> str:
    """The module a `from ... import` reads, relative imports resolved against `mod`'s package."""
    if not node.level:
        return node.module or ""
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    up = package.split(".")[:len(package.split(".")) - node.level + 1]
    return ".".join(up + ([node.module] if node.module else []))


def _module_named(value) -> str | None:
    """'ui.runtime.cache' for sys.modules.get("ui.runtime.cache"), sys.modules["ui.runtime.cache"] or
    importlib.import_module("ui.runtime.cache"); else None."""
    if isinstance(value, ast.Call) and value.args and isinstance(value.args[0], ast.Constant):
        called = ast.unparse(value.func)
        if called in ("sys.modules.get", "importlib.import_module", "import_module"):
            return str(value.args[0].value)
    if isinstance(value, ast.Subscript) and ast.unparse(value.value) == "sys.modules" and \
            isinstance(value.slice, ast.Constant):
        return str(value.slice.value)
    return None


def references(sources, defs) -> dict[str, list[tuple[str, int]]]:
    """definition -> [(module, line)] of every place outside its own body that may read it."""
    by_name = defaultdict(set)
    for full in defs:
        by_name[full.rpartition(".")[2]].add(full)
    bindings = {mod: _bindings(mod, path, tree) for mod, (path, tree) in sources.items()}

    def resolve(dotted: str, seen=()) -> str:
        """Follow re-exports: 'models.load' -> 'models.registry.load' when models/__init__ imports it."""
        head, _, name = dotted.rpartition(".")
        if head in bindings and name in bindings[head] and dotted not in seen:
            return resolve(bindings[head][name], seen + (dotted,))
        return dotted

    def dotted(node) -> str | None:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute):
            inner = dotted(node.value)
            return f"{inner}.{node.attr}" if inner else None
        return None

    homes = {home for home, *_ in defs.values()}
    reachable = {mod: {mod} | {h for target in bound.values() for h in homes
                               if target == h or target.startswith(h + ".") or h.startswith(target + ".")}
                 for mod, bound in bindings.items()}
    found = defaultdict(list)
    for mod, (_path, tree) in sources.items():
        bound = bindings[mod]
        for node in ast.walk(tree):
            targets = set()
            if isinstance(node, ast.Name):
                name = node.id
                targets = {resolve(bound[name]) if name in bound else f"{mod}.{name}"}
            elif isinstance(node, ast.Attribute):
                chain = dotted(node)
                first = chain.split(".")[0] if chain else None
                if first in bound:
                    targets = {resolve(bound[first] + chain[len(first):])}
                if not (targets & defs.keys()):  # a method, or an attribute of an object: by name
                    targets = {d for d in by_name[node.attr] if defs[d][3]} | targets
            elif isinstance(node, ast.ImportFrom):  # this import's own module: a file may import a name twice
                base = _from(node, mod, sources[mod][0])
                targets = {resolve(f"{base}.{a.name}") for a in node.names}
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
                # a name looked up by its string (a registry, getattr): in the defining module, or in one that
                # imports it
                targets = {d for d in by_name[node.value] if defs[d][0] in reachable[mod]}
            for target in targets & defs.keys():
                home, first, last, _ = defs[target]
                if not (home == mod and first <= getattr(node, "lineno", 0) <= last):
                    found[target].append((mod, getattr(node, "lineno", 0)))
    return found


def only_tests_call(sources=None) -> list[str]:
    """The app's functions that only tests call, outside the allowlist: the app's callers never read them, and a
    test does (a function nobody reads at all is left to ruff's and the reviewer's eyes)."""
    sources = sources or _sources()
    defs = definitions(sources)
    used = references(sources, defs)
    tests = _sources_of_tests()
    test_names = {n.id for t in tests for n in ast.walk(t) if isinstance(n, ast.Name)} | \
                 {n.attr for t in tests for n in ast.walk(t) if isinstance(n, ast.Attribute)} | \
                 {a.name for t in tests for n in ast.walk(t) if isinstance(n, ast.ImportFrom) for a in n.names}
    return sorted(d for d in defs if d not in used and d.rpartition(".")[2] in test_names
                  and d not in PUBLIC | PROTOCOL and not d.startswith(PUBLIC_PACKAGES))


@functools.cache
def _sources_of_tests() -> list[ast.Module]:
    return [ast.parse(p.read_text()) for p in sorted((ROOT / "tests").rglob("*.py"))]


@pytest.mark.slow  # every module of the app and the tests read: ~6 s
def test_no_function_of_the_app_is_called_by_tests_alone():
    found = only_tests_call()
    assert [d for d in found if d not in PENDING] == []
    assert sorted(set(PENDING) - set(found)) == [], "no longer test-only: take it off PENDING"


@pytest.mark.slow  # the finder run on a small tree: ~6 s
def test_the_finder_sees_a_test_only_function_and_a_used_one():
    """A function only a test calls is found; one the app calls, through a re-export or a module taken from
    sys.modules, is not."""
    sources = dict(_sources())
    sources["models.made_up"] = (ROOT / "models" / "made_up.py",
                                 ast.parse("def helper_only_tests_call():\n    return 1\n"))
    assert "models.made_up.helper_only_tests_call" not in only_tests_call(sources), "no test names it: not test-only"
    sources["models.made_up"] = (ROOT / "models" / "made_up.py", ast.parse("def patch_index():\n    return 1\n"))
    found = only_tests_call(sources)
    assert "models.made_up.patch_index" in found, "a test calls a patch_index; nothing in the app reads this one"
    assert "analysis.rollout.rollout" not in found and "models.load" not in found
    assert "ui.runtime.cache.stats" not in found, "bench/serve_stats.py reads it through sys.modules"


def test_the_allowlists_name_only_what_exists():
    defs = definitions(_sources())
    assert sorted((PUBLIC | PROTOCOL | set(PENDING)) - defs.keys()) == []
