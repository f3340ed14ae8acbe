"""The corpus: stdlib docstrings parsed (never imported), cached, and user text checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from specviz.text import corpus

MODULE = '''"""Module docstring.

Second paragraph, wrapped
over two lines."""

import os  # never run: the file is parsed, not imported
open("SHOULD_NOT_EXIST", "w").write("side effect")
raise SystemExit("imported!")


class Thing:
    """A thing."""

    def method(self):
        """Do   it.\tNow."""


async def later():
    """Later."""


def nodoc():
    return 1
'''


def _tree(root: Path) -> Path:
    """A fake standard library: one module, a package, a test suite and site-packages."""
    (root / "pkg").mkdir(parents=True)
    (root / "test").mkdir()
    (root / "site-packages").mkdir()
    (root / "mod.py").write_text(MODULE)
    (root / "pkg" / "__init__.py").write_text('"""Package doc."""\n')
    (root / "pkg" / "broken.py").write_text("def (:\n")  # a syntax error is skipped
    (root / "test" / "test_x.py").write_text('"""Test doc."""\n')
    (root / "site-packages" / "third.py").write_text('"""Third party."""\n')
    return root


# ----------------------------------------------------------------------------- cleaning
def test_clean_unwraps_paragraphs_and_drops_control_characters():
    raw = "  One\r\ntwo  three\n\n\n\tFour\x07 five\u200b\n\n"
    assert corpus.clean(raw) == "One two three\nFour five"
    assert corpus.clean("e\u0301") == "\u00e9"  # NFC
    assert corpus.clean(" \n\n \t ") == ""


# ----------------------------------------------------------------------------- the stdlib
def test_docstrings_are_parsed_not_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    docs = corpus.docstrings(MODULE)
    assert docs == ["Module docstring.\n\nSecond paragraph, wrapped\nover two lines.",
                    "A thing.", "Do   it.        Now.", "Later."]  # cleandoc expands tabs
    assert not (tmp_path / "SHOULD_NOT_EXIST").exists()
    assert corpus.docstrings("def (:") == []


def test_stdlib_files_skip_tests_and_site_packages(tmp_path):
    root = _tree(tmp_path / "lib")
    names = [p.relative_to(root).as_posix() for p in corpus.stdlib_files(root)]
    assert names == ["mod.py", "pkg/__init__.py", "pkg/broken.py"]


def test_collect_cleans_and_keeps_each_docstring_once(tmp_path):
    root = _tree(tmp_path / "lib")
    (root / "zcopy.py").write_text('"""A thing."""\n')
    docs = corpus.collect_docstrings(corpus.stdlib_files(root))
    assert docs == ["Module docstring.\nSecond paragraph, wrapped over two lines.",
                    "A thing.", "Do it. Now.", "Later.", "Package doc."]


def test_default_corpus_is_cached_and_read_back(tmp_path, monkeypatch):
    root = _tree(tmp_path / "lib")
    cache = tmp_path / "cache"
    first = corpus.default_corpus(root, cache)
    assert first.source == "stdlib" and first.name == corpus.DEFAULT_NAME
    files = list(cache.iterdir())
    assert len(files) == 1 and files[0].read_text() == first.text

    def boom(files):
        raise AssertionError("the cache was not used")

    monkeypatch.setattr(corpus, "collect_docstrings", boom)
    again = corpus.default_corpus(root, cache)
    assert again.text == first.text and again.fingerprint == first.fingerprint


def test_cache_false_writes_nothing_and_an_unwritable_cache_still_works(tmp_path):
    root = _tree(tmp_path / "lib")
    c = corpus.default_corpus(root, cache=False)
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    d = corpus.default_corpus(root, cache=blocker / "sub")
    assert c.text == d.text and "Package doc." in c.text


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("SPECVIZ_CACHE_DIR", str(tmp_path / "x"))
    assert corpus.cache_dir() == tmp_path / "x"
    monkeypatch.delenv("SPECVIZ_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert corpus.cache_dir() == tmp_path / "xdg" / "specviz"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert corpus.cache_dir() == Path.home() / ".cache" / "specviz"


def test_empty_library_is_an_error(tmp_path):
    (tmp_path / "lib").mkdir()
    with pytest.raises(corpus.CorpusError, match="no docstrings"):
        corpus.default_corpus(tmp_path / "lib", cache=False)


@pytest.mark.slow  # over 2 s on a quiet core (tests/conftest.py)
def test_the_real_default_corpus(tmp_path):
    """Built from this Python's standard library, without any earlier cache."""
    c = corpus.default_corpus(cache=tmp_path)
    assert 300_000 < c.n_chars < corpus.MAX_BYTES
    assert c.text.count("\n") + 1 > 2_000  # paragraphs
    assert "Return" in c.text and "\x00" not in c.text
    assert corpus.default_corpus(cache=tmp_path).text == c.text  # read back from the cache


# ----------------------------------------------------------------------------- user text
GOOD = "Plain text. " * 30


def test_user_text_is_cleaned():
    c = corpus.user_corpus("  " + GOOD + "\r\n\r\nSecond   paragraph.  ")
    assert c.source == "user" and c.text.endswith("\nSecond paragraph.")
    assert c.n_chars >= corpus.MIN_CHARS


def test_uploaded_bytes_are_read_as_utf8_with_or_without_a_bom():
    a = corpus.user_corpus(GOOD.encode("utf-8"), "a.txt")
    b = corpus.user_corpus(b"\xef\xbb\xbf" + GOOD.encode("utf-8"), "b.txt")
    assert a.text == b.text and a.name == "a.txt"


@pytest.mark.parametrize(
    "data, match",
    [
        ("", "empty"),
        ("   \n\t  ", "empty"),
        ("short text", "too short"),
        ("x" * (corpus.MAX_BYTES + 1), "cap"),
        (b"y" * (corpus.MAX_BYTES + 1), "cap"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + b"z" * 300, "binary"),
        ("text\x00" * 100, "binary"),
        (b"\xff\xfe" + b"a\x81b" * 100, "UTF-8"),
        ("\x01\x02\x03 " * 100 + GOOD, "binary"),
        (12345, "expected text"),
    ],
)
def test_bad_user_text_gets_a_clear_error(data, match):
    with pytest.raises(corpus.CorpusError, match=match):
        corpus.user_corpus(data)


def test_size_cap_counts_utf8_bytes():
    wide = "é" * (corpus.MAX_BYTES // 2 + 1)  # fewer characters than the cap, more bytes
    with pytest.raises(corpus.CorpusError, match="cap"):
        corpus.user_corpus(wide)
