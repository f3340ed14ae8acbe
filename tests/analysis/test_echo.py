"""Messages about /plan input repeat at most a few names of it, each cut: a message does not
grow with its input (a metrics text with 500 models, a table with 1,000 columns, a config
whose name is 100,000 characters)."""

from __future__ import annotations

import json

import pytest

from specviz.analysis import modelcfg, pasted, serverformats, servermetrics

ECHO_BOUND = 400  # characters: the longest of these messages, whatever the input


def _message(fn, *args, **kwargs) -> str:
    with pytest.raises(ValueError) as exc:
        fn(*args, **kwargs)
    return str(exc.value)


def test_many_models_are_named_a_few_and_counted():
    lines = [f'vllm:spec_decode_num_drafts_total{{model_name="{"m" * 200}{i}"}} 5.0'
             for i in range(500)]
    msg = _message(servermetrics.parse_prometheus, "\n".join(lines) + "\n")
    assert "500 models" in msg and "and 497 more" in msg
    assert len(msg) < ECHO_BOUND, len(msg)


def test_many_columns_are_named_a_few_and_counted():
    header = ",".join(f"c{i}" for i in range(40))  # within the 200-character line cap
    msg = _message(serverformats.parse_hand, header + "\n" + ",".join("1" * 40) + "\n")
    assert "and 37 more" in msg
    wide = ",".join(f"column{i}" for i in range(1000))  # past it: refused by its length
    msg = _message(serverformats.parse_hand, wide + "\n" + ",".join("1" * 1000) + "\n")
    assert "at most 200 characters" in msg
    assert len(msg) < ECHO_BOUND, len(msg)


def test_a_long_config_name_is_cut():
    text = json.dumps({"_name_or_path": "n" * 100_000, "num_hidden_layers": 2})
    msg = _message(modelcfg.parse_config, text)
    assert "hidden_size" in msg
    assert len(msg) < ECHO_BOUND, len(msg)


def test_listed_names_a_few_then_counts():
    assert pasted.listed(["a", "b"]) == "a, b"
    assert pasted.listed("abcdef", most=3) == "a, b, c and 3 more"
    assert pasted.listed(["x" * 100], chars=8) == "xxxxx..."  # cut as every quote is
