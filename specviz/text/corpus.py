"""Text for the n-gram models: the default corpus, and text a user brings.

The default corpus is the docstrings of the running Python's standard library: it ships
with every Python, so it is there offline, and none of it is ours. The modules' source is
read and parsed with `ast` (never imported, so no module's top-level code runs), the
docstrings of modules, classes and functions are kept in a fixed order, cleaned, and the
result is cached as one text file (see cache_dir). A user's own text goes through the same
cleaning and a few checks: not empty, not binary, not too short, not over MAX_BYTES.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import sys
import sysconfig
import tempfile
import unicodedata
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

MAX_BYTES = 5_000_000  # user text cap (bytes of UTF-8)
MIN_CHARS = 200  # shortest text (after cleaning) a model is trained on
DEFAULT_NAME = "Python standard library docstrings"
CORPUS_VERSION = 1  # bump when the collection or the cleaning changes (new cache file)
SKIP_DIRS = frozenset({"site-packages", "dist-packages", "__pycache__", "test", "tests",
                       "idle_test"})  # test suites hold odd strings on purpose
CONTROL_SHARE_MAX = 0.01  # more control characters than this share: the text is binary


class CorpusError(ValueError):
    """Text that cannot be used as a corpus; the message says why, for the user."""


@dataclass(frozen=True)
class Corpus:
    """Clean text and where it came from."""

    text: str
    name: str
    source: str  # "stdlib" | "user"

    @property
    def n_chars(self) -> int:
        return len(self.text)

    @property
    def n_bytes(self) -> int:
        return len(self.text.encode("utf-8"))

    @property
    def fingerprint(self) -> str:
        """sha1 of the text: a cache key for models trained on it."""
        return hashlib.sha1(self.text.encode("utf-8")).hexdigest()


# ----------------------------------------------------------------------------- cleaning
_SPACES = re.compile(r"[^\S\n]+")  # whitespace other than newlines
_BREAKS = re.compile(r"\n{2,}")  # a blank line: a paragraph break
_CC = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")  # category Cc, less \t \n \r
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028\u2029\ufeff]")


def clean(text: str) -> str:
    """One paragraph per line: NFC, no control characters, runs of spaces as one space,
    lines within a paragraph joined by a space, blank lines as the paragraph break."""
    t = unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))
    t = _CONTROL.sub(" ", t.replace("\t", " "))
    t = "\n".join(line.strip() for line in _SPACES.sub(" ", t).split("\n"))
    paragraphs = (p.replace("\n", " ").strip() for p in _BREAKS.split(t.strip()))
    return "\n".join(p for p in paragraphs if p)


# ----------------------------------------------------------------------------- the stdlib
def stdlib_root() -> Path:
    """The running Python's standard library directory."""
    return Path(sysconfig.get_paths()["stdlib"])


def stdlib_files(root: Path | None = None) -> list[Path]:
    """The standard library's .py files in a fixed (sorted) order, test suites left out."""
    root = Path(root) if root is not None else stdlib_root()
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        out += [Path(dirpath) / f for f in sorted(filenames) if f.endswith(".py")]
    return out


