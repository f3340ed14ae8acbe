"""medusagen's bookkeeping with the model's part stood in for: the prompts of fewer are the
first of more, a stopped run goes on where it stopped and ends with the files an unstopped
one writes, a rerun makes nothing, and a shorter last batch is made again (and its old file
removed) when more prompts are asked for. Fast: no model."""

from __future__ import annotations

import numpy as np
import pytest

from specviz import medusagen


def test_the_prompts_of_fewer_are_the_first_of_more():
    assert medusagen.prompts(30, seed=0)[:20] == medusagen.prompts(20, seed=0)
    assert medusagen.prompts(20, seed=1)[:14] == list(medusagen.STARTERS)
    assert medusagen.prompts(20, seed=1) != medusagen.prompts(20, seed=0)


class Stop(Exception):
    pass


@pytest.fixture
def made(monkeypatch):
    """The (prompt, T, seed) of every sequence made; the n-th call raises Stop if asked."""
    calls: list[tuple[str, float, int]] = []
    stop_at = [None]

    def sequence(model, prompt, *, T, seed):
        if len(calls) == stop_at[0]:
            raise Stop
        calls.append((prompt, T, seed))
        toks = [2, 4 + len(prompt) % 200, 4 + seed % 250, 4 + int(T), 7, 8]
        return toks, 2, np.full((4, 8), seed, dtype=np.float16)

    monkeypatch.setattr(medusagen, "sequence", sequence)
    monkeypatch.setattr(medusagen, "prompts", lambda n, seed: [f"p{i}" * (i + 1)
                                                                for i in range(n)])
    return calls, stop_at


def files(d):
    return sorted(p.name for p in d.glob("batch-*.npz"))


def test_a_stopped_run_goes_on_where_it_stopped_and_a_rerun_makes_nothing(tmp_path, made):
    calls, stop_at = made
    medusagen.generate(None, tmp_path / "whole", n_prompts=10, seed=3, log=lambda m: None)
    whole = files(tmp_path / "whole")
    assert len(whole) == 3 and len(calls) == 20
    calls.clear()
    stop_at[0] = 11  # in the second batch: the first is written, the second is not
    with pytest.raises(Stop):
        medusagen.generate(None, tmp_path / "cut", n_prompts=10, seed=3, log=lambda m: None)
    assert len(files(tmp_path / "cut")) == 1
    calls.clear()
    stop_at[0] = None
    medusagen.generate(None, tmp_path / "cut", n_prompts=10, seed=3, log=lambda m: None)
    assert [s for _, _, s in calls] == list(range(3 + 8, 3 + 20))  # the batches not written
    assert files(tmp_path / "cut") == whole
    calls.clear()
    medusagen.generate(None, tmp_path / "cut", n_prompts=10, seed=3, log=lambda m: None)
    assert calls == [] and files(tmp_path / "cut") == whole
    assert not list((tmp_path / "cut").glob("*.part"))


def test_a_shorter_last_batch_is_made_again_when_more_prompts_are_asked(tmp_path, made):
    calls, _ = made
    medusagen.generate(None, tmp_path, n_prompts=6, seed=0, log=lambda m: None)  # 8 + 4
    calls.clear()
    medusagen.generate(None, tmp_path, n_prompts=8, seed=0, log=lambda m: None)  # 8 + 8
    assert [s for _, _, s in calls] == list(range(8, 16))
    names = files(tmp_path)
    assert len(names) == 2
    assert sorted(len(np.load(tmp_path / n)["lens"]) for n in names) == [8, 8]
    calls.clear()
    medusagen.generate(None, tmp_path, n_prompts=8, seed=1, log=lambda m: None)  # its own list
    assert len(calls) == 16
