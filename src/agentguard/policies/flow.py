"""Flow rules: a declarative rule over a run's sequence of calls ("read the inbox, then e-mail a stranger").

A :class:`FlowRule` says: a call of a tool matching ``then`` is refused when, among the ``within`` calls
before it in the same run (all of them when ``within`` is not given), there is a call of a tool matching
``after`` whose result carries ``label`` (``untrusted``, ``trusted`` or ``any``), and, when
``recipients`` names argument(s), one recipient of the ``then`` call is outside the user's grant::

    [[guards]]
    type = "flow-rules"
    name = "flows"
    trusted_tools = ["get_user_info", "list_contacts"]   # every other tool's result is untrusted

    [[guards.rules]]
    name = "inbox-then-external-mail"
    after = "read_*"
    label = "untrusted"
    then = "send_*"
    recipients = ["to", "cc", "bcc"]
    grant = ["*@example.com"]        # recipients the user allows; a run fact may add more: grant_fact
    within = 5

Names are canonical (the one pattern compiler of every rule type, :func:`~.rules.tool_patterns`):
``Read-Inbox``, ``read_inbox `` and ``READ\\u200bINBOX`` are ``read_inbox``; argument names are found the
same way (``To`` is ``to``); recipients are compared NFKC, without invisible characters, case folded, a
``mailto:`` prefix dropped. A recipient argument counts at any depth (``{"headers": {"Bcc": ...}}``, a JSON text
holding one: :func:`recipient_values`), as a mail library reads the message built from the arguments. A ``then`` call with none of the ``recipients`` arguments has an unknown
recipient: outside the grant (fail closed).

History is the run's own trace (``context.trace``: the :class:`~agentguard.core.pipeline.Pipeline`'s
per-run state in its RunMemory, filled by ``Pipeline.record``), not a second store: every recorded tool
call counts, refused ones too (conservative: a refused read may have been retried in another form).
Calls decided together in one model turn (``decide_turn``) see the history before the turn: a read and a send
proposed side by side are judged as the send's author knew them, before the read returned. ``within`` is a
window: an agent that makes ``within`` other calls in between is past it; leave it out
where that matters. Labels come from ``trusted_tools`` (an allow-list: an undeclared tool's result is
untrusted) or from a ``labeler(call, observation) -> "trusted" | "untrusted"`` (a provenance ledger).

The same rules become Pro2Guard predicates (:mod:`.flow_spec`), so a learned DTMC can predict them.
"""

from __future__ import annotations

import email.policy
import email.utils
import numbers
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..core.canonical import canonical_name, name_forms, strip_invisible
from ..core.errors import InputError
from ..core.guard import BaseGuard
from ..core.types import Context, Decision, Step, ToolCall, Verdict
from .arguments import as_text, keyed_values, leaves
from .rules import as_tool_call, grant_patterns, tool_patterns

__all__ = ["FlowGuard", "FlowRule", "LABELS", "guard_tables", "history", "named_tables", "proposed_call", "recipient_form", "recipient_values"]

LABELS = ("any", "trusted", "untrusted")
Labeler = Callable[[ToolCall, Any], str]
_RULE_KEYS = {"name", "after", "then", "label", "within", "recipients", "grant", "grant_fact", "decision"}


def recipient_form(value: Any) -> str:
    """A recipient as compared with the grant: NFKC, invisible characters removed, case folded, trimmed,
    ``mailto:`` dropped."""
    s = strip_invisible(str(value)).casefold().strip()
    return s[7:].strip() if s.startswith("mailto:") else s


_ANGLE = re.compile(r"<([^<>]*)>")


def _addresses(text: str) -> list[str]:
    """The recipients one string names, as a mail system splits it: at ``,`` and ``;``, the address in
    ``<...>`` of ``Name <addr>``, then at whitespace (each word must be granted)."""
    out = []
    for part in re.split(r"[,;]", text):
        m = _ANGLE.search(part)
        part = m.group(1) if m else part
        out += [w.strip("\"'") for w in part.split() if w.strip("\"'")]
    return out or [text]


def _grant_pattern(glob: str) -> re.Pattern[str]:
    """A grant glob as a regex whose ``*`` and ``?`` never match ``@``, a separator or whitespace: ``*@example.com``
    does not grant ``eve@evil.com@example.com``."""
    parts = ["[^@,;\\s]*" if c == "*" else "[^@,;\\s]" if c == "?" else re.escape(c) for c in glob]
    return re.compile("".join(parts))


