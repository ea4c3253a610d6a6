"""The Python documentation as plain English text: the corpus the built-in `gpt` models learn from.

Two parts, both taken from CPython 3.11.7 and shipped in data/corpus/ (README.md there states source
and licence), so training and tests read the same text whatever Python runs them:
- `topics()`: the language reference as `pydoc` shows it (`pydoc_data.topics`; 78 distinct topics,
  465,000 characters). `split(name)` holds out every tenth topic in alphabetical order (assert,
  bitwise, comparisons, else, identifiers, numeric-types, specialattrs, typesmethods: about 6 % of
  its characters);
- `docstrings()`: the standard library's docstrings of 200 characters or more (modules, classes,
  functions; not tests, IDLE, lib2to3 or the demos), about 1.2 million characters, all for training.
`documents(name)` gives the documents of a split. It does not tokenise; train/gpt.py does.
`python -m data.python_reference` rewrites both files from the running Python.
"""
from __future__ import annotations

import ast
import json
import sys
from functools import lru_cache
from pathlib import Path

from limits.errors import UserError

FOLDER = Path(__file__).parent / "corpus"
TOPICS, DOCSTRINGS = FOLDER / "python_reference.json", FOLDER / "python_docstrings.json"
SPLITS = ("train", "test")
HELD_OUT_EVERY = 10
MIN_DOCSTRING = 200
SKIP = ("test", "tests", "idlelib", "lib2to3", "turtledemo", "ensurepip", "pydoc_data", "site-packages")


@lru_cache(maxsize=1)
def topics() -> dict[str, str]:
    """{'assert': 'The "assert" statement\\n*****...', ...} in alphabetical order, each text once.

    pydoc files one text under two names ('else' and 'if'): it is kept under the first name only, so
    a held-out topic can never also be a training topic.
    """
    seen, out = set(), {}
    for name, text in json.loads(TOPICS.read_text(encoding="utf-8")).items():
        if text not in seen:
            seen.add(text)
            out[name] = text
    return out


@lru_cache(maxsize=1)
def docstrings() -> dict[str, str]:
    """{'argparse': 'Command-line parsing library...', 'argparse.ArgumentParser.add_argument': ...}"""
    return json.loads(DOCSTRINGS.read_text(encoding="utf-8"))


def split(name: str) -> dict[str, str]:
    """The reference topics of split 'train' or 'test' (every tenth topic, alphabetically, from the first)."""
    if name not in SPLITS:
        raise UserError(f"Unknown split '{name}': choose one of {', '.join(SPLITS)}.")
    held_out = name == "test"
    return {k: v for i, (k, v) in enumerate(topics().items()) if (i % HELD_OUT_EVERY == 0) == held_out}


def documents(name: str) -> list[str]:
    """Training documents (reference topics, then docstrings) or held-out ones (reference topics only)."""
    return list(split(name).values()) + (list(docstrings().values()) if name == "train" else [])


def _docstrings_of(tree: ast.AST, prefix: str) -> dict[str, str]:
    """Docstrings of a module and everything defined in it: {'mod': ..., 'mod.Class.method': ...}"""
    found = {}
    doc = ast.get_docstring(tree)
    if doc and len(doc) >= MIN_DOCSTRING:
        found[prefix] = doc
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            found |= _docstrings_of(node, f"{prefix}.{node.name}")
    return found


def rebuild(stdlib: Path) -> None:
    """Write both corpus files from this Python: pydoc_data.topics and the docstrings under `stdlib`."""
    import pydoc_data.topics

    TOPICS.write_text(json.dumps(dict(sorted(pydoc_data.topics.topics.items())), indent=0, ensure_ascii=False),
                      encoding="utf-8")
    found, seen = {}, set()
    for path in sorted(stdlib.rglob("*.py")):
        parts = path.relative_to(stdlib).with_suffix("").parts
        if any(p in SKIP for p in parts):
            continue
        module = ".".join(parts).removesuffix(".__init__")
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for name, doc in _docstrings_of(tree, module).items():
            if doc not in seen:
                seen.add(doc)
                found[name] = doc
    DOCSTRINGS.write_text(json.dumps(found, indent=0, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    import sysconfig

    print(sys.version)
    rebuild(Path(sysconfig.get_paths()["stdlib"]))
    print(f"{len(topics())} topics, {len(docstrings())} docstrings, "
          f"{sum(map(len, docstrings().values())):,} characters of docstrings")
