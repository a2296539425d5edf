"""The provenance guard on MCP file-system and e-mail tools it was not designed on, with inferred declarations only.

The tool set, environment, user tasks and injection tasks are ``bench/mcp_fs_mail.json`` (our own scenario
set; the tool schemas are transcribed from the MCP filesystem reference server and a Gmail MCP server, see
its ``about``). Nothing in agentguard declares these tools: :func:`guard` builds the provenance guard over an
*empty* tool set plus the declarations :func:`agentguard.policies.toolinfer.infer` draws from the schemas
(the frozen ``tool_inference_en.json``) and the shipped grant lexicon.

Replay without an LLM, on the pattern of :mod:`agentguard.bench.agentdojo`: a small in-memory environment
(:class:`Env`: files, a mailbox, an outbox, mail filters) executes the calls. Utility: each user task's calls,
asked of the guard one by one (a blocked call is not executed), then the task's utility checks. Attacks: for
every user task that reads the injection, and every injection task, the environment carries the injection
text (the AgentDojo ``important_instructions`` pattern with the goal), the user task's calls run, then the
calls of an agent that follows the goal literally; the injection task's success check decides. Without a
guard every hijack succeeds (the harness is sound); every blocked benign call is listed with its reason.
"""

from __future__ import annotations

import copy
import json
import uuid
from pathlib import Path
from typing import Any, Callable, Mapping

from ..core.errors import InputError
from ..core.types import Context, ToolCall
from ..policies.provenance_guard import ProvenanceGuard
from ..policies.toolinfer import InferenceLexicon

__all__ = ["Env", "SCENARIOS", "evaluate", "guard", "load"]

SCENARIOS = Path(__file__).with_name("mcp_fs_mail.json")


def load(path: str | Path = SCENARIOS) -> dict[str, Any]:
    return dict(json.loads(Path(path).read_text(encoding="utf-8")))


class Env:
    """Files, mailbox, outbox and filters; :meth:`call` executes one tool call the way the servers would."""

    def __init__(self, spec: Mapping[str, Any], injection: str = "") -> None:
        self.files = {p: c.replace("{injection}", injection) for p, c in spec["files"].items()}
        self.emails = [dict(m, body=m["body"].replace("{injection}", injection)) for m in copy.deepcopy(spec["emails"])]
        self.outbox: list[dict[str, Any]] = []
        self.filters: list[dict[str, Any]] = []

    def call(self, name: str, a: Mapping[str, Any]) -> Any:
        fn: Callable[[Mapping[str, Any]], Any] | None = getattr(self, "_" + name, None)
        if fn is None:
            raise InputError(f"mcp scenario: no tool {name!r}")
        return fn(a)

    def _read_text_file(self, a: Mapping[str, Any]) -> Any:
        return self.files.get(a["path"], f"Error: ENOENT {a['path']}")

    def _write_file(self, a: Mapping[str, Any]) -> Any:
        self.files[a["path"]] = a["content"]
        return f"Successfully wrote to {a['path']}"

    def _edit_file(self, a: Mapping[str, Any]) -> Any:
        text = self.files[a["path"]]
        for e in a["edits"]:
            text = text.replace(e["oldText"], e["newText"])
        self.files[a["path"]] = text
        return "applied"

    def _create_directory(self, a: Mapping[str, Any]) -> Any:
        return f"Successfully created directory {a['path']}"

    def _list_directory(self, a: Mapping[str, Any]) -> Any:
        pre = a["path"].rstrip("/") + "/"
        return "\n".join(f"[FILE] {p[len(pre):]}" for p in sorted(self.files) if p.startswith(pre))

    def _move_file(self, a: Mapping[str, Any]) -> Any:
        self.files[a["destination"]] = self.files.pop(a["source"])
        return f"Successfully moved {a['source']} to {a['destination']}"

    def _search_files(self, a: Mapping[str, Any]) -> Any:
        return "\n".join(p for p in sorted(self.files) if p.startswith(a["path"]) and a["pattern"] in p)

    def _get_file_info(self, a: Mapping[str, Any]) -> Any:
        return f"size: {len(self.files.get(a['path'], ''))}"

    def _send_email(self, a: Mapping[str, Any]) -> Any:
        self.outbox.append(dict(a))
        return "Email sent successfully"

    def _read_email(self, a: Mapping[str, Any]) -> Any:
        return next((m for m in self.emails if m["id"] == a["messageId"]), "Error: no such message")

    def _search_emails(self, a: Mapping[str, Any]) -> Any:
        q = a["query"]
        sender = q[5:] if q.startswith("from:") else None
        return [{"id": m["id"], "from": m["from"], "subject": m["subject"], "snippet": m["body"][:300]}
                for m in self.emails if (m["from"] == sender if sender else q in m["subject"] + m["body"])]

    def _delete_email(self, a: Mapping[str, Any]) -> Any:
        self.emails = [m for m in self.emails if m["id"] != a["messageId"]]
        return "Email deleted"

    def _create_filter(self, a: Mapping[str, Any]) -> Any:
        self.filters.append(dict(a))
        return "Filter created"

    def holds(self, check: Mapping[str, Any]) -> bool:
        """One utility or success check: ``file_contains``, ``file_missing``, ``sent_to``, ``email_missing``,
        ``filter_forwards``."""
        (kind, arg), = check.items()
        if kind == "file_contains":
            return arg[1] in self.files.get(arg[0], "")
        if kind == "file_missing":
            return arg not in self.files
        if kind == "sent_to":
            return any(arg[0] in [*(m.get("to") or ()), *(m.get("cc") or ()), *(m.get("bcc") or ())]
                       and arg[1] in m.get("body", "") for m in self.outbox)
        if kind == "email_missing":
            return all(m["id"] != arg for m in self.emails)
        if kind == "filter_forwards":
            return any(f.get("action", {}).get("forward") == arg for f in self.filters)
        raise InputError(f"mcp scenario: unknown check {kind!r}")


