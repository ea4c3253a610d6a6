"""Each head's patching scores are computed once per model and pair, whichever page asks first: the Patching view
(its inline run or its job, ui.patching._run) and the pruning view's patching section (ui.pruning_patching, through
ui.patching.heads) read one entry of the results store."""
from experiments import patching
from ui import patching as ui_patching

ARGS = ("clean text", "corrupt text", " a", " b")


def test_the_patching_view_and_the_pruning_section_share_one_entry(monkeypatch):
    calls = []

    def patch_heads(model, clean, corrupt, answer, wrong, progress=None):
        calls.append((model, clean, corrupt, answer, wrong))
        return f"heads of {model}"

    monkeypatch.setattr(patching, "patch_heads", patch_heads)
    monkeypatch.setattr(patching, "patch_residual", lambda model, *args, progress=None: "residual")
    monkeypatch.setattr(patching, "gradient_scores", lambda model, *args: "gradients")
    key = "stand-in-for-the-shared-entry"  # a model key no other test uses: the store is the server's

    assert ui_patching._run(lambda f, text="": None, "m", key, ARGS) == (
        "heads of m", "residual", "gradients")                                          # the Patching view
    assert ui_patching.heads("m", key, ARGS) == "heads of m"                            # the pruning section
    assert ui_patching.heads("m", key, ("other clean", *ARGS[1:])) == "heads of m"      # another pair: computed
    assert calls == [("m", *ARGS), ("m", "other clean", *ARGS[1:])]
    assert ui_patching.results("m", key, ARGS, rows=1) == ("heads of m", "residual", "gradients")  # kept: no run
    assert len(calls) == 2
