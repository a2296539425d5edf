"""network_cache (session 26): a reading is kept while every file it read is as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentguard.policies import network_cache
from agentguard.policies.network_cache import read_cached
from agentguard.policies.network_files import read_limited, recording


def _reader(path: Path, calls: list[str]):
    def parse() -> tuple[tuple[str, ...], tuple[str, ...]]:
        calls.append(str(path))
        inc = path.with_suffix(".inc")
        return ((read_limited(str(path)) or "") + (read_limited(str(inc)) or ""),), ()
    return parse


def test_kept_while_every_file_read_is_unchanged(tmp_path: Path) -> None:
    f = tmp_path / "a.cfg"
    f.write_text("x")
    calls: list[str] = []
    assert read_cached(str(f), "t", _reader(f, calls)) == (("x",), ())
    assert read_cached(str(f), "t", _reader(f, calls)) == (("x",), ()) and len(calls) == 1
    f.with_suffix(".inc").write_text("y")   # (missing when first read: its appearance is a change)
    assert read_cached(str(f), "t", _reader(f, calls)) == (("xy",), ()) and len(calls) == 2
    f.with_suffix(".inc").write_text("zz")
    assert read_cached(str(f), "t", _reader(f, calls)) == (("xzz",), ())
    f.unlink()
    assert read_cached(str(f), "t", _reader(f, calls)) is None


def test_an_outer_recording_sees_a_hits_files(tmp_path: Path) -> None:
    f = tmp_path / "b.cfg"
    f.write_text("x")
    read_cached(str(f), "t", _reader(f, []))
    with recording() as files:
        read_cached(str(f), "t", _reader(f, []))
    assert str(f) in [p for p, _ in files] and str(f.with_suffix(".inc")) in [p for p, _ in files]


def test_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(network_cache, "CACHE_SIZE", 3)
    for i in range(8):
        f = tmp_path / f"{i}.cfg"
        f.write_text(str(i))
        read_cached(str(f), "t", _reader(f, []))
    assert len(network_cache._CACHE) <= 3
