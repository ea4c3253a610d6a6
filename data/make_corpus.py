"""Write data/corpus/python_docs.txt: English sentences from Python's own documentation.

Sources, both shipped with CPython under the PSF License Version 2: the language reference topics
in `pydoc_data.topics` (the text `help("for")` prints) and the docstrings of a fixed list of
standard-library modules. Only prose is kept: indented blocks (code, grammar) are dropped, and a
sentence must start with a capital, end with a full stop, hold 6 to 40 words and be mostly letters.
The sentences are shuffled with a fixed seed so that the first few hundred mix both sources.
Run once with the interpreter named in data/corpus/README.md; the app only reads the output file:

    python -m data.make_corpus
"""
from __future__ import annotations

import importlib
import inspect
import random
import re
import warnings
from pathlib import Path

OUT = Path(__file__).parent / "corpus" / "python_docs.txt"
KEEP = 2000
MODULES = """abc argparse array ast asyncio base64 bisect bz2 calendar cmath cmd codecs collections colorsys
concurrent.futures configparser contextlib contextvars copy csv dataclasses datetime decimal difflib dis doctest
email enum filecmp fnmatch fractions ftplib functools gc getpass gettext glob graphlib gzip hashlib heapq hmac
html.parser http.client imaplib importlib inspect io ipaddress itertools json keyword linecache locale logging lzma
mailbox math mimetypes mmap multiprocessing netrc numbers operator optparse os pathlib pdb pickle pkgutil platform
plistlib poplib pprint pstats queue random re reprlib sched secrets selectors shelve shlex shutil signal smtplib
socket sqlite3 ssl stat statistics string struct subprocess sys tarfile tempfile textwrap threading time timeit
tokenize traceback types typing unicodedata unittest urllib.parse uuid warnings wave weakref webbrowser
xml.dom.minidom xml.etree.ElementTree zipfile zlib""".split()
SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"“])")
NOT_PROSE = re.compile(r"::=|>>>|[=\[\]{}<>\\|@#$%^~]|\(\)|__|\.\.\.|:$")


def prose_blocks(text: str):
    """Paragraphs with no indented line, joined into one line each; headings (underlined) dropped."""
    for block in re.split(r"\n\s*\n", text):
        lines = block.split("\n")
        if any(line.startswith((" ", "\t")) for line in lines) or set(lines[-1].strip()) <= set("*=-^~"):
            continue
        yield " ".join(line.strip() for line in lines)


def sentences(text: str) -> list[str]:
    """Prose sentences of a documentation text that pass the filters in the module docstring."""
    out = []
    for block in prose_blocks(text):
        for s in SPLIT.split(block.replace("*", "")):
            s = re.sub(r"\s+", " ", s).strip()
            if not (6 <= len(s.split()) <= 40 and s.endswith(".") and s[0].isupper()) or NOT_PROSE.search(s):
                continue
            if sum(c.isalpha() or c.isspace() for c in s) / len(s) >= 0.9:
                out.append(s)
    return out


def docstrings(module_name: str) -> list[str]:
    """The module's docstring and those of its public classes and functions."""
    mod = importlib.import_module(module_name)
    docs = [inspect.getdoc(mod) or ""]
    for name, obj in sorted(vars(mod).items()):
        if not name.startswith("_") and getattr(obj, "__module__", None) == mod.__name__ and (
                inspect.isclass(obj) or inspect.isfunction(obj) or inspect.isbuiltin(obj)):
            docs.append(inspect.getdoc(obj) or "")
    return docs


def extract() -> list[str]:
    import pydoc_data.topics

    found = [s for name in sorted(pydoc_data.topics.topics) for s in sentences(pydoc_data.topics.topics[name])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # a few modules warn on import
        found += [s for m in MODULES for doc in docstrings(m) for s in sentences(doc)]
    unique = list(dict.fromkeys(found))
    random.Random(0).shuffle(unique)
    return unique[:KEEP]


if __name__ == "__main__":
    lines = extract()
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(lines)} sentences -> {OUT}")
