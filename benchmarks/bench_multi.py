"""Speed of multi-draft (and the other tree rules) in the vectorised Monte Carlo, against
the dedicated multi-draft engine that the one tree engine replaced (commit 68f35ef).

    .venv/bin/python benchmarks/bench_multi.py                 # this tree against 68f35ef
    .venv/bin/python benchmarks/bench_multi.py --base main     # and against another commit

Every figure is measured in this one run: each commit's specviz is exported with git
archive into a temporary folder and timed in a subprocess of its own. Times are the
process's CPU time (time.process_time), the best of --repeat runs, with the default tables.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OLD = "68f35ef"  # the last commit with the dedicated multi-draft engine (_round_multi)

# (label, rule, params, k, what, size): what is simulate (n decodes) or long_decode (rounds)
CASES = [
    ("multi_draft m=8 k=32", "multi_draft", {"m": 8}, 32, "simulate", 50_000),
    ("multi_draft m=8 k=32", "multi_draft", {"m": 8}, 32, "long_decode", 20_000),
    ("multi_draft m=3 k=4", "multi_draft", {"m": 3}, 4, "simulate", 50_000),
    ("multi_draft m=3 k=4", "multi_draft", {"m": 3}, 4, "long_decode", 20_000),
    ("tree_iid 3-2-1 k=4", "tree_iid", {"shape": 1}, 4, "simulate", 50_000),
    ("tree_wor 3-2-1 k=4", "tree_wor", {"shape": 1}, 4, "simulate", 50_000),
    ("tree_first_residual 2-2-2 k=4", "tree_first_residual", {"shape": 2}, 4, "simulate",
     50_000),
    ("tree_wor_as_iid 2-3 k=4", "tree_wor_as_iid", {"shape": 3}, 4, "long_decode", 20_000),
]

CHILD = """
import json, sys, time
sys.path.insert(0, {root!r})
from specviz.core.montecarlo import long_decode, simulate
from specviz.core.rules import RULES, get_rule
from specviz.core.tables import default_tables
try:
    from specviz.core.scenario import Scenario
except ImportError:  # a commit before the scenario: the engines took loose arguments
    Scenario = None
t = default_tables()
out = []
for label, name, params, k, what, size in {cases!r}:
    if name not in RULES:
        out.append(None)
        continue
    rule = get_rule(name).with_params(**params)
    best = float("inf")
    for _ in range({repeat}):
        t0 = time.process_time()
        if Scenario is None:
            args, kw = (t.P, t.Q, 0, k), {{"rule": rule}}
        else:
            args, kw = (Scenario.of(t.P, t.Q, ctx=0, k=k, rule=rule),), {{}}
        if what == "simulate":
            simulate(*args, n=size, **kw)
        else:
            long_decode(*args, n_rounds=size, **kw)
        best = min(best, time.process_time() - t0)
    out.append(best)
print(json.dumps(out))
"""


def times(root: Path, repeat: int) -> list[float | None]:
    """CPU seconds of every case with the specviz under root (None: no such rule there)."""
    code = CHILD.format(root=str(root), cases=CASES, repeat=repeat)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=root)
    return json.loads(run.stdout.strip().splitlines()[-1])


def exported(ref: str, into: Path) -> Path:
    """specviz as it is at commit ref, in a folder of its own under into."""
    dest = into / ref.replace("/", "_")
    dest.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "specviz"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", help="another commit to time as well (e.g. main)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_multi_") as tmp:
        cols = {OLD: times(exported(OLD, Path(tmp)), args.repeat)}
        if args.base:
            cols[args.base] = times(exported(args.base, Path(tmp)), args.repeat)
    cols["this tree"] = times(ROOT, args.repeat)
    head = f"{'case':32} {'run':12}" + "".join(f"{c:>12}" for c in cols) + "  this/old"
    print(head)
    for i, (label, _, _, _, what, size) in enumerate(CASES):
        row = [cols[c][i] for c in cols]
        cells = "".join(f"{'-' if t is None else f'{t:.3f} s':>12}" for t in row)
        old, new = cols[OLD][i], cols["this tree"][i]
        ratio = f"{new / old:9.2f}x" if old else "        -"
        print(f"{label:32} {what[:4] + ' ' + f'{size:,}':12}{cells}  {ratio}")


if __name__ == "__main__":
    main()
