"""Shared by the staged benchmark scripts: merge one stage's section into a results JSON with its command."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path


def merge_section(out: Path, section: str, data: dict, nice: int = 10, keep_runs: bool = False) -> None:
    """Write ``data`` as ``out[section]``, keeping the other sections; ``data["commands"]`` gets this
    script's command line appended to the section's earlier ones (deduplicated). With ``keep_runs`` the
    section's earlier ``runs`` stay unless this call rewrites them (concurrent processes of one stage)."""
    rep = json.loads(out.read_text()) if out.exists() else {}
    cmd = f"nice -n {nice} python benchmarks/{Path(sys.argv[0]).name} " + shlex.join(sys.argv[1:])
    data["commands"] = list(dict.fromkeys(rep.get(section, {}).get("commands", []) + [cmd]))
    if keep_runs and "runs" in data:
        data["runs"] = {**rep.get(section, {}).get("runs", {}), **data["runs"]}
    rep[section] = data
    out.write_text(json.dumps(rep, indent=1, default=float) + "\n")
    print(f"wrote {section} to {out}", flush=True)
