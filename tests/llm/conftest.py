"""The reference made by transformers (the real model's fixture, `model`, is tests/conftest.py's:
every llm test runs on one xdist worker, which loads it once)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REFERENCE = Path(__file__).with_name("reference.json")


@pytest.fixture(scope="session")
def reference() -> dict:
    return json.loads(REFERENCE.read_text())