def _readings(text: str) -> list[str]:
    """The addresses one recipient string names, read both ways a grant must hold for: as :func:`_addresses` splits
    the compared form, and as the mail library parses the header (``email.utils.getaddresses`` on the text as
    given, on its compared form and on the header ``EmailMessage`` makes of it, encoded words decoded):
    ``eve[a@example.com`` matches ``*@example.com`` as text but the library mails ``eve``, and
    ``=?utf-8?q?eve=40evil.com?=\\a@example.com`` mails ``eve@evil.com``. An empty parse (``a@example.com; b@example.com`` yields one between the two) mails nobody."""
    form = recipient_form(text)
    try:  # the header as the message holds it: RFC 2047 encoded words decoded (=?utf-8?q?eve=40evil.com?=)
        header = str(email.policy.default.header_factory("to", text))
    except Exception:  # noqa: BLE001 - a header the library cannot read: nobody can say who it mails
        return ["<unreadable header>"]
    parsed = [recipient_form(a) for one in (text, form, header)  # one by one: joined, a "(" in one hides the next
              for _, a in email.utils.getaddresses([one]) if a.strip()]
    found = list(dict.fromkeys(_addresses(form) + parsed))
    return list(dict.fromkeys(found + [r for a in found for r in _routed(a)]))


def _routed(address: str) -> list[str]:
    """Every address a receiving mail server routes ``address`` on to, hop by hop (each hop receives the mail): the
    percent hack ``bob%evil.com@example.com`` (Postfix's ``allow_percent_hack``, on by default, rewrites it to
    ``bob@evil.com`` at example.com's own server, which relays it) and a UUCP bang path ``evil.com!bob@example.com``
    (``bob@evil.com``); [] for a plain address."""
    local, at, _ = address.rpartition("@")
    if not at or not ("%" in local or "!" in local):
        return []
    if "%" in local:
        user, _, domain = local.rpartition("%")
        nxt = f"{user}@{domain}"
    else:
        host, _, user = local.partition("!")
        nxt = f"{user}@{host}"
    return [nxt, *_routed(nxt)]


def _leaves(value: Any, depth: int = 0) -> list[str]:
    if isinstance(value, str):
        return [value]
    if depth > 8:
        return ["<nested too deep>"]  # an unreadable recipient is outside every grant
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in _leaves(v, depth + 1)]
    if isinstance(value, (list, tuple, set, frozenset)):
        return [s for v in value for s in _leaves(v, depth + 1)]
    value = as_text(value)
    if value is None or isinstance(value, (str, numbers.Number)):
        return [] if value is None else [value if isinstance(value, str) else str(value)]
    return ["<unreadable value>"]  # an object whose text only its class knows: outside every grant


_LINE_BREAKS = re.compile(r"\r|\\+[rn]")  # a line break, or one escaped in a JSON text (at any depth)
_HEADER_LINE = re.compile(r"^[ \t]*([A-Za-z][A-Za-z0-9_-]{0,40})[ \t]*:(.*)$", re.M)


def _recipient_key(key: str, names: frozenset[str]) -> bool:
    """``key`` (canonical) names a recipient: one of ``names`` or its RFC 5322 resent form (``Resent-To``:
    ``smtplib.send_message`` sends to the Resent-To/Cc/Bcc addresses instead when the message has a Resent-Date)."""
    return key in names or (key.startswith("resent_") and key[7:] in names)


def recipient_values(arguments: Mapping[str, Any], names: frozenset[str]) -> list[Any] | None:
    """Every value a mail tool may send to: held under a key whose canonical name is in ``names`` (or its
    ``Resent-`` form) at any depth of the arguments (:func:`~.arguments.keyed_values`: mappings, lists, JSON
    texts), and every header line ``Name: value`` of such a name naming an address (an ``@``) inside a multi-line
    string, its breaks read raw or JSON-escaped (a raw message, or a subject a tool pastes into one:
    ``"hi\r\nBcc: eve@evil.com"``; a forwarded mail's
    quoted ``To:`` line counts too), as the mail library reads the message built from them:
    ``{"to": "a@example.com", "headers": {"Bcc": "eve@evil.com"}}`` sends to eve too (``smtplib.send_message``
    takes the recipients from the To, Cc and Bcc headers). None when the arguments cannot be read whole (too deep,
    too many values): outside every grant."""
    keyed = keyed_values(arguments, lambda key: _recipient_key(key, names))
    texts = leaves(arguments)
    if keyed is None or texts is None:
        return None
    return keyed + [m.group(2) for t in texts if "\n" in t or "\r" in t or "\\" in t
                    for m in _HEADER_LINE.finditer(_LINE_BREAKS.sub("\n", t))
                    if "@" in m.group(2) and _recipient_key(canonical_name(m.group(1)), names)]