_DOC_NODES = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def docstrings(source: str | bytes) -> list[str]:
    """The docstrings of a module's source, in the order they appear; parsed, never run."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escape sequences in old modules
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, _DOC_NODES):
            doc = ast.get_docstring(node, clean=True)
            if doc and doc.strip():
                found.append((getattr(node, "lineno", 0), doc))
    return [d for _, d in sorted(found, key=lambda t: t[0])]


def collect_docstrings(files: Iterable[Path]) -> list[str]:
    """Cleaned docstrings of the files, each kept once (first occurrence wins)."""
    seen: set[str] = set()
    out = []
    for f in files:
        try:
            source = Path(f).read_bytes()
        except OSError:
            continue
        for d in docstrings(source):
            c = clean(d)
            if c and c not in seen:
                seen.add(c)
                out.append(c)
    return out


# ----------------------------------------------------------------------------- the cache
def cache_dir() -> Path:
    """$SPECVIZ_CACHE_DIR, else $XDG_CACHE_HOME/specviz, else ~/.cache/specviz."""
    if os.environ.get("SPECVIZ_CACHE_DIR"):
        return Path(os.environ["SPECVIZ_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "specviz"


def _cache_name(root: Path) -> str:
    key = f"{CORPUS_VERSION}|{sys.version}|{root.resolve()}"
    return (f"stdlib-docstrings-py{sys.version_info[0]}{sys.version_info[1]}-"
            f"{hashlib.sha1(key.encode()).hexdigest()[:12]}.txt")


def _write_atomic(path: Path, text: str) -> bool:
    """Write via a temporary file and a rename; False when the directory is not writable."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
        return True
    except OSError:
        return False


def default_cache_path(root: Path | None = None, cache: Path | None = None) -> Path:
    """Where default_corpus keeps the corpus of the library at root (cache: a directory,
    None for cache_dir())."""
    root = Path(root) if root is not None else stdlib_root()
    return (Path(cache) if cache is not None else cache_dir()) / _cache_name(root)


def default_corpus(root: Path | None = None, cache: Path | None | bool = None) -> Corpus:
    """The standard library's docstrings, one per line; read from the cache when there.

    cache: a directory, None for cache_dir() (falling back to the system temp directory
    when that is not writable), or False to skip the cache entirely.
    """
    root = Path(root) if root is not None else stdlib_root()
    path = None
    if cache is not False:
        path = default_cache_path(root, None if cache in (None, True) else cache)
        try:
            return Corpus(path.read_text(encoding="utf-8"), DEFAULT_NAME, "stdlib")
        except (OSError, UnicodeDecodeError):
            pass
    docs = collect_docstrings(stdlib_files(root))
    if not docs:
        raise CorpusError(f"no docstrings found under {root}")
    text = "\n".join(docs)
    if path is not None and not _write_atomic(path, text) and cache in (None, True):
        _write_atomic(Path(tempfile.gettempdir()) / "specviz" / path.name, text)
    return Corpus(text, DEFAULT_NAME, "stdlib")


# ----------------------------------------------------------------------------- user text
def user_corpus(data: str | bytes, name: str = "your text") -> Corpus:
    """Validate and clean a user's text (pasted str, or uploaded bytes read as UTF-8)."""
    if not isinstance(data, (str, bytes, bytearray)):
        raise CorpusError(f"expected text or bytes; got {type(data).__name__}")
    raw = data.encode("utf-8", errors="replace") if isinstance(data, str) else bytes(data)
    if len(raw) > MAX_BYTES:
        raise CorpusError(f"The text is {len(raw):,} bytes; the cap is {MAX_BYTES:,} bytes "
                          f"({MAX_BYTES / 1e6:g} MB). Use a shorter excerpt.")
    if isinstance(data, str):
        text = data
        if "\x00" in text:
            raise CorpusError("The text looks binary (it holds NUL characters).")
    elif b"\x00" in raw:
        raise CorpusError("The file looks binary (it holds NUL bytes); upload plain text.")
    else:
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise CorpusError(f"The file is not UTF-8 text (bad byte at offset {exc.start:,})"
                              "; save it as UTF-8 plain text.") from None
    if not text.strip():
        raise CorpusError("The text is empty.")
    control = len(_CC.findall(text))
    if control > CONTROL_SHARE_MAX * len(text):
        raise CorpusError(f"The text looks binary: {control:,} of its {len(text):,} characters "
                          "are control characters.")
    cleaned = clean(text)
    if len(cleaned) < MIN_CHARS:
        raise CorpusError(f"The text is too short: {len(cleaned):,} characters after cleaning; "
                          f"a model needs at least {MIN_CHARS:,}.")
    return Corpus(cleaned, name, "user")
