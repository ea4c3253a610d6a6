"""The two kinds of error: the user's, and everything else.

A `UserError` carries one sentence a person can act on ("Shorten the text to 512 tokens."): a view shows it as it
is. It is a ValueError, so code outside the app that catches ValueError still catches it; views/ and ui/ catch
UserError only (tests/ui/test_refusals.py), and a ValueError left for our own mistakes (a shape our code got
wrong) is not one. Anything else that reaches the page is a bug: ui.runtime.errors logs it with its traceback under a
short id and, in hosted mode, shows a visitor only a notice with that id to quote. A leaf: every layer may import
it (the lowest import layer, under data/); it imports nothing of the project.

    raise UserError("This hosted demo loads models from the hub only: give a hub id such as bert-base-uncased.")
"""
from __future__ import annotations


class UserError(ValueError):
    """What the request cannot do, in one sentence that says how to fix it; never a programming error."""
