"""A refusal is a UserError, a bug is not: views and ui catch UserError (limits.errors), never a bare ValueError, so a
numpy or torch error inside a view reaches ui.runtime.errors.report (logged with its traceback) instead of showing as
a red
sentence; the layers below raise UserError for what the user can fix and keep ValueError for our own mistakes."""
import ast
from pathlib import Path

import numpy as np
import pytest

from analysis.rollout import rollout
from analysis.sparsity import parse_globals
from data import sorting
from limits.errors import UserError
from models import load

ROOT = Path(__file__).resolve().parents[2]

# ValueErrors of Python itself, caught where they are expected, never shown as a refusal: (file, function)
NOT_REFUSALS = {("ui/runtime/cache.py", "_contents"),  # an empty closure cell
                ("ui/classroom/share.py", "_same")}      # a link's number that float() cannot read: not the same value


def _catches_value_error(handler: ast.ExceptHandler) -> bool:
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(n, ast.Name) and n.id == "ValueError" for n in names)


def _value_error_catches() -> dict[str, list[str]]:
    """{file: [the functions (or <module>) with an `except` naming ValueError]} over views/ and ui/."""
    found: dict[str, list[str]] = {}
    for path in sorted([*(ROOT / "views").rglob("*.py"), *(ROOT / "ui").rglob("*.py")]):
        rel = path.relative_to(ROOT).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        owners = {id(h): "<module>" for h in ast.walk(tree) if isinstance(h, ast.ExceptHandler)}
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for h in ast.walk(fn):
                    if isinstance(h, ast.ExceptHandler) and owners.get(id(h)) == "<module>":
                        owners[id(h)] = fn.name  # the outermost function: what a reader would search for
        for h in ast.walk(tree):
            if isinstance(h, ast.ExceptHandler) and h.type is not None and _catches_value_error(h):
                found.setdefault(rel, []).append(owners[id(h)])
    return found


def test_no_view_or_ui_module_catches_a_bare_value_error():
    found = _value_error_catches()
    wrong = {f"{rel}:{fn}" for rel, fns in found.items() for fn in fns
             if (rel, fn) not in NOT_REFUSALS}
    assert wrong == set(), "catch UserError (limits.errors): a ValueError that is not one is a bug to be logged"


def test_the_scan_sees_a_bare_value_error_in_a_tuple_and_alone():
    tree = ast.parse("try:\n    f()\nexcept (OSError, ValueError):\n    pass\nexcept ValueError as e:\n    pass\n"
                     "except UserError:\n    pass\n")
    handlers = [h for h in ast.walk(tree) if isinstance(h, ast.ExceptHandler)]
    assert [_catches_value_error(h) for h in handlers] == [True, True, False]


@pytest.mark.parametrize("refuse", [
    lambda: sorting.encode("abc"),                       # data: the tiny decoder's digits
    lambda: parse_globals("first, last"),                # analysis: the Sparse view's global tokens
    lambda: load("bert").attend(""),                     # models: an empty text
    lambda: load("no-such-model"),                       # models: the registry
])
def test_what_the_user_can_fix_is_a_user_error(refuse):
    with pytest.raises(UserError) as err:
        refuse()
    assert str(err.value).endswith((".", ")")) and str(err.value)[0].isupper()  # one sentence to show as it is


def test_our_own_mistakes_stay_value_errors():
    """A shape our code got wrong is a bug, so it is not caught as a refusal: a ValueError, not a UserError."""
    with pytest.raises(ValueError) as err:
        rollout(np.ones((2, 3, 4), np.float32))
    assert not isinstance(err.value, UserError)
