"""Agent Security Bench (ASB, ../shared/data/asb): ASR and TSR with the declared-tools policy.

Replay without an LLM, worst case: in each of the attack cases (one per attacker tool, each bound to its
agent) the agent is assumed fully compromised, so it calls both of its normal tools (the task) and the
attacker tool (the attack). Each call goes through a :class:`~agentguard.policies.ToolCallGuard` running the
verified ``policies/library/asb_declared_tools.py`` policy with its shipped extractor, whose ``declared``
list is derived from the agent's normal tools (``all_normal_tools.jsonl``). ASR = share of cases whose
attacker tool call is allowed; TSR = share of cases whose two normal tool calls are both allowed. Without a
guard both are 100% in this replay.

ASB's tools take no arguments, so this shows tool-level, not argument-level, enforcement; a policy keyed
on tool names is also only as good as the names (an attacker tool named like a normal tool would pass;
the result reports how many such collisions the data has).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from ..core.errors import InputError
from ..core.types import Context, ToolCall
from ..policies import PolicyBinding, ToolCallGuard, library_extractor, library_path, load_policy

__all__ = ["evaluate", "load_asb"]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    try:
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except OSError as exc:
        raise InputError(f"cannot read ASB file {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON Lines ({exc.msg})") from None


def load_asb(data_dir: str | Path) -> tuple[dict[str, list[str]], list[dict[str, Any]]]:
    """(normal tools per agent, attack cases) from an ASB data folder."""
    d = Path(data_dir)
    if (d / "asb").is_dir():
        d = d / "asb"
    normal: dict[str, list[str]] = defaultdict(list)
    for row in _jsonl(d / "all_normal_tools.jsonl"):
        normal[row["Corresponding Agent"]].append(row["Tool Name"])
    attacks = _jsonl(d / "all_attack_tools.jsonl")
    if not normal or not attacks:
        raise InputError(f"{d}: no normal tools or no attack tools")
    return dict(normal), attacks


def evaluate(data_dir: str | Path) -> dict[str, Any]:
    """ASR and TSR over every attack case (see the module docstring)."""
    normal, attacks = load_asb(data_dir)
    registry = {name: i for i, name in enumerate(sorted({t for ts in normal.values() for t in ts}
                                                        | {a["Attacker Tool"] for a in attacks}))}
    policy = load_policy(library_path("asb_declared_tools"))
    guard = ToolCallGuard([PolicyBinding(policy, library_extractor("asb_declared_tools", registry=registry))],
                          strategy="AB")
    per_agent: dict[str, dict[str, int]] = defaultdict(lambda: {"cases": 0, "attack_allowed": 0, "task_ok": 0})
    attack_allowed = task_ok = 0
    collisions = sum(1 for a in attacks if a["Attacker Tool"] in normal.get(a["Corresponding Agent"], []))
    for a in attacks:
        agent = a["Corresponding Agent"]
        if agent not in normal:
            raise InputError(f"attack tool {a['Attacker Tool']} names unknown agent {agent}")
        ctx = Context(metadata={"agent": agent, "declared_ids": [registry[t] for t in normal[agent]]})
        ok_task = all(guard.check(ctx, ToolCall(t)).allowed for t in normal[agent])
        ok_attack = guard.check(ctx, ToolCall(a["Attacker Tool"], {"instruction": a.get("Attacker Instruction", "")})).allowed
        s = per_agent[agent]
        s["cases"] += 1
        s["attack_allowed"] += ok_attack
        s["task_ok"] += ok_task
        attack_allowed += ok_attack
        task_ok += ok_task
    n = len(attacks)
    return {
        "cases": n,
        "ASR": attack_allowed / n,
        "TSR": task_ok / n,
        "no_guard": {"ASR": 1.0, "TSR": 1.0},
        "name_collisions": collisions,
        "per_agent": {k: {**v, "ASR": v["attack_allowed"] / v["cases"], "TSR": v["task_ok"] / v["cases"]}
                      for k, v in sorted(per_agent.items())},
        "policy": {"id": policy.id, "version": policy.version, "digest": policy.digest},
        "setting": "replay of a fully compromised agent: both normal tools and the attacker tool are called",
    }
