"""Hosted mode and model loading safety: hub ids only, no path traversal, no remote code, no pickles."""
import json
import pickle
import shutil
from pathlib import Path

import pytest

import limits
import models
from models.hf import minilm_path

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def hosted(monkeypatch):
    monkeypatch.setenv(limits.ENV, "1")


def test_hosted_is_read_from_the_environment_each_time(monkeypatch):
    monkeypatch.delenv(limits.ENV, raising=False)
    assert limits.current() is limits.LAPTOP and not limits.hosted()
    for value in ("1", "true", "Yes", " on "):
        monkeypatch.setenv(limits.ENV, value)
        assert limits.current() is limits.HOSTED
    monkeypatch.setenv(limits.ENV, "0")
    assert limits.current() is limits.LAPTOP


def test_hosted_caps_are_tighter_everywhere():
    for cap in ("text_chars", "new_tokens", "beam_width", "flow_tokens", "bpe_corpus_bytes",
                "bpe_extra_vocab", "pruning_sentences", "pruning_forward_passes", "attention_cost_n", "corpus_bytes",
                "corpus_sentences", "corpus_sentence_chars", "corpus_qk_tokens", "corpus_cache_bytes", "pruning_rows",
                "pruning_upload_bytes", "pruning_row_tokens", "image_bytes", "image_pixels",
                "precision_items", "precision_runs", "precision_batch", "precision_tokens",
                "request_gflop", "decoder_bytes", "kept_decoder_bytes", "bertviz_lines", "heavy_jobs",
                "model_cache_bytes", "result_cache_bytes",
                "export_bytes", "stream_tokens"):
        assert 0 < getattr(limits.HOSTED, cap) < getattr(limits.LAPTOP, cap), cap
    assert limits.LAPTOP.local_models and not limits.HOSTED.local_models


@pytest.mark.parametrize("spec", [
    "../../etc/passwd", "/etc", "./nope", "~/models", "a/../b", "..",
    str(Path(minilm_path())), "C:\\Windows", "owner/name/extra", "%2e%2e/x", "name\x00", ".hidden", "a b",
])
def test_hosted_refuses_paths_as_model_names(hosted, spec):
    with pytest.raises(ValueError, match="hub only"):
        models.load("hf:" + spec)


@pytest.mark.parametrize("spec", ["bert-base-uncased", "google/bert_uncased_L-2_H-128_A-2", "a.b_c-d/E.f"])
def test_hosted_lets_hub_ids_through(hosted, spec):
    # the answer depends on the text alone: "models" is a folder in the repository root, "modelz" is nothing
    assert limits.check_model_spec("models") == "models" and limits.check_model_spec("modelz") == "modelz"
    assert limits.check_model_spec(spec) == spec


def test_hosted_still_loads_the_built_in_encoder(hosted):
    assert models.load("bert").attend("Still here.").tokens[1:-1] == ["still", "here", "."]


def test_hosted_refusal_is_the_same_whether_a_path_exists_or_not(hosted, monkeypatch):
    # a path oracle would tell a student which folders exist on the server
    monkeypatch.chdir(ROOT)
    assert (ROOT / "models" / "weights").is_dir()
    messages = []
    for spec in ("models", "modelz", "models/weights", "models/weightz", "tests", "testz"):
        with pytest.raises(ValueError) as err:
            models.load("hf:" + spec)
        messages.append(str(err.value).replace(spec, "<id>"))
    assert len(set(messages)) == 1, messages


def test_hosted_hub_id_offline_is_one_sentence(hosted):
    with pytest.raises(ValueError, match="a hosted server never downloads") as err:
        models.load("hf:nobody/nothing-here")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("name", ["../models/hf", "models.hf", "os", "../../etc/passwd", "bert/../toy"])
def test_registry_names_never_become_module_or_file_paths(name):
    with pytest.raises(ValueError, match="Unknown model"):
        models.load(name)


def _tokenizer_files(folder: Path) -> None:
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        shutil.copy(Path(minilm_path()) / name, folder / name)


def test_remote_code_in_a_model_folder_never_runs(tmp_path):
    marker = tmp_path / "ran"
    folder = tmp_path / "evil"
    folder.mkdir()
    _tokenizer_files(folder)
    config = json.loads((Path(minilm_path()) / "config.json").read_text())
    config["auto_map"] = {"AutoConfig": "evil.EvilConfig", "AutoModel": "evil.EvilModel",
                          "AutoTokenizer": ["evil.EvilTokenizer", None]}
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    shutil.copy(Path(minilm_path()) / "model.safetensors", folder / "model.safetensors")
    try:
        models.load(f"hf:{folder}")
    except ValueError:
        pass  # refusing is fine; running evil.py is not
    assert not marker.exists()


class _Boom:
    """Unpickling this creates a file: proof that a pickle was loaded."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return open, (self.path, "w")


def test_pickled_weights_are_never_loaded(tmp_path):
    marker = tmp_path / "unpickled"
    folder = tmp_path / "pickled"
    folder.mkdir()
    _tokenizer_files(folder)
    shutil.copy(Path(minilm_path()) / "config.json", folder / "config.json")
    (folder / "pytorch_model.bin").write_bytes(pickle.dumps({"weights": _Boom(str(marker))}))
    with pytest.raises(ValueError, match="safetensors"):
        models.load(f"hf:{folder}")
    assert not marker.exists()


def test_corrupt_safetensors_is_one_sentence(tmp_path):
    folder = tmp_path / "corrupt"
    folder.mkdir()
    _tokenizer_files(folder)
    shutil.copy(Path(minilm_path()) / "config.json", folder / "config.json")
    (folder / "model.safetensors").write_bytes(b"\xff" * 64)
    with pytest.raises(ValueError, match="Could not load"):
        models.load(f"hf:{folder}")


def test_server_config_is_headless_without_watcher_or_usage_stats():
    import tomllib

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["headless"] is True and config["server"]["fileWatcherType"] == "none"
    assert config["browser"]["gatherUsageStats"] is False
    assert config["server"]["maxUploadSize"] * 1e6 >= max(limits.LAPTOP.bpe_corpus_bytes, limits.LAPTOP.corpus_bytes)
