"""README "Measured results" (the compact headline table) and docs/results.md (the full table): every
figure in the "ours" and "strongest baseline" columns appears in the JSON file(s) the row names (rounded as printed; a percentage, a ms or a us figure may be the JSON's
fraction or seconds scaled), and every row names a JSON file that exists. The "paper" column holds the
papers' own figures (theirs, in their convention) and is not looked up."""

from __future__ import annotations

import glob
import json
import math
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
NUM = re.compile(r"(?<![\w.^/,])(\d[\d,]*(?:\.\d+)?(?:e-?\d+)?)(?![\d^]|[a-wyzA-Z_])")
SCALES = (1.0, 100.0, 1e3, 1e6, 0.01, 1e-3)


def _section() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("## Measured results")
    end = text.index("\n## ", start + 5)
    return text[start:end]


def _table(text: str) -> list[dict[str, str]]:
    lines = [ln for ln in text.splitlines() if ln.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in lines[2:]]
    return [dict(zip(header, r)) for r in rows]


def _rows() -> list[dict[str, str]]:
    return _table(_section()) + _table((ROOT / "docs" / "results.md").read_text())


def _files(cell: str) -> list[tuple[Path, list[str]]]:
    """``name.json`` or ``name.json#key1+key2`` (only those top-level keys are looked in)."""
    out = []
    for name in re.findall(r"`([^`]+)`", cell):
        for part in name.split(","):
            part = part.strip()
            if ".json" not in part:
                continue
            keys = part.split("#", 1)[1].split("+") if "#" in part else []
            part = part.split(".json")[0] + ".json"
            out += [(Path(p), keys) for p in sorted(glob.glob(str(RESULTS / part)))]
    return out


def _leaves(obj, acc: list[float]) -> list[float]:
    if isinstance(obj, bool):
        return acc
    if isinstance(obj, (int, float)):
        if math.isfinite(obj):
            acc.append(float(obj))
    elif isinstance(obj, dict):
        for v in obj.values():
            _leaves(v, acc)
    elif isinstance(obj, list):
        for v in obj:
            _leaves(v, acc)
    elif isinstance(obj, str):
        for m in NUM.findall(obj):  # numbers inside JSON strings (e.g. a command's arguments) count too
            try:
                acc.append(float(m.replace(",", "")))
            except ValueError:
                pass
    return acc


def _figures(cell: str) -> list[str]:
    cell = re.sub(r"`[^`]*`", "", cell)
    return NUM.findall(cell)


def _matches(fig: str, leaves: list[float]) -> bool:
    x = float(fig.replace(",", ""))
    if "e" in fig:
        return any(abs(v - x) <= 0.05 * abs(x) for v in leaves)
    d = len(fig.split(".")[1]) if "." in fig else 0
    for v in leaves:
        for s in SCALES:
            if round(v * s, d) == x or (d == 0 and abs(v * s - x) < 0.5):
                return True
    return False


ROWS = _rows()


def test_the_table_has_the_columns_the_issue_asks_for():
    assert ROWS, "no Measured results table"
    for table in (_table(_section()), _table((ROOT / "docs" / "results.md").read_text())):
        for col in ("what", "convention", "ours", "strongest baseline on our data", "paper (theirs)", "file"):
            assert col in table[0], col


def test_the_readme_table_is_compact_and_points_to_the_full_one():
    assert len(_table(_section())) <= 12
    assert "docs/results.md" in _section()


def _fresh_row() -> dict[str, str]:
    rows = [r for r in _table(_section()) if "control_driving_fresh.json" in r["file"]]
    assert len(rows) == 1, "the README quotes the fresh-start protocol in one row"
    return rows[0]


def test_the_fresh_start_row_quotes_its_intervals_and_they_recompute():
    """The intervals printed for text-only ReGuard and the privileged critic are the JSON's, and the JSON's
    intervals are what a bootstrap of its own per-start outcomes gives (the oracle: the same function on
    the same outcomes, same seed)."""
    from agentguard.bench.driving_fresh import bootstrap_ci

    main = json.loads((RESULTS / "control_driving_fresh.json").read_text())["main"]
    row = " ".join(_fresh_row().values())
    k = main["paired_on_starts"]
    for name in ("reguard", "privileged"):
        g = main["guards"][name]
        fail = main["outcomes"][name]["failure"]
        assert g["failure_ci95"] == pytest.approx(list(bootstrap_ci(fail, seed=main["eval_seed"])))
        if name == "privileged" and k < main["episodes"]:
            g = main["on_prefix"][name]
        lo, hi = g["failure_ci95"]
        assert f"{lo:.2f}-{hi:.2f}" in row, (name, lo, hi)
    assert f"{k:,}" in row or str(k) in row  # the number of starts the text-only critic was scored on
    assert str(main["eval_seed"]) in row


@pytest.mark.parametrize("row", ROWS, ids=[r["what"][:40] for r in ROWS])
def test_every_figure_is_in_the_json_the_row_names(row):
    files = _files(row["file"])
    assert files, f"row names no existing JSON: {row['file']}"
    leaves: list[float] = []
    for f, keys in files:
        data = json.loads(f.read_text())
        if keys:
            assert all(k in data for k in keys), f"{f.name} lacks {keys}"
            data = [data[k] for k in keys]
        _leaves(data, leaves)
    missing = [fig for col in ("ours", "strongest baseline on our data") for fig in _figures(row.get(col, ""))
               if not _matches(fig, leaves)]
    assert not missing, f"{row['what']}: figures not in {[f.name for f, _ in files]}: {missing}"


def test_the_checker_catches_a_figure_that_is_not_in_the_json():
    leaves = _leaves({"a": 0.1509, "b": [0.0064, 1234.5], "c": "--splits 100"}, [])
    assert _matches("0.151", leaves) and _matches("15.1", leaves) and _matches("0.006", leaves)
    assert _matches("1,234.5", leaves) and _matches("100", leaves)
    assert not _matches("0.152", leaves) and not _matches("0.969", leaves)
