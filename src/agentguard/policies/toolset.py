"""Tool declarations per tool set: what each tool does, what each argument is, which result fields a source vouches for.

A tool set's policy file (JSON; the AgentDojo one is ``policies/library/agentdojo_tools.json``) declares per
tool (:class:`ToolDecl`):

- ``kind``: ``read`` (no side effect), ``fetch`` (opens a URL), ``write``, ``send`` (leaves the user),
  ``account`` (changes the user's account or a workspace's membership), ``delete``;
- ``actions``: the grants (:mod:`agentguard.policies.capabilities`) that authorise it;
- ``args``: the role of each argument (a target such as ``account``/``email``/``file``, an ``amount``, a
  day or time, an account value, ``text`` content, or an unchecked ``query``);
- ``results``: the fields of its result that are the user's own records or system metadata, each with the
  role it can vouch for; ``whole``: the role of a bare-value result; ``private``: the user's private fields
  and the words a request must use to send them. **Every other field of every result is third-party**:
  there is no default that trusts a field by its name in any tool.

A tool the file does not declare gets :meth:`ToolSet.generic`, a fail-closed rule over its name and
argument names: a read verb (``get``, ``list``, ...) without a URL argument is a read, a read verb with a URL
argument is a fetch (a ``get_url`` carrying a secret is not a free read), any other verb is a side effect
whose actions are the lexicon's actions naming that verb; an argument whose name the tool set's declared
arguments never used gets the role ``unknown`` (grounded only by the user's own words); its results are
third-party.
"""

from __future__ import annotations

import re
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..core.canonical import canonical_name
from ..core.errors import InputError
from .capabilities import GrantLexicon

__all__ = ["BOOLEAN", "DOCUMENTS", "DOCUMENT_VERBS", "Facts", "KINDS", "OPERATION_ARGS", "READ_VERBS", "ToolDecl", "ToolSet", "read_has_effect"]

#: the closed set of a boolean parameter (ToolDecl.choices)
BOOLEAN = ("true", "false")
KINDS = ("read", "fetch", "write", "send", "account", "delete")
READ_VERBS = frozenset({"get", "read", "search", "list", "check", "find", "show", "view", "lookup", "query",
                        "count", "fetch", "browse", "download", "retrieve"})
#: verbs that read only when the name's object is a document: open_file, load_page read; open_door,
#: load_funds act (an allow-list of objects: any other object makes them a consequential write)
DOCUMENT_VERBS = frozenset({"open", "load"})
DOCUMENTS = frozenset({"file", "files", "document", "documents", "doc", "docs", "page", "pages", "webpage", "url",
                        "link", "email", "emails", "message", "messages", "note", "notes", "folder", "directory",
                        "dir", "tab", "image", "pdf", "report", "text"})
#: argument names (their words joined) that choose what a call does: an HTTP method, an SQL statement, a
#: command. A tool taking one, or an amount, has no fixed effect, so a read verb in its name does not make it
#: a read (``get(method="POST", endpoint="/transfer")``, ``query(sql="DROP TABLE users")``).
OPERATION_ARGS = frozenset({"method", "httpmethod", "verb", "action", "operation", "op", "sql", "sqlquery",
                            "statement", "command", "cmd", "commands", "script", "mutation", "exec", "execute"})
_SEND_VERBS = frozenset({"send", "post", "share", "pay", "transfer", "email", "mail", "message", "forward",
                         "reply", "publish", "upload", "submit", "wire", "notify", "invite"})
_DELETE_VERBS = frozenset({"delete", "remove", "cancel", "erase", "drop", "destroy", "purge", "kill", "revoke"})
_CONTENT_NAMES = frozenset({"body", "content", "text", "message", "subject", "title", "description", "note",
                            "comment", "summary"})


def read_has_effect(args: Mapping[str, str]) -> bool:
    """Whether a call whose name reads takes an argument that chooses an effect (:data:`OPERATION_ARGS`, any
    spelling: ``HTTP-Method``, ``sqlQuery``) or moves an ``amount``: then it is not a free read."""
    return any(re.sub(r"[^a-z0-9]", "", str(a).casefold()) in OPERATION_ARGS or r == "amount"
               for a, r in args.items())


