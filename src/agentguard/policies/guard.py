"""ToolCallGuard: the online stage of VeriGuard. Intercept a tool call, extract the policy's arguments,
evaluate the verified policy, record the decision, and let an enforcement strategy act.

Strategies (from :mod:`agentguard.core.strategies`, under the paper's names): task termination ``TT``
(:class:`~agentguard.core.strategies.Stop`), action blocking ``AB`` (:class:`Block`), tool execution halt
``TEH`` (:class:`HaltTool`) and collaborative re-planning ``CRP`` (:class:`Replan`); ``"CRP+TEH"`` is the
paper's hybrid (re-plan up to N times, then halt the tool).

Guarantees:
- fail closed: an extractor or policy that raises, times out, returns garbage or gets arguments outside its
  precondition yields a blocking verdict (``on_error``, REJECT by default), never ALLOW;
- a tool no binding covers is refused unless ``unknown_tool="allow"`` (in code and in configuration alike);
- every decision, allowed or not, is written to the audit sink (time, call, arguments, policy id, version
  and digest, verdict, reason).

From configuration (``agentguard.toml`` ``[[guards]]`` table, type ``policy``), :meth:`ToolCallGuard.from_config`
is the one builder: the library, the CLI and the service all build the same guard from the same table.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..core.canonical import canonical_name, name_forms, written_forms
from ..core.enforcement import Enforcement, Outcome
from ..core.errors import InputError, PolicyError
from ..core.guard import BaseGuard, fail_closed
from ..core.limits import time_limit
from ..core.loading import EXTRACTOR, built, load_callable, verified_required
from ..core.strategies import Block, HaltTool, Replan, Stop, strategy
from ..core.types import Context, Decision, ToolCall, Verdict
from .audit import AuditRecord, AuditSink
from .extract import ArgumentExtractor, SpecExtractor
from .library import extractor as library_extractor
from .library import library_path
from .model import Policy, PolicyResult, load_policy

_log = logging.getLogger("agentguard.policies")

__all__ = ["AB", "CRP", "PolicyBinding", "TEH", "TT", "ToolCallGuard", "strategy"]

TT = Stop
AB = Block
TEH = HaltTool
CRP = Replan


@dataclass
class PolicyBinding:
    """A policy, the extractor that feeds it, and the tools it governs (``"*"`` = every tool)."""

    policy: Policy
    extractor: ArgumentExtractor
    tools: tuple[str, ...] = ("*",)

    def __post_init__(self) -> None:
        for t in self.tools:  # exact names: "transfer_*" covered no tool, and unknown_tool="allow" let it through
            if not isinstance(t, str) or not t.strip() or (t != "*" and any(c in t for c in "*?[]")):
                raise InputError(f"policy binding: tool {t!r} is not a tool name (tools are exact names, or '*' "
                                 "for every tool; a glob is not expanded here and would cover nothing)")
        self._canonical_tools = frozenset(canonical_name(t) for t in self.tools)
        self._written_tools = frozenset(self.tools)

    def covers(self, tool: str) -> bool:
        """Whether this binding governs ``tool``: names compared in canonical form, in every form a namespaced
        name answers to (:func:`agentguard.core.canonical.name_forms`: ``bank__transfer_funds`` is the upstream
        tool ``transfer_funds`` an MCP proxy prefixed; a policy restricts, so any form brings the tool under it)."""
        return "*" in self.tools or not self._canonical_tools.isdisjoint(name_forms(tool))

    def names(self, tool: str) -> bool:
        """Whether this binding names ``tool`` as written (:func:`~agentguard.core.canonical.written_forms`): what a
        grant needs, since a framework runs the tool its exact name finds (``READ_FILE`` is another tool)."""
        return "*" in self.tools or not self._written_tools.isdisjoint(written_forms(tool))


def _as_call(proposal: Any) -> ToolCall:
    if isinstance(proposal, ToolCall):
        return proposal
    if isinstance(proposal, Mapping):
        return ToolCall.from_dict(proposal)
    action = getattr(proposal, "action", None)
    if isinstance(action, ToolCall):
        return action
    raise InputError(f"ToolCallGuard checks tool calls, got {type(proposal).__name__}")


class ToolCallGuard(BaseGuard):
    """Gate every tool call with verified policies (a :class:`~agentguard.core.guard.Guard`).

    ``check(context, call) -> Verdict`` decides; ``enforce(context, call) -> Outcome`` also applies the
    strategy. Every binding that covers the tool must allow; the first denial decides.
    """

    inline_safe = property(lambda self: not self._slow)  # no slow (LLM) extractor: fine on an event loop

    def __init__(
        self,
        bindings: Iterable[PolicyBinding],
        *,
        strategy: Enforcement | str = "AB",
        audit: AuditSink | None = None,
        name: str = "verified-policy",
        deny: Decision | str = Decision.REJECT,
        on_error: Decision | str = Decision.REJECT,
        unknown_tool: str = "deny",
    ) -> None:
        self.bindings = list(bindings)
        if not self.bindings:
            raise InputError("ToolCallGuard needs at least one PolicyBinding")
        self.strategy = globals()["strategy"](strategy) if isinstance(strategy, str) else strategy
        self.audit = audit
        self.audit_errors = 0      # audit records that could not be written (each also logged)
        self.name = name
        self.deny = Decision.parse(deny)
        self.on_error = Decision.parse(on_error)
        if not self.deny.refuses or not self.on_error.refuses:
            raise InputError("deny and on_error must be blocking decisions (REJECT, ESCALATE or HALT)")
        if unknown_tool not in ("deny", "allow"):
            raise InputError("unknown_tool must be 'deny' or 'allow'")
        self.unknown_tool = unknown_tool
        self._slow = any(getattr(b.extractor, "slow", False) for b in self.bindings)

    @property
    def grant_facts(self) -> frozenset[str]:
        """The context facts its extractors read as grants (a shipped extractor's ``GRANT_FACTS``, e.g. the
        grounding extractor's ``prompt_lower``): a service takes them from its own records, never from the
        request (:mod:`agentguard.server.facts`)."""
        out: set[str] = set()
        for b in self.bindings:
            out.update(getattr(b.extractor, "grant_facts", ()) or ())
        return frozenset(out)

    #: the keys of a configuration table that :meth:`from_config` reads
    CONFIG_KEYS = ("arguments", "constants", "deny", "extractor", "fields", "name", "on_error", "policy",
                   "require_verified", "strategy", "timeout_s", "tools", "unknown_tool", "verified_digest")

    @classmethod
    def from_config(cls, params: Mapping[str, Any]) -> "ToolCallGuard":
        """A guard over one verified policy from plain configuration values (a ``[[guards]]`` table).

        - ``policy``: a shipped policy name (``mind2web_sc``) or a policy file path;
        - ``verified_digest``: the ``Policy.digest`` of the source Nagini proved; a file whose content
          differs refuses to load (PolicyError), so only the exact verified code runs; with ``require_verified``
          (this key, ``[stack] require_verified = true`` or the service's setting) a policy without one refuses too;
        - the arguments, by ONE of: ``fields`` (declarative :class:`~agentguard.policies.FieldRule` tables),
          ``arguments`` (policy parameter = tool-call argument name) with ``constants`` (parameter = fixed
          value), or ``extractor`` (a shipped policy's extractor by name, or ``"module:attribute"`` of a class
          with ``extract`` or a function annotated to return one: nothing else is called). Rules must cover exactly the policy's parameters (checked here);
        - ``tools`` (default every tool), ``strategy`` (``AB``), ``deny`` and ``on_error`` (``reject``),
          ``unknown_tool`` (``deny``: a tool no policy covers is refused), ``name``
          (default ``policy:<id>@<version>``), ``timeout_s`` (per evaluation, 0.05).
        """
        if not isinstance(params, Mapping):
            raise InputError(f"policy guard: expected a table of parameters, got {type(params).__name__}")
        unknown = set(params) - set(cls.CONFIG_KEYS)
        if unknown:
            raise InputError(f"policy guard: unknown key(s) {', '.join(sorted(map(str, unknown)))} "
                             f"(expected {', '.join(cls.CONFIG_KEYS)})")
        if "policy" not in params:
            raise InputError("policy guard: missing 'policy' (a shipped policy name or a policy file)")
        if not isinstance(params.get("strategy", "AB"), str):  # plain values only: not a strategy object
            raise InputError(f"policy guard: strategy must be a strategy's name (AB, TT, ...), got "
                             f"{type(params['strategy']).__name__} {params['strategy']!r}")
        require = params.get("require_verified", False)
        if not isinstance(require, bool):
            raise InputError(f"policy guard: require_verified must be true or false, got {require!r}")
        pol = _configured_policy(params["policy"], params.get("verified_digest"), params.get("timeout_s", 0.05),
                                 require or verified_required())
        tools = params.get("tools", ("*",))
        if isinstance(tools, str):
            tools = (tools,)
        if not isinstance(tools, (list, tuple)) or not tools or not all(isinstance(t, str) for t in tools):
            raise InputError(f"policy guard: tools must be a non-empty list of tool names, got {tools!r}")
        binding = PolicyBinding(pol, _configured_extractor(pol, params), tuple(tools))
        return cls([binding], strategy=params.get("strategy", "AB"),
                   name=params.get("name") or f"policy:{pol.id}@{pol.version}",
                   deny=params.get("deny", Decision.REJECT), on_error=params.get("on_error", Decision.REJECT),
                   unknown_tool=params.get("unknown_tool", "deny"))

    def __repr__(self) -> str:
        pols = ", ".join(f"{b.policy.id}@{b.policy.version}" for b in self.bindings)
        return f"<ToolCallGuard {self.name!r} [{pols}] strategy={getattr(self.strategy, 'name', self.strategy)}>"

    def _record(self, context: Context, call: ToolCall, args: dict, policy: Policy | None, verdict: Verdict,
                code: int | None, seconds: float) -> None:
        if self.audit is None:
            return
        try:
            self.audit.write(AuditRecord(
                time=time.time(), run_id=context.run_id, call=call.to_dict(), arguments=args,
                policy_id=policy.id if policy else "", policy_version=policy.version if policy else "",
                policy_digest=policy.digest if policy else "", decision=verdict.decision.name,
                reason=verdict.reason, code=code, seconds=seconds, guard=self.name,
            ))
        except Exception as exc:  # noqa: BLE001 - a failing audit sink must not turn into an ALLOW or a crash
            self.audit_errors += 1   # the decision stands; the lost record is counted and logged
            _log.warning("audit sink %s failed for %s (%s): %s: %s", type(self.audit).__name__, call.name,
                         verdict.decision.name, type(exc).__name__, exc)

    def check(self, context: Context, proposal: Any) -> Verdict:
        raw = _as_call(proposal)
        if len(raw.name) > 1024:  # namespace forms are read from the first 4096 characters only: refused unread
            v = Verdict(self.on_error, f"a tool name of {len(raw.name)} characters (at most 1024)", self.name)
            self._record(context, raw, {}, None, v, None, 0.0)
            return v
        # rules see the canonical tool name (Book_Hotel, "book_hotel ", rent-car -> book_hotel, rent_car); a
        # namespaced name is read as every tool it may be (name_forms: bank__transfer_funds is bank_transfer_funds
        # and the upstream transfer_funds an MCP proxy prefixed), and every reading must allow
        readings = [(f, b) for f in name_forms(raw.name) for b in self.bindings if b.covers(f)]
        if self.unknown_tool != "allow" and not any(b.names(raw.name) for b in self.bindings):
            readings = []  # it only folds to a bound tool (READ_FILE, read-file): another tool, unknown, refused
        if not readings:
            name = canonical_name(raw.name)
            if self.unknown_tool == "allow":
                v = Verdict.allow(self.name, f"no policy covers tool {name}")
            else:
                v = Verdict(self.deny, f"no policy covers tool {name} (unknown tools are refused)", self.name)
            self._record(context, raw, {}, None, v, None, 0.0)
            return v
        verdict = None
        for form, b in readings:
            call = raw if form == raw.name else ToolCall(form, raw.arguments, raw.call_id)
            t0 = time.perf_counter()
            args: dict[str, Any] = {}
            try:
                args = b.extractor.extract(call, context)
                res = b.policy.evaluate(args)
                if type(res) is not PolicyResult:
                    raise PolicyError(f"policy {b.policy.id} answered {type(res).__name__}, not a PolicyResult")
            except Exception as exc:  # noqa: BLE001 - fail closed on anything
                v = fail_closed(self.name, exc, self.on_error)
                v = Verdict(v.decision, f"policy {b.policy.id} could not decide: {type(exc).__name__}: {exc}",
                            self.name, details={"policy": b.policy.id, "version": b.policy.version,
                                                "error": type(exc).__name__, "arguments": args})
                self._record(context, raw, args, b.policy, v, None, time.perf_counter() - t0)
                return v
            dt = time.perf_counter() - t0
            details = {"policy": b.policy.id, "version": b.policy.version, "code": res.code, "arguments": args}
            if res.allow is not True:  # only an exact True allows (a truthy non-bool denies)
                v = Verdict(self.deny, res.reason, self.name, {"seconds": dt}, details=details)
                self._record(context, raw, args, b.policy, v, res.code, dt)
                return v
            verdict = Verdict(Decision.ALLOW, res.reason, self.name, {"seconds": dt}, details=details)
            self._record(context, raw, args, b.policy, verdict, res.code, dt)
        assert verdict is not None
        return verdict

    def enforce(self, context: Context, proposal: Any) -> Outcome:
        """Decide and apply the enforcement strategy (what happens to the agent)."""
        try:
            verdict = self.check(context, proposal)
        except Exception as exc:  # noqa: BLE001 - e.g. a proposal that is not a tool call
            verdict = fail_closed(self.name, exc, self.on_error)
        return self.strategy.apply(verdict, context, proposal)


def _configured_policy(policy: Any, verified_digest: Any, timeout_s: Any, require_verified: bool = False) -> Policy:
    """Load a policy named in configuration: a shipped name (no folder, no suffix) or a file path; with
    ``require_verified``, only when ``verified_digest`` pins it (checked before the file is read)."""
    if not isinstance(policy, (str, os.PathLike)) or not os.fspath(policy):
        raise InputError(f"policy guard: 'policy' must be a shipped policy name or a file path, got {policy!r}")
    timeout_s = time_limit(timeout_s, "policy guard: timeout_s")  # nan/inf would switch the policy's tick off
    if require_verified and verified_digest is None:
        raise PolicyError(f"policy {os.fspath(policy)!r}: no verified_digest pinned and require_verified is on: "
                          "refusing to load an unverified policy (pin the Policy.digest Nagini proved)")
    path = Path(policy)
    if not path.suffix and len(path.parts) == 1:
        path = library_path(str(policy))
    # the one loader checks the pin (and require_verified) on the source it reads, before compiling it
    return load_policy(path, timeout_s=float(timeout_s), verified_digest=verified_digest)


def _configured_extractor(pol: Policy, params: Mapping[str, Any]) -> ArgumentExtractor:
    """The extractor a configuration table names: ``extractor``, or rules from fields/arguments/constants."""
    ruled = [k for k in ("fields", "arguments", "constants") if k in params]
    if "extractor" in params:
        if ruled:
            raise InputError(f"policy guard: give either 'extractor' or {', '.join(ruled)}, not both")
        name = params["extractor"]
        if not isinstance(name, str) or not name:
            raise InputError("policy guard: 'extractor' must be a shipped policy name or 'module:attribute'")
        if ":" not in name:
            return library_extractor(name)
        made = load_callable(name, "policy guard: extractor", EXTRACTOR)  # declared to build one: not "os:abort"
        return built(made, "policy guard: extractor", EXTRACTOR)  # and what it built has extract
    fields: dict[str, Any] = {}
    for key, rule in (("fields", None), ("arguments", "argument"), ("constants", "constant")):
        table = params.get(key, {})
        if not isinstance(table, Mapping):
            raise InputError(f"policy guard: '{key}' must be a table (policy parameter = ...)")
        for param, v in table.items():
            if param in fields:
                raise InputError(f"policy guard: parameter {param!r} is given twice (fields/arguments/constants)")
            if rule is None and isinstance(v, Mapping) and v.get("from") == "tool" and isinstance(v.get("map"), Mapping):
                v = {**v, "map": _canonical_map(v["map"], param)}  # map keys compared as canonical tool names
            fields[param] = v if rule is None else ({"from": rule, "key": v} if rule == "argument"
                                                    else {"from": rule, "value": v})
    missing = [p for p in pol.param_names if p not in fields]
    extra = [f for f in fields if f not in pol.param_names]
    if missing or extra:
        raise InputError(f"policy {pol.id}: fields must match its schema {list(pol.param_names)}"
                         + (f"; missing {missing}" if missing else "") + (f"; unknown {extra}" if extra else ""))
    return SpecExtractor(fields)


def _canonical_map(table: Mapping[str, Any], param: str) -> dict[str, Any]:
    """A tool-name map with canonical keys; two spellings of one name with different values are refused."""
    out: dict[str, Any] = {}
    for k, v in table.items():
        c = canonical_name(k)
        if c in out and out[c] != v:
            raise InputError(f"policy guard: field {param!r}: map names {k!r} twice (as {c!r}) with different values")
        out[c] = v
    return out
