"""Every test here starts a real app server and a real Chromium: the slow group (`make test-slow`; CI runs it)."""
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items):
    for item in items:
        if Path(item.fspath).parent == HERE:
            item.add_marker(pytest.mark.slow)
