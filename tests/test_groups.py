"""The README's `--dist loadgroup` groups as tests/conftest.py says: a small suite with a copy
of that conftest, run on two pytest-xdist workers, keeps each file on one worker and the
real model's tests (llm/) together, and the workers start on the long groups (the real
model's, a browser file) whatever their number of tests."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILES = {"tests/a/test_one.py": 8, "tests/b/test_two.py": 12, "tests/e2e/test_e.py": 1,
         "tests/llm/test_x.py": 2, "tests/llm/test_y.py": 2}


def _conftest():
    """tests/conftest.py by its path: under pytest the name `conftest` is taken by
    whichever conftest.py was imported first (tests/llm/ has one too)."""
    spec = importlib.util.spec_from_file_location("specviz_tests_conftest",
                                                  ROOT / "tests" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_worker_groups_by_path():
    worker_group = _conftest().worker_group
    assert worker_group("tests/e2e/test_browser.py::test_a[x/y]") == "e2e/test_browser.py"
    assert worker_group("tests/llm/test_llm_pair.py::test_b") == "llm"
    assert worker_group("tests/core/test_rule.py::test_c[1-2]") == "core/test_rule.py"
    assert worker_group("tests/test_cli.py::test_d") == "test_cli.py"


@pytest.mark.slow  # over 2 s on a quiet core (tests/conftest.py)
def test_loadgroup_keeps_a_file_and_the_browser_tests_on_one_worker(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "conftest.py").write_text((ROOT / "tests/conftest.py").read_text())
    for name, n in FILES.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"def test_{i}():\n    pass\n\n\n" for i in range(n)))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-m", "pytest", "-v", "-n", "2", "--dist", "loadgroup",
                          "-p", "no:cacheprovider", "tests"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    workers, order = defaultdict(set), defaultdict(list)
    for gw, node in re.findall(r"\[(gw\d+)\].*?PASSED (\S+)::", run.stdout):
        workers[node].add(gw)
        order[gw].append(node)
    assert {nodes[0].split("/")[1] for nodes in order.values()} == {"llm", "e2e"}, run.stdout
    assert {f: len(workers[f]) for f in FILES} == dict.fromkeys(FILES, 1), run.stdout
    assert workers["tests/llm/test_x.py"] == workers["tests/llm/test_y.py"]
    assert sum(1 for line in run.stdout.splitlines() if " PASSED " in line) == sum(
        FILES.values())


def test_the_groups_are_handed_out_long_first_and_the_built_server_after_the_browser():
    """The order the workers take groups in (pytest_collection_modifyitems): the contract,
    the real model's, the live audits, the browser files, then llama-server's live audit
    (its build runs beside the first groups on a fresh machine), then the rest, most
    tests first."""
    conf = _conftest()

    class Item:
        def __init__(self, nodeid: str) -> None:
            self.nodeid, self.fspath, self.fixturenames = nodeid, ROOT / nodeid, ()

        def add_marker(self, marker) -> None:
            pass

        def get_closest_marker(self, name):
            return None

    names = ["tests/a/test_one.py::t", "tests/live/test_llama_server.py::t",
             "tests/b/test_two.py::t", "tests/b/test_two.py::u", "tests/e2e/test_e.py::t",
             "tests/live/test_serve.py::t", "tests/llm/test_x.py::t",
             "tests/web/test_stcontract.py::t"]
    items = [Item(n) for n in names]
    conf.pytest_collection_modifyitems(None, items)
    assert [i.nodeid.split("::")[0].split("/", 1)[1] for i in items] == [
        "web/test_stcontract.py", "llm/test_x.py", "live/test_serve.py", "e2e/test_e.py",
        "live/test_llama_server.py", "b/test_two.py", "b/test_two.py", "a/test_one.py"]


TIERED = {
    "tests/a/test_plain.py": "def test_plain():\n    pass\n",
    "tests/a/test_marked.py": "import pytest\n\n\n@pytest.mark.slow\ndef test_slow():\n    pass\n"
                              "\n\n@pytest.mark.fuzz\ndef test_fuzz():\n    pass\n",
    "tests/e2e/test_e.py": "def test_e():\n    pass\n",
    "tests/llm/conftest.py": "import pytest\n\n\n@pytest.fixture\ndef model():\n    return 1\n",
    "tests/llm/test_m.py": "def test_uses_the_model(model):\n    pass\n\n\n"
                           "def test_tiny():\n    pass\n",
    "tests/a/test_hangs.py": "import time\n\n\ndef test_hangs():\n    time.sleep(120)\n",
}


def _tiered_suite(tmp_path, *args: str) -> subprocess.CompletedProcess:
    """A small suite with copies of tests/conftest.py and of pyproject.toml (its tiers and
    time limit, the development tier's limit at 15 s here), run with args."""
    ini = (ROOT / "pyproject.toml").read_text()
    (tmp_path / "pyproject.toml").write_text(re.sub(r"(?m)^timeout = \d+", "timeout = 15", ini))
    for name, text in {"tests/conftest.py": (ROOT / "tests/conftest.py").read_text(),
                       **TIERED}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider",
                           *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=240)


@pytest.mark.slow  # two pytest runs and a 15 s hang
def test_the_development_tier_deselects_the_marked_and_times_out(tmp_path):
    """A plain run leaves out the browser files (by place), the model's tests (by fixture)
    and the slow and fuzz marks, and stops a test past its time limit; -m "" runs them all."""
    run = _tiered_suite(tmp_path)
    ran = set(re.findall(r"::(\w+) (?:PASSED|FAILED)", run.stdout))
    assert ran == {"test_plain", "test_tiny", "test_hangs"}, run.stdout[-3000:]
    assert "FAILED tests/a/test_hangs.py::test_hangs - Failed: Timeout (>15.0s)" in run.stdout
    assert "4 deselected" in run.stdout
    everything = _tiered_suite(tmp_path, "-m", "", "--deselect", "tests/a/test_hangs.py")
    assert everything.returncode == 0, everything.stdout[-3000:]
    assert len(re.findall(r" PASSED", everything.stdout)) == len(ran) - 1 + 4
