"""/plan's parse of hostile pastes: seconds per paste, and the ratio to the pattern the
llama.cpp reader used before (measured in the same run, on the same text).

The old reader searched the paste with a regular expression whose number group backtracks
on a long run of digits that does not match: its time grows with the square of the run, and
CPython's `re` holds the GIL meanwhile (every session of the server waits). The reader now
splits strings line by line and refuses a line over its cap. Also timed: a far position label
(the old parser built a list as long as the position before checking k) and a 2,000,000-char
Prometheus paste (the largest accepted).

    .venv/bin/python benchmarks/bench_plan_parse.py            # runs of 2,000..8,000 digits
    .venv/bin/python benchmarks/bench_plan_parse.py --digits 2000,4000,8000,16000
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from specviz.analysis.servermetrics import MetricsError, parse_any  # noqa: E402

_NUM = r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
OLD_PATTERN = re.compile(r"draft acceptance\s*=\s*" + _NUM + r"\s*\(\s*(\d+)\s*accepted\s*/\s*"
                         r"(\d+)\s*generated\)")  # the replaced reader's pattern (its head)
P = "vllm:spec_decode_"


def seconds(fn) -> float:
    t0 = time.perf_counter()
    try:
        fn()
    except MetricsError:
        pass
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--digits", default="2000,4000,8000",
                    help="lengths of the digit run (the old pattern takes ~n^2)")
    args = ap.parse_args(argv)
    seconds(lambda: parse_any("warm up {"))  # imports, outside the timings
    print(f"{'digits':>8} {'old pattern s':>14} {'reader s':>10} {'ratio':>10}")
    for n in (int(x) for x in args.digits.split(",")):
        text = "draft acceptance = " + "1" * n + "x accepted"
        old = seconds(lambda t=text: OLD_PATTERN.search(t))
        new = seconds(lambda t=text: parse_any(t))
        print(f"{n:>8,} {old:>14.3f} {new:>10.5f} {old / max(new, 1e-9):>9,.0f}x")
    far = (f"{P}num_drafts_total 100\n{P}num_draft_tokens_total 300\n"
           f"{P}num_accepted_tokens_total 150\n"
           f'{P}num_accepted_tokens_per_pos_total{{position="2000000000"}} 1\n')
    print(f"position 2e9 refused in {seconds(lambda: parse_any(far)):.5f} s (before: a list "
          "of 2e9 entries, ~30 GB, was built first)")
    big = (f'{P}num_drafts_total{{engine="1"}} 1\n' * 60_000)[:2_000_000]
    print(f"2,000,000-char Prometheus paste: {seconds(lambda: parse_any(big)):.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
