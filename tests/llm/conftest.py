"""The real model, loaded once per test session (every llm test runs on one xdist worker:
tests/conftest.py groups them), and the reference made by transformers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specviz.llm import store

REFERENCE = Path(__file__).with_name("reference.json")


@pytest.fixture(scope="session")
def model() -> store.Model:
    return store.load()


@pytest.fixture(scope="session")
def reference() -> dict:
    return json.loads(REFERENCE.read_text())
