"""The command line: `python -m specviz` prints the six demonstrations; bad input exits 2."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from specviz import RULES, default_tables, residual
from specviz.cli import main
from specviz.clitable import format_table
from specviz.core.rules import reads_warp

ROOT = Path(__file__).resolve().parents[1]


def run(*argv: str) -> str:
    out = io.StringIO()
    assert main(list(argv), out=out) == 0
    return out.getvalue()


@pytest.fixture(scope="module")
def everything() -> str:
    return run()


def test_no_arguments_prints_all_six_headed(everything):
    for n in range(1, 7):
        assert f"Demonstration {n} of 6" in everything
    assert everything.count("What to notice:") == 6


def test_demo_1_walkthrough_of_row_a():
    text = run("demo", "1")
    assert "Demonstration 1 of 6" in text and "Demonstration 2" not in text
    assert "0.8532" in text and "[0.1673 0.6457 0.1838 0.0032 0 0]" in text  # the tutorial's
    t = default_tables()
    ours = residual(t.P[0], t.Q[0])  # our table's own residual is what the table shows
    assert "[" + " ".join("0" if x == 0 else f"{x:.4f}" for x in ours) + "]" in text
    keep_e = min(1.0, t.P[0, 4] / t.Q[0, 4])
    assert re.search(r"proposes b: min\(1, 0\.3100/0\.2638\) = 1 -> always kept", text)
    assert re.search(rf"proposes e: min\(1, 0\.3821/0\.4479\) = {keep_e:.4f} -> rejected "
                     r"14\.7%", text)


def test_demo_1_table_rows_match_the_rule_at_four_decimals():
    """Each token's row of demo 1's table: p, q, keep = min(1, p/q) and the residual
    norm(max(0, p - q)), computed here from the default tables, every column to 4 decimals."""
    d = default_tables()
    p, q = d.P[0], d.Q[0]  # row 'a'
    gain = np.maximum(p - q, 0.0)
    want = {tok: [p[i], q[i], min(1.0, p[i] / q[i]), gain[i] / gain.sum()]
            for i, tok in enumerate(d.vocab)}
    rows = {}
    for line in run("demo", "1").splitlines():
        cells = line.split()
        if len(cells) == 5 and cells[0] in want:
            rows[cells[0]] = cells[1:]
    assert set(rows) == set(want)
    for tok, cells in rows.items():
        assert cells == [f"{v:.4f}" for v in want[tok]], (tok, cells)


def test_demo_1_subprocess():
    r = subprocess.run([sys.executable, "-m", "specviz", "demo", "1"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "0.8532" in r.stdout and "[0.1673 0.6457 0.1838 0.0032 0 0]" in r.stdout


def test_demo_2_lists_every_rule_and_the_direct_sampler():
    text = run("demo", "2", "--n", "20000")
    for name in RULES:
        assert re.search(rf"^\s+{name}\s", text, re.M), name
    assert "target sampled directly" in text
    line = next(s for s in text.splitlines() if s.strip().startswith("correct"))
    assert "consistent with the target" in line
    for broken in ("greedy", "no_resample"):
        line = next(s for s in text.splitlines() if s.strip().startswith(broken))
        assert "differs from the target" in line


def test_demo_2_compares_each_rule_with_the_law_it_promises():
    """As /rules does: the warp rules promise the warped target warp(p), the others p. So
    every lossless rule (warped among them) has exact TV 0 and passes, and the broken
    warp_raw_target (verifies against the unwarped p) is caught; the table says which law."""
    text = run("demo", "2", "--n", "20000")
    rows = {s.split()[0]: s.split() for s in text.splitlines()
            if s.strip() and s.split()[0] in RULES}
    warps = {name for name, r in RULES.items() if reads_warp(r)}
    assert warps >= {"warped", "warp_raw_target"}
    for name, row in rows.items():
        assert row[7] == ("warp(p)" if name in warps else "p"), row  # before the verdict
        if row[1] == "yes":
            assert float(row[3]) == 0.0 and "consistent with the target" in " ".join(row), row
    assert "differs from the target" in " ".join(rows["warp_raw_target"])
    assert "from the law the rule promises" in " ".join(text.split())  # wrapped


def test_demo_2_at_n_2000_does_not_pass_a_rule_its_p_value_rejects():
    """At 2,000 decodes no_resample's TV is under the threshold but its chi-square p-value
    is about 1e-15: the verdict beside that p-value must not call it consistent."""
    text = run("demo", "2", "--n", "2000")
    line = next(s for s in text.splitlines() if s.strip().startswith("no_resample"))
    assert re.search(r"differs from the target \(p = \d\.\de-1\d\)", line), line
    assert "at floor" not in text
    correct = next(s for s in text.splitlines() if s.strip().startswith("correct"))
    assert "consistent with the target" in correct


def test_demo_2_one_rule():
    text = run("demo", "2", "--n", "5000", "--rule", "greedy")
    assert "greedy" in text and not re.search(r"^\s+no_resample\s", text, re.M)


def test_demo_2_columns_are_each_audits_numbers():
    """The lossless rule's exact TV is 0 and its Monte Carlo TV is the noise of n decodes
    (above 0, under the pass line, which lies above the floor)."""
    text = run("demo", "2", "--n", "5000", "--rule", "correct")
    row = next(s.split() for s in text.splitlines() if s.strip().startswith("correct"))
    lossless, mc, exact, floor, line = row[1], *map(float, row[2:6])
    assert lossless == "yes" and exact == 0.0 and 0.0 < mc <= line and floor < line


def test_demo_3_sweeps(everything):
    assert "alpha" in everything and "temper(P, T)" in everything
    assert "3.571x" in everything  # alpha = 1: a perfect draft gives k + 1 = 5 tokens at c = 0.1


def test_demo_4_names_a_best_k():
    text = run("demo", "4", "--n", "5000")
    m = re.search(r"best k = (\d+)", text)
    assert m and 1 < int(m.group(1)) < 16  # an interior best k


def test_demo_5_break_even():
    text = run("demo", "5", "--c", "0.25")
    assert re.search(r"break-even c\* = .* = 0\.\d{4}", text)
    assert "0.25" in text and "SLOWER" in text and "faster" in text


def test_demo_6_roofline_figures():
    text = run("demo", "6")
    for fig in ("0.38", "0.77", "1.53", "3.07", "6.13", "0.50", "0.49", "5.167e9", "13.48e9"):
        assert fig in text, fig
    assert "tutorial" in text and "full" in text


def test_help_exits_0(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    assert "demo" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["demo", "7"], "invalid choice"),
        (["demo", "x"], "expected a whole number"),
        (["--n", "0"], "must be at least 1"),
        (["demo", "2", "--rule", "bogus"], "invalid choice"),
        (["demo", "5", "--c", "nan"], "finite number"),
        (["--bogus"], "unrecognized arguments"),
    ],
)
def test_bad_arguments_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["demo", "2", "--k", "0"], "k (drafted tokens per round) must be an integer 1..64"),
        (["demo", "2", "--k", "65"], "1..64"),
        (["demo", "1", "--ctx", "z"], "--ctx must be a token name"),
        (["demo", "1", "--ctx", "9"], "index 0..5"),
        (["demo", "2", "--n", "1000000000"], "n must be an integer"),
    ],
)
def test_value_errors_print_error_and_exit_2(argv, message, capsys):
    assert main(argv, out=io.StringIO()) == 2
    err = capsys.readouterr().err
    assert "error: " in err and message in err and "Traceback" not in err


def test_value_error_subprocess_has_no_traceback():
    r = subprocess.run([sys.executable, "-m", "specviz", "demo", "2", "--k", "0"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "error: k" in r.stderr and "Traceback" not in r.stderr


def test_ctx_by_name_or_index():
    assert run("demo", "1", "--ctx", "b") == run("demo", "1", "--ctx", "1")
    assert "Row 'b'" in run("demo", "1", "--ctx", "b")


def test_seeded_output_is_deterministic():
    assert run("demo", "2", "--n", "3000", "--seed", "5") == run("demo", "2", "--n", "3000",
                                                                 "--seed", "5")


def test_format_table_aligns():
    rows = [{"name": "a", "x": 0.5, "s": 1.0}, {"name": "long", "x": 12.25, "s": 3.5714}]
    text = format_table(rows, [("name", "name", "s"), ("x", "value", ".2f"),
                               ("s", "speedup", lambda v: f"{v:.3f}x")])
    lines = text.splitlines()
    assert len({len(s) for s in lines}) == 1  # every line the same width
    assert lines[2].split() == ["a", "0.50", "1.000x"]
    assert lines[3].split() == ["long", "12.25", "3.571x"]
    assert lines[2].index("0.50") + 4 == lines[3].index("12.25") + 5  # numbers right-aligned
    assert lines[2].index("a") == lines[3].index("long")  # text left-aligned
    assert format_table(rows[:1], [("missing", "m", ".2f")]).splitlines()[-1].strip() == "-"
