"""Where a model spec points: a folder on this machine, a hub id already cached, or a hub id the hub answers for.

The only door to the network is _hub_reachable (one quick connect, never in hosted mode or with HF_HUB_OFFLINE). It
does not read configs or load weights: models.hf.common does, from what where() returns.

    spec, local = where("./my-llama")            # ValueError with one sentence if it cannot be reached
"""
from __future__ import annotations

import os

import limits
from limits.errors import UserError


def _cached(spec: str) -> bool:
    """True when the hub id is already in the local cache (then no network is needed)."""
    from huggingface_hub import try_to_load_from_cache

    try:
        return isinstance(try_to_load_from_cache(spec, "config.json"), str)
    except ValueError:  # not a valid repo id
        return False


def _hub_reachable(timeout_s: float = 2.0) -> bool:
    """One quick TCP connect to the hub instead of transformers' minute of retries. The only door to the network:
    False, without trying, in hosted mode (hub ids come from the server's hub cache only) or with HF_HUB_OFFLINE."""
    import socket
    from urllib.parse import urlparse

    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE or limits.current().hosted:
        return False
    host = urlparse(constants.ENDPOINT).hostname or ""
    try:
        socket.create_connection((host, 443), timeout=timeout_s).close()
        return True
    except OSError:
        return False


def _a_path(spec: str) -> bool:
    """Whether a spec can only be a path, never a hub id ('owner/name' or 'name'): absolute or relative to here or home,
    or of more than two parts."""
    return spec.startswith(("/", ".", "~")) or "\\" in spec or spec.count("/") > 1 or ":" in spec


def where(spec: str) -> tuple[str, bool]:
    """(spec, is a local folder), or ValueError when there is nothing to load from."""
    spec = (spec or "").strip()
    if not spec:
        raise UserError("Give a folder or hub id after 'hf:', e.g. hf:bert-base-uncased.")
    local = os.path.isdir(spec)
    if not local and _a_path(spec):
        raise UserError(f"There is no folder '{spec}' on this machine: check the path (a model's folder holds its "
                        "config.json, its tokenizer and its .safetensors weights).")
    if not local and not _cached(spec) and not _hub_reachable():
        raise UserError(
            f"'{spec}' is not a local folder and the model hub cannot be reached: "
            "connect to the network, give a folder path, or use a built-in model such as 'bert'."
        )
    return spec, local


def hub_folder(spec: str) -> str:
    """Hosted mode: the local snapshot folder of hub id `spec` in the server's hub cache (never fetched: hosted
    mode never uses the network), never a path on the server's disk; ValueError with the same sentence whatever
    exists there."""
    from huggingface_hub import snapshot_download

    try:
        return snapshot_download(spec, allow_patterns=["*.json", "*.safetensors", "*.txt", "*.model"],
                                 local_files_only=not _hub_reachable())
    except Exception as err:  # offline and not cached, unknown id, refused by the hub: one sentence for all
        raise UserError(f"'{spec}' is not in this server's model cache (a hosted server never downloads): use the "
                        "built-in 'bert'.") from err
