"""n-gram models: the tokeniser, the counts, and Kneser-Ney rows against a brute-force
reference written from the formulas with dicts."""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np
import pytest

from specviz.text import corpus, ngram

TEXT = ("the cat sat on the mat. the dog sat on the log. a cat and a dog met on the mat, "
        "and the cat ran. the dog ran after the cat; the cat sat on the dog's mat again.\n"
        "then the mat was empty and the log was empty too.")


@pytest.fixture(scope="module")
def small_text() -> str:
    """A few stdlib modules' docstrings: real text, about 40 kB."""
    root = corpus.stdlib_root()
    files = [root / m for m in ("textwrap.py", "functools.py", "collections/__init__.py",
                                "pathlib.py", "shutil.py")]
    return "\n".join(corpus.collect_docstrings(files))


# ----------------------------------------------------------------------------- reference
def _discount(counts) -> float:
    n1 = sum(1 for c in counts if c == 1)
    n2 = sum(1 for c in counts if c == 2)
    return 0.5 if n1 + n2 == 0 else min(0.9, max(0.1, n1 / (n1 + 2 * n2)))


def kn_reference(ids: list[int], V: int, order: int, context: list[int]) -> np.ndarray:
    """Interpolated Kneser-Ney (Chen & Goodman 1999) from dicts, one level at a time."""
    N = len(ids)
    raw = [defaultdict(Counter) for _ in range(order)]  # raw[L][h][w], h of L tokens
    left = [defaultdict(set) for _ in range(order)]  # left[L][(h, w)] = tokens seen before h w
    for L in range(order):
        for i in range(L, N):
            h = tuple(ids[i - L:i])
            raw[L][h][ids[i]] += 1
            if i - L - 1 >= 0:
                left[L][(h, ids[i])].add(ids[i - L - 1])
    cont = [defaultdict(Counter) for _ in range(order)]
    for L in range(order):
        for (h, w), s in left[L].items():
            cont[L][h][w] = len(s)
    p = np.full(V, 1.0 / V)
    top = order - 1
    for L in range(order):
        if L > len(context):
            break
        h = tuple(context[len(context) - L:]) if L else ()
        if h not in raw[L]:
            break
        table = raw[L] if L == top else cont[L]
        D = _discount([c for hh in table.values() for c in hh.values() if c > 0])
        cnt = table[h]
        total = sum(cnt.values())
        if total == 0:
            continue
        nnz = sum(1 for c in cnt.values() if c > 0)
        new = p * (D * nnz / total)
        for w, c in cnt.items():
            new[w] += max(c - D, 0.0) / total
        p = new
    return p / p.sum()


# ----------------------------------------------------------------------------- tokeniser
def test_char_tokenizer_orders_by_frequency_and_round_trips():
    tok = ngram.build_tokenizer("abracadabra", "char")
    assert tok.vocab == ("a", "b", "r", "c", "d", ngram.UNK)
    ids = tok.encode("cadabra")
    assert tok.decode(ids) == "cadabra"
    assert list(tok.encode("az")) == [0, tok.unk]  # unseen character -> UNK
    assert tok.decode(tok.encode("az")) == "a\ufffd"


def test_word_tokenizer_splits_punctuation_and_glues_it_back():
    tok = ngram.build_tokenizer(TEXT + " (the dog)", "word")
    ids = tok.encode("the cat sat on the mat, (the dog).")
    assert [tok.vocab[i] for i in ids][:4] == ["the", "cat", "sat", "on"]
    assert tok.decode(ids) == "the cat sat on the mat, (the dog)."
    assert "".join(tok.pieces(ids)) == tok.decode(ids)
    assert tok.pieces(tok.encode("cat"), after=tok.encode("the")[0]) == [" cat"]
    assert tok.vocab[tok.encode("zebra")[0]] == ngram.UNK


def test_display_names_make_whitespace_visible():
    tok = ngram.build_tokenizer("a b\nc\td", "char")
    assert tok.display(tok.encode(" ")[0]) == "␣"
    assert tok.display(tok.encode("\n")[0]) == "⏎"
    assert tok.display(tok.encode("\t")[0]) == "⇥"
    assert tok.names[tok.unk] == ngram.UNK


def test_vocabulary_cap_keeps_the_most_frequent():
    tok = ngram.build_tokenizer(TEXT, "word", max_vocab=5)
    assert tok.V == 5 and tok.vocab[0] == "the" and tok.vocab[-1] == ngram.UNK
    assert (tok.encode(TEXT) == tok.unk).sum() > 0


@pytest.mark.parametrize("bad", [dict(level="byte"), dict(level="char", max_vocab=1)])
def test_tokenizer_rejects_bad_arguments(bad):
    with pytest.raises(ValueError):
        ngram.build_tokenizer(TEXT, **bad)


# ----------------------------------------------------------------------------- counts
def test_discount_is_n1_over_n1_plus_2_n2_clipped():
    assert ngram.discount(np.array([1, 1, 1, 2, 5])) == pytest.approx(3 / 5)
    assert ngram.discount(np.array([1, 1, 1, 1])) == 0.9  # no twice-seen n-gram: clipped
    assert ngram.discount(np.array([2, 2, 3])) == 0.1
    assert ngram.discount(np.array([4, 7])) == 0.5


def test_counts_by_hand():
    cs = ngram.train("abab", "char", 2)
    a, b = cs.tokenizer.encode("ab")
    lv0, lv1 = cs.levels
    assert dict(zip(lv0.w.tolist(), lv0.raw.tolist(), strict=True)) == {a: 2, b: 2}
    # continuation counts: 'a' follows b once (pos 2), 'b' follows a (pos 1, 3): one type each
    assert dict(zip(lv0.w.tolist(), lv0.kn.tolist(), strict=True)) == {a: 1, b: 1}
    assert lv1.n_contexts == 2 and len(lv1.w) == 2  # a -> b, b -> a


