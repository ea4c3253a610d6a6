"""When the network is used: only for a hub id that is not cached, never in hosted mode, never for a folder."""
import socket

import pytest

import limits
from models.hf import reach


@pytest.fixture
def no_network(monkeypatch):
    tried = []

    def connect(*args, **kwargs):
        tried.append(args)
        raise OSError("no network in this test")

    monkeypatch.setattr(socket, "create_connection", connect)
    return tried


def test_hosted_mode_never_tries_the_network(monkeypatch, no_network):
    monkeypatch.setenv(limits.ENV, "1")
    assert not reach._hub_reachable()
    with pytest.raises(ValueError, match="a hosted server never downloads"):
        reach.hub_folder("someone/not-cached-model-xyz")
    assert no_network == []


def test_a_folder_never_tries_the_network(monkeypatch, no_network, tmp_path):
    monkeypatch.setenv(limits.ENV, "0")
    assert reach.where(str(tmp_path)) == (str(tmp_path), True)
    assert no_network == []


def test_a_hub_id_not_cached_is_the_one_case_that_asks_the_hub(monkeypatch, no_network):
    monkeypatch.setenv(limits.ENV, "0")
    monkeypatch.setattr(reach, "_cached", lambda spec: False)
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", False)
    with pytest.raises(ValueError, match="cannot be reached"):
        reach.where("someone/not-cached-model-xyz")
    assert len(no_network) == 1
