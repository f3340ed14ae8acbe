"""The registry of the real model's draft kinds (llm.drafts): each kind's parser, label,
caption, cost model and pair from one object; a new kind is one more entry; one word means
one draft on every page and in the CLI. Fast: Gemma 3 270M's shape and the tiny model of
test_llm_tiny, no real model."""

from __future__ import annotations

import argparse

import pytest
from test_llm_tiny import write_tiny

from specviz.llm import drafts, store
from specviz.llm.draftkind import DraftError, DraftKind, DraftSpec
from specviz.llm.gemma import Config
from specviz.llm.lossless import GreedyPair
from specviz.llm.pair import LLMPair

GEMMA = Config(n_layers=18, d=640, n_heads=4, n_kv=1, head_dim=256, ffn=2048, V=262_144,
               eps=1e-6, rope_global=1e6, rope_local=1e4, window=512, context=32_768, bos=2,
               eos=1)
# Gemma 3 270M per position, from its shape (SPEC: the head 168 M, the blocks about 100 M):
# a layer is q (640 x 1024), k and v (640 x 256 each), o (1024 x 640), gate, up, down (640 x 2048)
LAYER = 640 * 1024 + 2 * 640 * 256 + 1024 * 640 + 3 * 640 * 2048
HEAD = 262_144 * 640


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return store.read_model(write_tiny(tmp_path_factory.mktemp("tiny") / "t.gguf"))


def test_each_kind_parses_its_default_and_examples_and_its_label_reads_back():
    for kind in drafts.KINDS.values():
        for arg in dict.fromkeys((kind.default, *kind.examples)):
            spec = drafts.parse_draft(kind.text(arg), cfg=GEMMA)
            assert spec.kind == kind.name and drafts.kind_of(spec) is kind
            assert drafts.parse_draft(spec.label, cfg=GEMMA) == spec  # canonical
            assert drafts.parse_kind(kind.name, arg, cfg=GEMMA) == spec
            assert kind.caption(spec, GEMMA)
        assert kind.usage.split(":")[0] == kind.name and kind.title
    assert drafts.parse_draft("trimmed:16384", cfg=GEMMA).label == "trimmed:16384:18"
    assert drafts.parse_draft("skip:8,4,8", cfg=GEMMA).label == "skip:4,8"
    assert drafts.parse_draft("skip:17", cfg=GEMMA).label == "skip:17"  # the last layer too
    assert drafts.examples() == ("trimmed:16384", "skip:4,8", "early-exit:6", "early-exit:12",
                                 "lookup", "ngram:3", "medusa:4", "medusa:2")


@pytest.mark.parametrize("text, words", [
    ("eagle:2", "unknown draft 'eagle:2': use trimmed:N[:L], skip:i,j,..., early-exit:L, "
                "lookup, ngram:n, medusa:K[:s]"),
    ("medusa:5", "1..4"), ("medusa:0", "1..4"), ("medusa:4:x", "a number in [0, 1]; got 'x'"),
    ("medusa:4:1.5", "lie in [0, 1]; got '1.5'"), ("medusa:4:nan", "lie in [0, 1]"),
    ("medusa:4:", "a number in [0, 1]; got ''"),
    ("early-exit:18", "1..17"), ("early-exit:", "must be an integer"),
    ("skip:" + ",".join(map(str, range(18))), "at least one layer"),
    ("trimmed:262144", "1..262143"), ("trimmed:9:19", "1..18"), ("ngram:7", "1..6"),
    ("lookup:3", "takes no parameter"),
])
def test_a_bad_spec_names_what_is_wrong(text, words):
    with pytest.raises(DraftError, match=words.replace(".", r"\.").replace("[", r"\[")
                       .replace("]", r"\]")):
        drafts.parse_draft(text, cfg=GEMMA)


def test_medusas_stop_threshold_is_its_own_and_spelled_only_when_not_the_default():
    from specviz.llm import medusa

    default = drafts.parse_draft("medusa:4", cfg=GEMMA)
    assert default.sure == medusa.SURE and default.label == "medusa:4"
    assert drafts.parse_draft(f"medusa:4:{medusa.SURE}", cfg=GEMMA).label == "medusa:4"
    off = drafts.parse_draft("medusa:2:0", cfg=GEMMA)
    assert off.sure == 0.0 and off.label == ("medusa:2" if medusa.SURE == 0 else "medusa:2:0")
    for text in ("medusa:3:0.25", "medusa:3:1"):
        spec = drafts.parse_draft(text, cfg=GEMMA)
        assert drafts.parse_draft(spec.label, cfg=GEMMA) == spec and spec.heads == 3
    assert drafts.parse_kind("medusa", "3:0.25", cfg=GEMMA).sure == 0.25  # /llm's box


def test_a_kind_picked_without_a_parameter_ignores_the_one_left_in_the_link():
    assert drafts.parse_kind("lookup", "4,8", cfg=GEMMA).label == "lookup"
    with pytest.raises(DraftError, match="unknown draft kind 'x'"):
        drafts.parse_kind("x", "1", cfg=GEMMA)


def test_a_draft_plays_at_most_the_tokens_it_can_draft_a_round():
    """Medusa's K heads draft one token each: k past K is played at K by the pages and
    refused where it was asked for outright (the CLI); any other draft plays k."""
    medusa = drafts.parse_draft("medusa:2", cfg=GEMMA)
    assert [medusa.played(k) for k in (1, 2, 3, 8)] == [1, 2, 2, 2]
    assert medusa.check_k(2) == 2
    with pytest.raises(ValueError, match=r"medusa:2 drafts at most 2 tokens a round \(one "
                       r"a head\); k = 3"):
        medusa.check_k(3)
    other = drafts.parse_draft("skip:4,8", cfg=GEMMA)
    assert other.played(8) == other.check_k(8) == 8