@pytest.fixture(params=["direct", "trie"])
def keying(request, monkeypatch):
    """Both ways of keying contexts: the context written in base 2^bits, or a trie of ranks."""
    if request.param == "trie":
        monkeypatch.setattr(ngram, "key_base", lambda V, max_order: (V, False))
    return request.param


@pytest.mark.parametrize("level, order", [("char", 1), ("char", 2), ("char", 3), ("char", 4),
                                          ("word", 1), ("word", 2), ("word", 3)])
def test_rows_match_the_brute_force_reference(level, order, keying):
    cs = ngram.train(TEXT, level, 4)
    assert cs.direct == (keying == "direct")
    ids = cs.tokenizer.encode(TEXT).tolist()
    m = cs.model(order)
    rng = np.random.default_rng(order)
    contexts = [ids[:i] for i in rng.integers(1, len(ids), 12)]
    contexts += [[cs.tokenizer.unk], [], ids[:1], [ids[3], cs.tokenizer.unk, ids[5]]]
    for ctx in contexts:
        np.testing.assert_allclose(m.row(ctx), kn_reference(ids, cs.V, order, ctx),
                                   rtol=1e-10, atol=1e-14)


def test_both_keyings_give_the_same_rows(small_text, monkeypatch):
    direct = ngram.train(small_text, "char", 6)
    monkeypatch.setattr(ngram, "key_base", lambda V, max_order: (V, False))
    trie = ngram.train(small_text, "char", 6)
    assert direct.direct and not trie.direct
    ids = direct.tokenizer.encode(small_text)
    for i in (1, 7, 300, 5_000, len(ids) - 1):
        for n in (1, 3, 6):
            np.testing.assert_array_equal(direct.model(n).row(ids[:i]), trie.model(n).row(ids[:i]))
    for a, b in zip(direct.levels, trie.levels, strict=True):
        assert a.n_contexts == b.n_contexts and np.array_equal(a.kn, b.kn)


def test_long_orders_fall_back_to_the_trie():
    assert ngram.key_base(170, 6) == (256, True)
    assert ngram.key_base(50_000, 3) == (65_536, True)
    assert ngram.key_base(50_000, 5) == (50_000, False)  # 5 x 16 bits do not fit in 62


def test_rows_are_laws_with_full_support(small_text):
    for level, order in (("char", 6), ("word", 3)):
        cs = ngram.train(small_text, level, order)
        ids = cs.tokenizer.encode(small_text)
        m = cs.model(order)
        for i in (1, 50, 500, len(ids) - 1):
            p = m.row(ids[:i])
            assert p.shape == (cs.V,)
            assert abs(p.sum() - 1.0) < 1e-12 and p.min() > 0


def test_higher_orders_fit_the_training_text_better(small_text):
    cs = ngram.train(small_text, "char", 5)
    ids = cs.tokenizer.encode(small_text[:3000])
    ll = [sum(np.log(cs.model(n).row(ids[:i])[ids[i]]) for i in range(5, len(ids)))
          for n in range(1, 6)]  # log-likelihood of the text after its first 5 tokens
    assert all(a < b for a, b in zip(ll, ll[1:], strict=False))


def test_a_seen_context_prefers_its_continuation(small_text):
    cs = ngram.train(small_text, "word", 3)
    tok = cs.tokenizer
    p = cs.model(3).row(tok.encode("Return a new"))
    top = [tok.vocab[i] for i in np.argsort(-p)[:10]]
    q1 = cs.model(1).row(tok.encode("Return a new"))
    assert top and p.max() > 3 * q1.max()  # the trigram is far more certain than the unigram


def test_storage_is_sparse_not_v_by_v(small_text):
    cs = ngram.train(small_text, "word", 3)
    assert cs.V > 1000
    assert cs.nbytes < 0.05 * 8 * cs.V**2  # a dense V x V table of float64 would be 20x more
    for lv in cs.levels:
        assert not lv.w.flags.writeable and not lv.keys.flags.writeable


def test_training_is_deterministic():
    a, b = ngram.train(TEXT, "char", 3), ngram.train(TEXT, "char", 3)
    assert a.fingerprint == b.fingerprint
    ctx = a.tokenizer.encode("the ca")
    assert np.array_equal(a.model(3).row(ctx), b.model(3).row(ctx))
    assert ngram.train(TEXT + ".", "char", 3).fingerprint != a.fingerprint


def test_model_shares_the_tokenizer_and_state_is_the_last_n_minus_1_tokens():
    cs = ngram.train(TEXT, "char", 4)
    t, d = cs.model(4), cs.model(2)
    assert t.tokenizer is d.tokenizer and t.V == d.V
    assert t.state([1, 2, 3, 4, 5]) == (3, 4, 5) and d.state([1, 2, 3]) == (3,)
    assert cs.model(1).state([1, 2]) == ()


@pytest.mark.parametrize("bad", [0, 5, 2.5, True])
def test_order_must_be_within_the_counts(bad):
    cs = ngram.train(TEXT, "char", 4)
    with pytest.raises(ValueError, match="order"):
        cs.model(bad)


@pytest.mark.parametrize("bad", [0, ngram.MAX_ORDER + 1, "3"])
def test_max_order_is_checked(bad):
    with pytest.raises(ValueError, match="max_order"):
        ngram.train(TEXT, "char", bad)


def test_too_little_text_is_refused():
    with pytest.raises(ValueError, match="at least 3 tokens"):
        ngram.train("a", "char", 2)
