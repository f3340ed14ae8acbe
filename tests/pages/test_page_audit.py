"""/audit under AppTest: built-in examples, pasted code only on a local server, the link."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import bound_undeclared, run_page

from specviz.views.auditpage import LOCAL_ENV, is_local
from specviz.web import urlcodec

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "13_audit.py")


@pytest.mark.parametrize("env, address, local", [
    ({}, None, False),  # the default: every interface
    ({}, "0.0.0.0", False),
    ({}, "", False),
    ({}, "10.0.0.5", False),
    ({}, "localhost", True),
    ({}, "127.0.0.1", True),
    ({}, "::1", True),
    ({}, "[::1]", True),
    ({LOCAL_ENV: "1"}, "0.0.0.0", True),  # the operator says so
    ({LOCAL_ENV: "0"}, None, False),
    ({LOCAL_ENV: "yes"}, None, False),  # only "1"
])
def test_local_is_what_the_operator_set(env, address, local):
    assert is_local(env, address) is local


def test_a_hosted_server_audits_a_built_in_example_and_draws_it():
    at = run_page(PAGE, timeout=120)
    assert at.warning and "biased, like greedy" in at.warning[0].value
    assert not at.get("text_area")  # no code box on a hosted server
    assert any("never runs code a visitor pastes" in c.value for c in at.caption)
    assert len(at.get("plotly_chart")) == 2
    assert not bound_undeclared(at, "audit")


def test_the_rule_passes_and_sample_matching_says_what_it_leaves():
    at = run_page(PAGE, timeout=120, a_example="correct")
    assert at.success and "lossless" in at.success[0].value and not at.error
    sm = run_page(PAGE, timeout=120, a_example="sample_matching")
    assert sm.success and "on the table" in sm.success[0].value


def test_a_link_reopens_the_same_audit():
    params = {"a_example": "no_resample", "a_n": "3000", "a_seed": "7", "a_pair": "k = 1"}
    first = run_page(PAGE, timeout=120, **params)
    again = run_page(PAGE, timeout=120, **{k: first.query_params[k] for k in params})
    assert first.warning[0].value == again.warning[0].value  # the same numbers, to the digit
    assert "n = 3,000 a pair" in again.warning[0].value


def test_a_hosted_server_never_runs_pasted_code(tmp_path, monkeypatch):
    monkeypatch.delenv(LOCAL_ENV, raising=False)
    marker = tmp_path / "ran"
    code = f"open({str(marker)!r}, 'w').write('x')\ndef verify(d, q, p, rng):\n    return [0]\n"
    at = run_page(PAGE, timeout=120, a_src="code", a_code=urlcodec.encode_blob(code))
    assert not marker.exists()
    assert not at.get("text_area") and "a_code" not in at.query_params
    assert at.warning and "greedy" in at.warning[0].value  # the example ran instead


@pytest.mark.slow
def test_a_local_server_audits_pasted_code_and_keeps_it_in_the_link(monkeypatch):
    monkeypatch.setenv(LOCAL_ENV, "1")
    code = ("import numpy as np\ndef verify(drafted, q, p, rng):\n"
            "    return [int(rng.choice(p.shape[1], p=p[0]))]\n")  # one token from p: lossless
    blob = urlcodec.encode_blob(code)
    at = run_page(PAGE, timeout=180, a_src="code", a_code=blob, a_n="2000")
    assert at.get("text_area") and at.get("text_area")[0].value == code
    verdict = (at.success or at.warning)[0].value
    assert "your verify" in verdict and ("lossless" in verdict or "too small" in verdict)
    assert at.query_params["a_code"] == blob
    bad = run_page(PAGE, timeout=180, a_src="code",
                   a_code=urlcodec.encode_blob("def check():\n    pass\n"))
    assert bad.error and "named verify" in bad.error[0].value


def test_the_docker_image_is_a_hosted_server():
    """The image's CMD (JSON exec form) binds every interface: no pasted code runs there."""
    import json

    root = Path(__file__).resolve().parents[2]
    cmd = next(json.loads(line[4:]) for line in (root / "Dockerfile").read_text().splitlines()
               if line.startswith("CMD ["))
    address = next(a.split("=", 1)[1] for a in cmd if a.startswith("--server.address="))
    assert address == "0.0.0.0" and not is_local({}, address)