@dataclass
class FlowRule:
    """One sequence rule (see the module docstring). ``decision`` is what a violation yields."""

    name: str
    after: Sequence[str] | str
    then: Sequence[str] | str
    label: str = "any"
    within: int | None = None
    recipients: Sequence[str] = ()
    grant: Sequence[str] = ()
    grant_fact: str | None = None
    decision: Decision | str = Decision.REJECT
    _after: re.Pattern[str] = field(init=False, repr=False)
    _then: re.Pattern[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        what = f"flow rule {self.name!r}"
        if not isinstance(self.name, str) or not self.name:
            raise InputError("a flow rule needs a non-empty 'name'")
        if self.label not in LABELS:
            raise InputError(f"{what}: label must be one of {', '.join(LABELS)}, not {self.label!r}")
        if self.within is not None and (isinstance(self.within, bool) or not isinstance(self.within, int)
                                        or self.within < 1):
            raise InputError(f"{what}: within must be a positive number of calls, not {self.within!r}")
        after, then = tool_patterns(self.after, f"{what}.after"), tool_patterns(self.then, f"{what}.then")
        if after is None or then is None:
            raise InputError(f"{what}: needs 'after' and 'then' tool patterns")
        self._after, self._then = after, then
        if isinstance(self.recipients, str):
            self.recipients = [self.recipients]
        if isinstance(self.grant, str):
            self.grant = [self.grant]
        self._recipients = frozenset(canonical_name(r) for r in self.recipients)
        self._grant = [_grant_pattern(recipient_form(g)) for g in self.grant]
        self.decision = Decision.parse(self.decision)
        if not self.decision.refuses:
            raise InputError(f"{what}: decision must block (REJECT, ESCALATE or HALT), not {self.decision.name}")

    @classmethod
    def from_config(cls, d: Mapping[str, Any], where: str = "rules[0]") -> "FlowRule":
        if not isinstance(d, Mapping):
            raise InputError(f"{where}: a flow rule is a table with name, after, then")
        unknown = sorted(set(d) - _RULE_KEYS)
        if unknown:
            raise InputError(f"{where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(_RULE_KEYS))})")
        try:
            return cls(**dict(d))
        except TypeError as exc:
            raise InputError(f"{where}: {exc}") from None

    # -- the parts of the condition -------------------------------------------------------------------
    def triggers(self, call: ToolCall, label: str) -> bool:
        """``call`` (whose result carries ``label``) is an ``after`` call of this rule."""
        return any(self._after.match(f) for f in name_forms(call.name)) and self.label in ("any", label)

    def armed(self, calls: Sequence[ToolCall], labels: Sequence[str]) -> int | None:
        """Index of the latest trigger among the last ``within`` calls, or None."""
        start = 0 if self.within is None else max(0, len(calls) - self.within)
        for i in range(len(calls) - 1, start - 1, -1):
            if self.triggers(calls[i], labels[i]):
                return i
        return None

    def outside(self, call: ToolCall, facts: Mapping[str, Any]) -> list[str]:
        """The recipients of ``call`` outside the grant (``["<no recipient argument>"]`` when it has none of
        the ``recipients`` arguments); empty when the rule names no recipient arguments."""
        if not self._recipients:
            return []
        values = recipient_values(call.arguments, self._recipients)
        if values is None:
            return ["<recipients nested too deep or too many>"]
        if not values:
            return ["<no recipient argument>"]
        grant = list(self._grant)
        extra = facts.get(self.grant_fact) if self.grant_fact else None
        if extra is not None:
            grant += [_grant_pattern(recipient_form(g)) for g in ([extra] if isinstance(extra, str) else extra)]
        out = []
        for v in values:
            for s in _leaves(v):
                if any(not any(g.fullmatch(a) for g in grant) for a in _readings(s)):
                    out.append(s)
        return out

    def violation(self, calls: Sequence[ToolCall], labels: Sequence[str], call: ToolCall,
                  facts: Mapping[str, Any] | None = None) -> str | None:
        """Why ``call``, proposed after ``calls`` (their results labelled ``labels``), violates this rule."""
        if not any(self._then.match(f) for f in name_forms(call.name)):  # a restriction: any namespace form
            return None
        outside = self.outside(call, facts or {})
        if self._recipients and not outside:
            return None
        i = self.armed(calls, labels)
        if i is None:
            return None
        to = f" to {', '.join(repr(o) for o in outside[:3])} (outside the grant)" if outside else ""
        lab = f" ({labels[i]})" if self.label != "any" else ""
        return f"flow rule {self.name!r}: {call.name}{to} after {calls[i].name}{lab}, {len(calls) - i} call(s) ago"


def history(trace_steps: Iterable[Any]) -> list[tuple[ToolCall, Any]]:
    """``(call, observation)`` of every tool call recorded in a run's trace steps, in order."""
    out = []
    for s in trace_steps:
        call = as_tool_call(s.action) if isinstance(s, Step) else as_tool_call(s)
        if call is not None:
            out.append((call, s.observation if isinstance(s, Step) else None))
    return out


def named_tables(items: Iterable[Any], kind: type, build: Callable[[Any, str], Any], owner: str, what: str,
                 table: str) -> list[Any]:
    """The named rules of a guard's configuration: each item as given (an instance of ``kind``) or built from its
    table (``build(raw, "owner.table[i]")``); at least one, names unique (:class:`InputError` otherwise)."""
    out = [x if isinstance(x, kind) else build(x, f"{owner}.{table}[{i}]") for i, x in enumerate(items)]
    if not out:
        raise InputError(f"{owner}: give at least one {what}")
    names = [getattr(x, "name", "") for x in out]
    if len(set(names)) != len(names):
        raise InputError(f"{owner}: {what} names must be unique, got {names}")
    return out


def guard_tables(params: Mapping[str, Any], guard_type: str, key: str, known: set[str]) -> list[Any]:
    """The list of rule tables ``params[key]`` of a ``[[guards]]`` table of ``guard_type`` whose keys must be among
    ``known`` (:class:`InputError` otherwise)."""
    unknown = sorted(set(params) - known)
    if unknown:
        raise InputError(f"unknown key(s) {', '.join(unknown)} for {guard_type} (known: {', '.join(sorted(known))})")
    items = params.get(key)
    if not isinstance(items, list):
        raise InputError(f"{guard_type} needs '{key}', a list of [[guards.{key}]] tables")
    return items


def proposed_call(proposal: Any, guard: str) -> ToolCall | Verdict:
    """The tool call a guard of calls judges in ``proposal``, or its verdict when there is none: ALLOW for text or
    a step without a call (nothing to judge), REJECT for anything it cannot read."""
    call = as_tool_call(proposal)
    if call is not None:
        return call
    if isinstance(proposal, (str, Step)):
        return Verdict.allow(guard, "not a tool call")
    return Verdict(Decision.REJECT, f"cannot read a proposal of type {type(proposal).__name__}", guard)


class FlowGuard(BaseGuard):
    """Flow rules over the run's recorded calls (see the module docstring); the strictest violation wins."""

    inline_safe = True  # pure and fast: a few glob matches per recorded call

    def __init__(self, rules: Sequence[FlowRule | Mapping[str, Any]], *, name: str = "flow-rules",
                 trusted_tools: Sequence[str] | str = (), labeler: Labeler | None = None) -> None:
        self.name = name
        self.rules = named_tables(rules, FlowRule, FlowRule.from_config, name, "flow rule", "rules")
        self._trusted = grant_patterns(trusted_tools, f"{name}.trusted_tools")  # trust is a grant: as written
        self._labeler = labeler

    @classmethod
    def from_config(cls, params: Mapping[str, Any]) -> "FlowGuard":
        """``{"rules": [...], "trusted_tools": [...], "name": ...}`` (a ``[[guards]]`` table of type
        ``flow-rules``)."""
        rules = guard_tables(params, "flow-rules", "rules", {"rules", "trusted_tools", "name"})
        return cls(rules, name=str(params.get("name", "flow-rules")), trusted_tools=params.get("trusted_tools", ()))

    @property
    def grant_facts(self) -> frozenset[str]:
        """The run facts (``context.metadata`` keys) this guard reads as a grant: every rule's ``grant_fact``.
        A service takes them from its own records, never from the request (:mod:`agentguard.server.facts`)."""
        return frozenset(r.grant_fact for r in self.rules if r.grant_fact)

    def label(self, call: ToolCall, observation: Any = None) -> str:
        """``trusted`` or ``untrusted``: the label of ``call``'s result."""
        if self._labeler is not None:
            lab = self._labeler(call, observation)
            if lab not in ("trusted", "untrusted"):
                raise InputError(f"{self.name}: labeler returned {lab!r}, not 'trusted' or 'untrusted'")
            return str(lab)
        return "trusted" if self._trusted(call.name) else "untrusted"  # Get-Balance is not get_balance

    def violations(self, calls: Sequence[ToolCall], observations: Sequence[Any], call: ToolCall,
                   facts: Mapping[str, Any] | None = None) -> list[tuple[FlowRule, str]]:
        """Every rule ``call`` violates after ``calls`` (with their results ``observations``)."""
        labels = [self.label(c, o) for c, o in zip(calls, observations)]
        found = []
        for r in self.rules:
            why = r.violation(calls, labels, call, facts)
            if why:
                found.append((r, why))
        return found

    def check(self, context: Context, proposal: Any) -> Verdict:
        call = proposed_call(proposal, self.name)
        if isinstance(call, Verdict):
            return call
        past = history(context.trace.steps)
        found = self.violations([c for c, _ in past], [o for _, o in past], call, context.metadata)
        if not found:
            return Verdict.allow(self.name)
        rule, why = max(found, key=lambda x: Decision.parse(x[0].decision).strictness)
        return Verdict(Decision.parse(rule.decision), why, self.name,
                       details={"violations": [w for _, w in found], "rules": [r.name for r, _ in found]})