def test_the_cost_model_counts_multiply_adds_from_the_shape():
    c = lambda text: drafts.kind_of(s := drafts.parse_draft(text, cfg=GEMMA)).c_macs(s, GEMMA)  # noqa: E731
    target = 18 * LAYER + HEAD
    assert round(18 * LAYER / 1e6) == 100 and round(HEAD / 1e6) == 168
    assert c("early-exit:6") == pytest.approx((6 * LAYER + HEAD) / target)
    assert c("skip:4,8") == pytest.approx((16 * LAYER + HEAD) / target)
    assert c("trimmed:16384") == pytest.approx((18 * LAYER + 16384 * 640) / target)
    assert c("trimmed:16384:9") == pytest.approx((9 * LAYER + 16384 * 640) / target)
    assert 0.74 < c("early-exit:6") < 0.76 and 0.40 < c("trimmed:16384") < 0.42
    assert c("lookup") is None and c("ngram:3") is None  # no model pass to count
    assert c("medusa:4") == pytest.approx((640 * 640 + 8192 * 640) / target)  # one head
    cut = {name for name, k in drafts.KINDS.items() if k.subset}
    assert cut == {"early-exit", "skip", "trimmed"}  # a part of the target's pass only
    assert {name for name, k in drafts.KINDS.items() if k.proposes} == {"lookup"}


def test_each_kind_builds_its_pair(tiny):
    ids = tiny.tokenizer.encode("ab a")
    kit = drafts.Kit(lambda m: [4, 5, 5, 6, 7, 7, 7], lambda m, ids, n: None)
    for text, greedy in (("early-exit:1", False), ("skip:0", True), ("trimmed:8:2", False),
                         ("lookup", True)):
        spec = drafts.parse_draft(text, cfg=tiny.cfg)
        pair = drafts.draft_pair(tiny, spec, T=0.5, greedy=greedy, kit=kit)
        assert isinstance(pair, GreedyPair if greedy else LLMPair) and pair.spec == spec
        if spec.layers:
            assert pair.draft.layers == spec.layers and abs(pair.q(ids).sum() - 1) < 1e-9
        else:
            assert pair.propose(ids + ids, 2) is not None
    assert pair.draft is None and pair.ngram is None
    trimmed = drafts.draft_pair(tiny, drafts.parse_draft("trimmed:3", cfg=tiny.cfg), kit=kit)
    assert sorted(trimmed.draft.head_ids.tolist()) == [4, 5, 7]  # the 3 most frequent
    with pytest.raises(DraftError, match="needs the shipped corpus"):
        drafts.draft_pair(tiny, drafts.parse_draft("trimmed:3", cfg=tiny.cfg))


class Echo(DraftKind):
    """A made-up kind for the test: it drafts what the last token was."""

    name, usage, default, examples = "echo", "echo:n", "1", ("1", "2")
    title, help = "echo the last token", "echo: n"

    def parse(self, arg, cfg):
        return DraftSpec(self.name, f"echo:{int(arg)}", layers=(0,))

    def caption(self, spec, cfg):
        return "echoes"

    def pair(self, model, spec, *, T, greedy, kit):
        return ("an echo pair", spec.label, T, greedy)


def test_a_new_kind_is_one_more_entry(monkeypatch):
    monkeypatch.setitem(drafts.KINDS, "echo", Echo())
    spec = drafts.parse_draft("echo:2", cfg=GEMMA)
    assert drafts.draft_pair(None, spec, T=0.5, greedy=True) == ("an echo pair", "echo:2", 0.5,
                                                                 True)
    assert drafts.examples()[-2:] == ("echo:1", "echo:2") and "echo:n" in drafts.usage()
    assert drafts.kind_named("echo:7").title == "echo the last token"


def test_one_word_means_one_draft_on_every_page_and_in_the_cli():
    """/llm's kinds and /measured's drafts are the registry's; /text's drafters and /plan's
    drafter without a model use its words for the same things: "lookup" is prompt lookup
    (it proposes), "ngram" an n-gram model (/plan prices no n-gram model), "medusa" Medusa's
    heads on the target (the heads this model ships on /llm; heads of the named size on /plan)."""
    from specviz import clillm
    from specviz.analysis import drafting
    from specviz.text import pair as textpair
    from specviz.web import settings as S

    assert S.FIELD["llm_kind"].parse.options == tuple(drafts.KINDS)
    assert S.FIELD["m_draft"].parse.options == (*drafts.examples(), "all")
    assert set(textpair.DRAFTERS) <= set(drafts.KINDS)
    assert drafts.KINDS["lookup"].proposes and not drafts.KINDS["ngram"].proposes
    assert set(drafting.DRAFT_KINDS) & set(drafts.KINDS) == {"lookup", "medusa"}
    assert "prompt lookup" in drafting.DRAFT_KINDS["lookup"]
    assert "Medusa" in drafting.DRAFT_KINDS["medusa"] and "Medusa" in drafts.KINDS["medusa"].title
    sub = argparse.ArgumentParser().add_subparsers()
    clillm.add_parser(sub)
    help_text = next(a.help for a in sub.choices["llm"]._actions if "--draft" in a.option_strings)
    assert drafts.usage() in help_text