@dataclass
class Facts:
    """The verified policy's facts for one call, with the grant and the reason behind them."""

    kind: int
    target_trust: int
    requested: bool
    value_trust: int
    grant: str = ""
    why: str = ""

    def as_args(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class ToolDecl:
    """One tool's declaration (see the module docstring)."""

    kind: str
    actions: tuple[str, ...] = ()
    args: Mapping[str, str] = field(default_factory=dict)
    results: Mapping[str, str] = field(default_factory=dict)
    whole: str = ""
    private: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    select: tuple[str, ...] = ()
    declared: bool = True
    inferred: bool = False
    # closed-set parameters: the schema's ``enum`` values, or :data:`BOOLEAN` for a boolean; a value is checked
    # against the request where the request states one (agentguard.policies.dataflow), and is never a target
    choices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # amount parameters whose schema says they are in a currency's minor unit (agentguard.policies.platformids)
    minor: frozenset[str] = frozenset()
    # values the tool's schema offers a parameter (const, default, "use 'primary'"): an argument value exactly
    # equal to one comes from the schema, not from the run (agentguard.policies.schemafacts)
    constants: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def role(self, arg: str) -> str:
        return self.args.get(arg, "unknown")


@dataclass(frozen=True)
class ToolSet:
    """A tool set's declarations and role classes (see the module docstring)."""

    name: str
    tools: Mapping[str, ToolDecl]
    roles: Mapping[str, frozenset[str]]
    lexicon: GrantLexicon | None = None

    @classmethod
    def from_config(cls, data: Mapping[str, Any], lexicon: GrantLexicon | None = None) -> "ToolSet":
        tools = {}
        for name, spec in (data.get("tools") or {}).items():
            kind = spec.get("kind")
            if kind not in KINDS:
                raise InputError(f"tool set: tool {name!r} has kind {kind!r}; expected one of {', '.join(KINDS)}")
            tools[str(name)] = ToolDecl(
                kind, tuple(spec.get("actions", ())), dict(spec.get("args", {})), dict(spec.get("results", {})),
                str(spec.get("whole", "")), {k: tuple(v) for k, v in spec.get("private", {}).items()},
                tuple(spec.get("select", ())),
                choices={k: tuple(map(str, v)) for k, v in spec.get("choices", {}).items()})
        roles = {k: frozenset(v) for k, v in (data.get("roles") or {}).items()}
        for need in ("targets", "ids", "amounts", "days", "account_values", "content", "unchecked", "members",
                     "named_ids"):
            roles.setdefault(need, frozenset())
        return cls(str(data.get("toolset", "tools")), tools, roles, lexicon)

    @classmethod
    def load(cls, path: str | Path, lexicon: GrantLexicon | None = None) -> "ToolSet":
        from ..core.loading import read_json_file  # strict: a duplicate key or NaN is refused

        return cls.from_config(read_json_file(path, "tool set"), lexicon)

    def restricted(self, tools: Iterable[str], lexicon: GrantLexicon | None = None) -> "ToolSet":
        """Only the declarations of ``tools`` (the others fall to :meth:`generic`), with ``lexicon``."""
        keep = set(tools)
        return ToolSet(self.name, {k: v for k, v in self.tools.items() if k in keep}, self.roles,
                       lexicon or self.lexicon)

    def arg_roles(self) -> dict[str, str]:
        """Argument name -> role, over every declared tool (the first declaration wins)."""
        out: dict[str, str] = {}
        for d in self.tools.values():
            for a, r in d.args.items():
                out.setdefault(a, r)
        return out

    def decl(self, tool: str, arg_names: Iterable[str] = ()) -> ToolDecl:
        """The declaration of ``tool``, or the generic fail-closed one. The guard reads a call by its canonical
        name (:func:`~agentguard.core.canonical.canonical_name`: ``update-event`` is read as ``update_event``), so
        a declaration is found by that form too, where exactly one declared name has it."""
        d = self.tools.get(tool)
        if d is None:
            d = self._canonical.get(tool)
        return d if d is not None else self.generic(tool, arg_names)

    @functools.cached_property
    def _canonical(self) -> dict[str, ToolDecl | None]:
        """Each declared tool by its canonical name (None where two declared names share one: neither)."""
        out: dict[str, ToolDecl | None] = {}
        for n, t in self.tools.items():
            c = canonical_name(n)
            out[c] = None if c in out else t
        return out

    def generic(self, tool: str, arg_names: Iterable[str] = ()) -> ToolDecl:
        words = [w for w in tool.casefold().replace("-", "_").split("_") if w]
        verb = words[0] if words else ""
        known = self.arg_roles()
        args = {}
        for a in arg_names:
            role = known.get(a)
            if role is None:
                role = "text" if a.casefold() in _CONTENT_NAMES else "url" if "url" in a.casefold() else "unknown"
            args[a] = role
        has_url = any(r == "url" for r in args.values())
        reads = verb in READ_VERBS or (verb in DOCUMENT_VERBS and bool(DOCUMENTS & set(words[1:])))
        if reads and not read_has_effect(args):
            return ToolDecl("fetch" if has_url else "read", (), args, declared=False)
        kind = "delete" if verb in _DELETE_VERBS else "send" if verb in _SEND_VERBS or has_url else "write"
        actions: list[str] = []
        if self.lexicon is not None:
            for act, (verbs, objects) in self.lexicon.actions.items():
                if verb in verbs and (not objects or any(o in words for o in objects)):
                    actions.append(act)
        return ToolDecl(kind, tuple(actions), args, declared=False)
