"""Inside a head's refusal of a decoder it cannot open (XGLM, GPT-1, TrOCR: attention computed outside transformers'
registry) names only families it does open, and names those read from the capture too (it named Llama, Mistral, Qwen2
and GPT-2 alone, while Qwen3, Gemma 3, OPT and GPT-NeoX open as well)."""
import models

NAMED = {"Llama": "llama", "GPT-2": "gpt2", "Mistral": "mistral", "Qwen3": "qwen3", "Gemma 3": "gemma3_text",
         "OPT": "opt", "GPT-NeoX": "gpt_neox"}


def test_the_refusal_names_decoders_that_open():
    table = models.supported()
    for refused in ("xglm", "openai-gpt", "trocr"):
        said = table.loc[refused, "inside_head"]
        assert said != "yes" and f"{refused} lays its heads out differently" in said, (refused, said)
        assert [name for name in NAMED if name not in said] == [], said
    assert table.loc[list(NAMED.values()), "inside_head"].eq("yes").all()
