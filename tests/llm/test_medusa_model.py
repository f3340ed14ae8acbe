"""Medusa's shipped heads on the real model: `python -m specviz llm --draft medusa:4
--temperature 0` decodes the target's greedy text (transformers' own), the heads' file
matches its checksum and says how it was trained, and /measured's exactness check on a
Medusa round passes with the correct rule and catches a broken one."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from specviz import cli
from specviz.analysis.audit import CAUGHT, CONSISTENT
from specviz.llm import drafts, medusa
from specviz.views import llmpage
from specviz.views import realrows as rr

pytestmark = pytest.mark.model


def test_the_shipped_heads_match_their_checksum_and_say_how_they_were_trained():
    h = medusa.load_heads()
    assert h.K == medusa.K_MAX and len(h.rows) == medusa.ROWS
    assert h.W1.shape == (medusa.K_MAX, 640, 640) and np.all(np.isfinite(h.W1))
    meta = h.meta
    assert meta["script"] == medusa.RETRAIN and meta["script_version"] >= 1
    assert [t["head"] for t in meta["top1"]] == [1, 2, 3, 4]
    for t in meta["top1"]:
        assert 0 <= t["lo"] <= t["rate"] <= t["hi"] <= 1
    assert medusa.HEADS_PATH.stat().st_size < 8e6  # a few MB


def test_medusa_4_at_temperature_0_decodes_the_targets_greedy_text(model, reference):
    ref = reference["prompts"]["fact"]
    out = io.StringIO()
    rc = cli.main(["llm", "--prompt", ref["text"], "--draft", "medusa:4", "--k", "4",
                   "--max-new", "8", "--json", "--reps", "1", "--temperature", "0"], out=out)
    doc = json.loads(out.getvalue())
    assert rc == 0 and doc["draft"] == "medusa:4" and doc["greedy"] is True
    assert doc["plain_tokens"] == ref["greedy"][:8] == doc["tokens"]
    assert doc["summary"]["c"] is not None and doc["summary"]["c"] < 0.5  # no pass of a model


def test_exact_on_a_medusa_round_flags_the_broken_rule(model):
    r = rr.real_rows(model, llmpage.PRESETS["story"][1], "medusa:2", k=2, n=20_000)
    checks = {row["rule"]: row for row in rr.check_rows(r)}
    assert checks["correct"]["verdict"] == CONSISTENT and checks["correct"]["exact_tv"] < 1e-12
    assert checks[rr.BROKEN]["verdict"] == CAUGHT  # the negative control
    pair = drafts.draft_pair(model, drafts.parse_draft("medusa:2", cfg=model.cfg))
    assert pair.K == 2


def test_medusa_4_with_its_stop_decodes_the_targets_greedy_text(model, reference):
    """medusa:4 drafts only while each head is sure (medusa.SURE): the default prompts'
    greedy text is still the target's own, and rounds do stop short, saying why."""
    stopped = []
    for name in ("story", "code", "fact"):
        ref = reference["prompts"][name]
        out = io.StringIO()
        rc = cli.main(["llm", "--prompt", ref["text"], "--draft", "medusa:4", "--k", "4",
                       "--max-new", "16", "--json", "--reps", "1", "--temperature", "0"],
                      out=out)
        doc = json.loads(out.getvalue())
        assert rc == 0 and doc["tokens"] == ref["greedy"][:16] == doc["plain_tokens"], name
        stopped += [r["stopped"] for r in doc["rounds"] if r["stopped"]]
    assert medusa.SURE > 0 and stopped
    assert all(s.startswith("head ") and f"< {medusa.SURE:g})" in s for s in stopped)