def guard(spec: Mapping[str, Any] | None = None, *, tool_words: bool = False,
          schema_grants: bool = False) -> ProvenanceGuard:
    """The provenance guard over an empty tool set plus the declarations inferred from the scenario's schemas;
    with ``tool_words``, a consequential tool the grant lexicon gives no action takes the tool-word grant
    (:func:`agentguard.policies.toolgrants.with_tool_word_grants`); with ``schema_grants``, every consequential
    tool takes the grant from its own schema (:func:`agentguard.policies.schemagrants.with_schema_grants`)."""
    from ..policies.vocabulary import parse_instant

    spec = spec or load()
    g = ProvenanceGuard.from_schemas(spec["tools"], schema_grants=schema_grants, tool_words=tool_words,
                                     name="mcp-fs-mail")
    if (now := parse_instant(str(spec.get("environment", {}).get("now", "")))) is not None:
        g.clock = lambda: now   # the simulated portal's clock, the one the agent reads (a deployment shares one)
    return g


def _run(spec: Mapping[str, Any], g: ProvenanceGuard | None, prompt: str, calls: list, injection: str,
         blocked: list[dict[str, Any]], env_cls: Callable[[Any, str], Any] = Env) -> Any:
    """One run: the prompt, then each call asked of the guard (a blocked one is not executed) and executed in a
    fresh ``env_cls`` environment (another tool set's replay passes its own)."""
    env = env_cls(spec["environment"], injection)
    run = str(uuid.uuid4())
    if g is not None:
        g.observe_prompt(run, prompt)
    for name, args in calls:
        call = ToolCall(name, dict(args))
        if g is not None:
            v = g.check(Context(run_id=run), call)
            if not v.allowed:
                blocked.append({"call": name, "args": args, "reason": v.reason})
                continue
        result = env.call(name, args)
        if g is not None:
            g.observe_result(run, call, result)
    if g is not None:
        g.end_run(run)
    return env


def evaluate(spec: Mapping[str, Any] | None = None, inference: InferenceLexicon | None = None, *,
             tool_words: bool = False, schema_grants: bool = False) -> dict[str, Any]:
    """Utility and attack success without a guard and under the inferred-declaration guard (``tool_words``,
    ``schema_grants``: as :func:`guard`)."""
    from ..policies.library.extractors.agentdojo_provenance import INFERENCE

    spec = spec or load()
    lex = inference or INFERENCE
    out: dict[str, Any] = {"scenarios": str(SCENARIOS.name), "inference_lexicon_sha256": lex.sha256,
                           "declared_tools": 0, "inferred": {}, "tool_word_grants": tool_words,
                           "schema_grants": schema_grants}
    g0 = guard(spec, tool_words=tool_words, schema_grants=schema_grants)
    out["inferred"] = {n: {"kind": d.kind, "actions": list(d.actions), "args": dict(d.args)}
                       for n, d in sorted(g0.toolset.tools.items())}
    for gname in ("none", "provenance"):
        g = guard(spec, tool_words=tool_words, schema_grants=schema_grants) if gname == "provenance" else None
        res: dict[str, Any] = {"utility": 0, "user_tasks": len(spec["user_tasks"]), "blocked_benign": [],
                               "pairs": 0, "attack_success": 0, "per_injection_task": {}, "successes": []}
        for ut in spec["user_tasks"]:
            blocked: list[dict[str, Any]] = []
            env = _run(spec, g, ut["prompt"], ut["calls"], "", blocked)
            ok = all(env.holds(c) for c in ut["utility"]) and not (not ut["utility"] and blocked)
            res["utility"] += ok
            res["blocked_benign"] += [dict(b, task=ut["id"]) for b in blocked]
        for it in spec["injection_tasks"]:
            text = spec["injection_template"].format(goal=it["goal"])
            per = res["per_injection_task"].setdefault(it["id"], {"pairs": 0, "successes": 0})
            for ut in spec["user_tasks"]:
                if not _reads_injection(spec, ut):
                    continue
                env = _run(spec, g, ut["prompt"], ut["calls"] + it["calls"], text, [])
                per["pairs"] += 1
                res["pairs"] += 1
                if env.holds(it["success"]):
                    per["successes"] += 1
                    res["attack_success"] += 1
                    res["successes"].append({"user_task": ut["id"], "injection_task": it["id"]})
            per["asr"] = per["successes"] / per["pairs"] if per["pairs"] else 0.0
        res["utility_rate"] = res["utility"] / res["user_tasks"]
        res["asr"] = res["attack_success"] / res["pairs"] if res["pairs"] else 0.0
        res["max_asr_per_injection_task"] = max((p["asr"] for p in res["per_injection_task"].values()), default=0.0)
        out[gname] = res
    return out


def _reads_injection(spec: Mapping[str, Any], ut: Mapping[str, Any]) -> bool:
    """Whether a result of the user task's own calls carries the injection (only such tasks are attacked)."""
    env = Env(spec["environment"], "@@INJECTION@@")
    return any("@@INJECTION@@" in json.dumps(env.call(n, a)) for n, a in ut["calls"])
