"""A deterministic tool-name / argument rule guard.

:class:`ToolRuleGuard` is the simplest honest guard: tool names matched against glob patterns
(``fnmatch``) and argument values matched against regular expressions. It is what the adapters are
tested with (alongside :class:`~agentguard.core.GuardStack` and, when installed, the verified-policy
``ToolCallGuard``), and it is useful on its own as a first line of a stack: deny ``delete_*``,
escalate ``transfer_funds``, require ``send_email.to`` to end in ``@example.com``.

Order of rules (the strictest matching rule wins, as in a stack): ``halt`` patterns give HALT,
``escalate`` patterns ESCALATE, ``deny`` patterns and an ``allow`` list that does not name the tool
give ``decision`` (REJECT by default), then each argument rule gives its own decision; a refusal by name at
the strictest decision any rule here gives is returned unread (``details['violations']``: the name's only) when
its arguments are plain JSON (:func:`.commandrules._plain`: their reading cannot fail); others are read. A
proposal that is readable but not a tool call (a text chunk, a Step without a ToolCall action) is ALLOWED: this
guard has nothing to say about it. Anything else (None, an unknown object, a malformed tool-call
dict, a number) cannot be read and gets ``decision`` (fail closed; ``agentguard.testing.check_guard``).

Canonical forms (:mod:`agentguard.core.canonical`, issue 13): tool names and name patterns are compared
in canonical form (NFKC, case folded, zero-width characters and surrounding whitespace removed, ``-``,
``_`` and spaces alike), so ``Book-Hotel `` matches a rule for ``book_hotel``; argument names are looked up
the same way. Two structured rules decide on what the arguments *mean*, not on their spelling:

- ``allow_commands`` (the allow list for a shell tool; default deny): every command that a command
  argument (``command``, ``cmd``, ``argv``, ``args``, ``script``, ``code``, ... see :data:`COMMAND_ARGS`;
  every string argument of a tool whose name is a shell) runs must match an entry. ``"ls"`` allows ``ls``
  with any arguments; ``"git status"`` allows ``git`` only with ``status`` as its first argument; a table
  ``{program = "find", args = [...], deny_flags = ["-delete", "-exec"]}`` names a program glob, leading
  arguments and flags it must not have (in any spelling, and refused whenever an argument is unknown).
  The program word must be bare (``./ls`` is not ``ls``). Commands are read with the bash grammar
  (:mod:`agentguard.policies.shell`): every simple command, pipeline, list, subshell, redirection,
  here-document and substitution, each program resolved through wrappers with their real option arity
  (``timeout``, ``env``, ``sudo``, ``xargs``, ``busybox``, ``find -exec``, ``bash -c`` payloads parsed
  again), and each of those programs must be allowed;
- ``unresolvable`` (REJECT by default, ESCALATE or HALT; never ALLOW): the decision for a command whose
  effect cannot be read statically: a parse error or text the parser skipped, a command word that is an
  expansion, substitution or glob, an unknown redirection or ``cd`` target, ``eval``/``source``/``alias``,
  a function definition, arithmetic on variables, a shell reading a script or standard input, an
  interpreter's inline code, a wrapper option of unknown arity, an assignment that changes what runs
  (``PATH``, ``BASH_ENV``, ``LD_PRELOAD``...), nesting beyond 8 levels, argument values that are neither
  strings nor argv lists. A substitution in an argument of a program that opens no operand (``echo
  "$(date)"``) is text; in a path position its value is unknown and meets every ``deny_paths`` glob;
- ``deny_commands``: entries like ``"rm -rf"`` (program ``rm`` with flags ``r`` and ``f`` in any
  spelling: ``-rf``, ``-fr``, ``-Rf``, ``-r -f``, ``--recursive --force``, or an unknown argument that
  could be one), ``"mkfs*"`` (any call of a program matching the glob) or ``"bash"``: a second layer;
- ``deny_paths``: globs matched against the canonical path (percent-decoded, backslashes as ``/``, ``.``,
  ``..`` and repeated slashes resolved, ``file:`` URLs whatever their host, Windows drive and UNC paths from
  their root, the magic links of ``/proc`` followed as the kernel walks them (``/proc/self/root/../etc``,
  ``/proc/1/cwd/..``, ``/dev/fd``), ``~user``, relative paths joined to every directory a ``cd`` may have
  moved to) of every argument value that could name a file, whatever the argument is called
  (:func:`~.arguments.path_values`: each is also read as the glob a tool may expand), every command argument
  and every redirection target; a shell glob that could match a denied path matches it:
  ``"/etc/shadow"`` also refuses ``//etc/shadow``, ``/etc/./shadow``, ``/tmp/%2e%2e/etc/shadow``,
  ``cat /etc/shad*w``; ``"../*"`` refuses a relative path that climbs out (``..\\x``, ``%2e%2e/x``).
  A rule ``~/x`` also names ``/root/x``, ``/home/*/x``, the other conventional homes and (first name literal) ``*/x``;
  a relative path is below an unknown working directory, which may be ``/`` (a container without a
  WORKDIR) or a home, so it is also checked as ``/path`` and as ``~/path`` (``etc/shadow`` meets
  ``/etc/shadow``; the price: ``du -sh *`` meets ``/root``); a command that reads, copies, moves or links a
  whole tree (``grep -r x ~``,
  ``cp -r /etc d``, ``tar czf o ~``, ``ln -s /etc e``) meets every rule anchored at ``/`` or ``~`` below it
  (relative and ``*/`` globs are not checked against trees: they would refuse every recursive command, so
  ``grep -r x .`` still reads a ``./.env``). A file tool's tree is read the same way: a search tool
  (:func:`~.writes.reads_trees`: ``search_files``, ``grep``, ``find_in_files``, or ``recursive=true``) reads below
  each directory its path arguments name (``search_files {"path": "/etc"}``), with a home's ``*`` one directory
  name there (``/home/u`` is above ``~/.ssh``, ``/home/u/proj`` is not). A path value is also read as a tool may
  decode it first (:mod:`.shell.paths`: lenient percent-decoding, ``$VAR``, UNC shares and 8.3 short names) and in
  any shape (:func:`~.arguments.path_values`: a list of pieces, an integer descriptor, an argument's name), joined
  to every directory the call names under any argument (:func:`~.arguments.base_dirs`), and as a directory a tool
  may list (:mod:`.reach`: ``list_dir ~/.aws`` names what ``~/.aws/*`` hides); with ``resolve_links``, also
  through the symbolic links that exist at decision time (:func:`~.reach.linked`).
- writes of files that configure what a program runs (:data:`~.shell.programs.CONFIG_FILES`: ``~/.gitconfig``,
  shell start-up files, ``.envrc``, ``*.pth``, ``~/.local/bin/*``, ``/etc/profile.d/*``...) are refused with the
  ``unresolvable`` decision whichever tool writes them: a command's redirection, ``cp``, ``tee``... (the shell
  analysis) and a file tool's path values (:mod:`.writes`: every tool but those that only read, decided fail closed
  from the name's verb or by ``read_only_tools``, globs naming exactly the readers), through one matcher
  (:func:`~.shell.model.configures`) on the same path spellings;
- the call's context: a ``cwd``-like argument (:data:`CWD_ARGS`) is a directory the command may start in
  (its relative paths are read against it too), an ``env``-like argument (:data:`ENV_ARGS`) is checked like
  assignments (``GIT_CONFIG_GLOBAL``, ``LD_PRELOAD``... are unresolvable), and a ``commands`` list
  (:data:`COMMAND_LISTS`) runs each element as a command. Literal ``deny_paths`` matches ignore case
  (case-insensitive file systems).

What the guard cannot see: what an allowed program does beyond the option tables it knows (``make`` and
``pytest`` run project code), the contents of files a command reads or runs, symbolic links and mounts
(path rules are lexical unless ``resolve_links``, and even then a link made after the decision), the environment
and working directory it starts in. Pair it with an OS sandbox.

An ``allow`` list makes the guard default-deny (a tool it does not name gets ``decision``): the shipped
examples use one, so an uncovered tool is refused. It grants the whole name as written (``read_file`` grants
neither ``Read-File``, another tool to a framework, nor ``read__file``, the tool ``file`` of an upstream ``read``:
:func:`grant_patterns`); a glob's ``*`` may still span ``__`` (``read_*``).
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..core.canonical import canonical_name, canonical_path, grant_name, name_forms
from ..core.errors import InputError
from ..core.guard import BaseGuard
from ..core.limits import refusing
from ..core.types import Context, Decision, Step, ToolCall, Verdict
from .arguments import (MAX_ENTRIES, MAX_NESTING, NAME_WORDS, PATH_ARGS, SEARCH_WORDS, TooDeep, base_dirs,
                        descriptors, keyed_values, leaves, named_entries, path_named, path_shaped, path_values,
                        readings, strings)
from .commandrules import _allowed_command, _analyse, _command_rule, _plain
from .shell import fnmatch_tokens, path_forms
from .shell.globs import fold_case
from .shell.programs import UNSAFE_ENV
from .reach import (GlobRules, TreeRules, casefolded, home_tokens, link_option, linked, listing_dirs, listing_regex,
                    rule_forms)
from .writes import config_write, reads_only, reads_trees

__all__ = ["ArgumentRule", "COMMAND_ARGS", "COMMAND_LISTS", "CWD_ARGS", "ENV_ARGS", "MAX_TOOL_NAME", "PATH_ARGS",
           "ToolRuleGuard", "as_tool_call", "grant_patterns", "tool_patterns"]

#: the longest tool name read (MCP allows 128 characters, OpenAI 64); longer is refused unread (name_forms reads 4096)
MAX_TOOL_NAME = 1024
#: argument names (canonical) whose values are shell commands (a string or an argv list)
COMMAND_ARGS = frozenset({"command", "cmd", "commands", "argv", "args", "arguments", "script", "code", "shell",
                          "command_line", "commandline", "cmdline", "shell_command", "exec", "run", "program"})
#: argument names (canonical) whose list value is a list of commands (each element runs), not one argv
COMMAND_LISTS = frozenset({"commands", "cmds", "scripts", "command_list", "steps", "lines"})
#: argument names (canonical) of the directory a tool runs its command in, and of the environment it sets
CWD_ARGS = frozenset({"cwd", "workdir", "working_dir", "working_directory", "workingdirectory", "chdir", "cd",
                      "dir", "directory", "cwd_path", "current_dir", "run_in", "in_dir"})
ENV_ARGS = frozenset({"env", "environment", "environ", "env_vars", "envs", "environment_variables", "extra_env"})
_SHELL_TOOLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "fish", "shell", "terminal", "run_shell", "exec",
                          "execute", "run_command", "bash_command", "shell_command", "python", "run_python",
                          "execute_command", "subprocess", "system", "powershell", "cmd"})


def as_tool_call(proposal: Any) -> ToolCall | None:
    """The ToolCall inside a proposal (a ToolCall, a Step whose action is one, or a dict with 'name')."""
    if isinstance(proposal, ToolCall):
        return proposal
    if isinstance(proposal, Step) and isinstance(proposal.action, ToolCall):
        return proposal.action
    if isinstance(proposal, Mapping) and isinstance(proposal.get("name"), str) and proposal.get("name"):
        return ToolCall.from_dict(proposal)
    return None


def _globs(patterns: Iterable[str] | str | None, what: str, form: Any = canonical_name) -> re.Pattern[str] | None:
    if patterns is None:
        return None
    if isinstance(patterns, str):
        patterns = [patterns]
    pats = list(patterns)
    for p in pats:
        if not isinstance(p, str) or not p:
            raise InputError(f"{what}: tool patterns must be non-empty strings, got {p!r}")
    if not pats:
        return None
    return re.compile("|".join(f"(?:{fnmatch.translate(form(p))})" for p in pats))


#: the one compiler of tool-name patterns (canonical globs, one regex) for every rule type: the secret-leak
#: guard's destinations and the flow rules (:mod:`.flow`) use it too
tool_patterns = _globs


def grant_patterns(patterns: Iterable[str] | str | None, what: str) -> Callable[[str], bool]:
    """The matcher of a rule that *grants* (allow list, trusted tools): the :func:`~agentguard.core.canonical.grant_name`
    form and the name as written both match (``READ_FILE``, full-width ``ｒead_file`` are other tools to a framework)."""
    folded, exact = _globs(patterns, what, grant_name), _globs(patterns, what, str)
    return lambda name: bool(folded and exact and folded.match(grant_name(name)) and exact.match(name))


def _regex(pattern: str | None, what: str) -> re.Pattern[str] | None:
    if pattern is None:
        return None
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise InputError(f"{what}: bad regular expression {pattern!r}: {exc}") from None


def _call_context(arguments: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """The directories a tool may run its command in (``cwd``...) and the unsafe environment names it sets."""
    cwds: list[str] = []
    unsafe: list[str] = []
    for key, value in arguments.items():
        k = canonical_name(key)
        if k in CWD_ARGS and isinstance(value, str) and value.strip():
            cwds.append(value)
        elif k in ENV_ARGS:
            names = (list(value) if isinstance(value, Mapping) else
                     [str(v).split("=", 1)[0] for v in value] if isinstance(value, (list, tuple)) else [])
            unsafe += [str(n) for n in names if not isinstance(n, str) or UNSAFE_ENV.fullmatch(n)]
    return cwds, unsafe


@dataclass
class ArgumentRule:
    """A rule on one argument of the tools matching ``tool`` (a glob).

    ``match``: the argument's string value must fully match this regex; ``forbid``: it must not
    contain a match of this regex; ``required``: a missing argument violates the rule (default: a
    missing argument is not checked). ``decision`` is what a violation yields. Values are read as the tool's
    framework may read them (:func:`~.arguments.readings`): ``forbid`` also sees the NFKC text and the number or
    boolean a string spells (``"1_000"``, ``"1e3"``, ``"0x3e8"``, ``"１０００"`` are ``1000``; ``"yes"``, ``"on"``
    are ``true``), ``match`` must hold for the text and its NFKC form.
    """

    tool: str
    arg: str
    match: str | None = None
    forbid: str | None = None
    required: bool = False
    decision: Decision | str = Decision.REJECT

    def __post_init__(self) -> None:
        what = f"argument rule {self.tool}.{self.arg}"
        if not self.tool or not self.arg:
            raise InputError("an argument rule needs 'tool' and 'arg'")
        if self.match is None and self.forbid is None and not self.required:
            raise InputError(f"{what}: give 'match', 'forbid' or 'required'")
        self.decision = refusing(self.decision, what)  # "allow" would make a violated rule let the call through
        self._tool = _globs(self.tool, what)
        self._match = _regex(self.match, what)
        self._forbid = _regex(self.forbid, what)

    def violation(self, call: ToolCall) -> str | None:
        """Why ``call`` violates this rule, or None. Every key that names the argument is checked, at any depth
        (:func:`~.arguments.keyed_values`: ``{"payment": {"iban": ...}}`` names ``iban`` to a tool that hands the
        object on; a JSON text holding one too), and a value
        that holds several (a list of recipients) is checked element by element: ``match`` must fully match
        each one (and there must be one), ``forbid`` must match none of them nor the whole value's text."""
        if not any(self._tool.match(f) for f in name_forms(call.name)):  # type: ignore[union-attr]
            return None  # any namespace form: an argument rule restricts
        want = canonical_name(self.arg)
        values = keyed_values(call.arguments, lambda k: k == want)  # nested too: {"payment": {"iban": ...}}
        if values is None:
            return f"argument '{self.arg}' of {call.name} is nested deeper than {MAX_NESTING} levels or too often"
        if self.required and not any(isinstance(k, str) and canonical_name(k) == want for k in call.arguments):
            return f"argument '{self.arg}' of {call.name} is required"  # where the tool reads it: at the top
        for value in values:
            parts = leaves(value)
            if parts is None:
                return f"argument '{self.arg}' of {call.name} is nested deeper than {MAX_NESTING} levels"
            text = value if isinstance(value, str) else str(value)
            if self._match is not None and (not parts or not all(
                    self._match.fullmatch(r) for t in parts for r in readings(t, exact=True))):
                return f"argument '{self.arg}' of {call.name} = {text!r} does not match {self.match!r}"
            if self._forbid is not None and any(self._forbid.search(r) for t in [text, *parts] for r in readings(t)):
                return f"argument '{self.arg}' of {call.name} = {text!r} matches forbidden {self.forbid!r}"
        return None


class ToolRuleGuard(BaseGuard):
    """Deterministic rules on tool names (globs) and argument values (regexes). See the module doc."""

    inline_safe = True  # fast and pure: an adapter may evaluate it on its event loop (the MCP relay does)

    def __init__(
        self,
        *,
        deny: Sequence[str] | str | None = None,
        allow: Sequence[str] | str | None = None,
        escalate: Sequence[str] | str | None = None,
        halt: Sequence[str] | str | None = None,
        arguments: Sequence[ArgumentRule | Mapping[str, Any]] = (),
        decision: Decision | str = Decision.REJECT,
        name: str = "tool-rules",
        deny_commands: Sequence[str] | str = (),
        deny_paths: Sequence[str] | str = (),
        allow_commands: Sequence[str | Mapping[str, Any]] | None = None,
        unresolvable: Decision | str = Decision.REJECT,
        read_only_tools: Sequence[str] | str | None = None,
        resolve_links: bool = False,
    ) -> None:
        self.name = name
        self.decision = Decision.parse(decision)
        if not self.decision.refuses:
            raise InputError(
                f"{name}: decision must block (REJECT, ESCALATE or HALT), not {self.decision.name}"
            )
        self._deny = _globs(deny, f"{name}.deny")
        self._granted = grant_patterns(allow, f"{name}.allow")
        self._allow_given = allow is not None
        self._escalate = _globs(escalate, f"{name}.escalate")
        self._halt = _globs(halt, f"{name}.halt")
        rules = []
        for i, r in enumerate(arguments):
            if isinstance(r, ArgumentRule):
                rules.append(r)
            elif isinstance(r, Mapping):
                unknown = set(r) - {"tool", "arg", "match", "forbid", "required", "decision"}
                if unknown:
                    raise InputError(f"{name}.arguments[{i}]: unknown key(s) {', '.join(sorted(unknown))}")
                rules.append(ArgumentRule(**dict(r)))
            else:
                raise InputError(f"{name}.arguments[{i}] must be a table/dict or ArgumentRule")
        self.arguments = rules
        if isinstance(deny_commands, str):
            deny_commands = [deny_commands]
        if isinstance(deny_paths, str):
            deny_paths = [deny_paths]
        self._commands = [_command_rule(c, f"{name}.deny_commands") for c in deny_commands]
        self._command_text = list(deny_commands)
        for p in deny_paths:
            if not isinstance(p, str) or not p:
                raise InputError(f"{name}.deny_paths: paths must be non-empty strings, got {p!r}")
        denied, matching, conventional = rule_forms([canonical_path(p) for p in deny_paths])  # (.reach)
        # case-insensitive: on macOS and Windows file systems /ETC/SHADOW is /etc/shadow
        self._paths = (re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in matching), re.IGNORECASE)
                       if matching else None)
        path_globs = [fold_case(fnmatch_tokens(p)) for p in matching]
        #: the globs anchored at the root or a home: a tree operand above one of them meets it (relative and "*/"
        #: globs name files anywhere and would refuse every recursive command); a relative tree is also read as
        #: "/path" and "~/path" (the working directory may be "/" or "~")
        anchored = [fold_case(fnmatch_tokens(p)) for p in denied if p.startswith(("/", "~")) and not p.startswith("/*")]
        #: the directories whose contents a glob denies ("*/.ssh/*" -> "*/.ssh", ".git/*" -> ".git"): a tree operand
        #: that is one of them or lies inside one reads what the rule denies, wherever it is anchored
        self._dirs, self._listing = listing_dirs(matching), listing_regex(matching)  # (a listing of one: .reach)
        near = [fold_case(fnmatch_tokens(p)) for p in conventional]
        self._globs = GlobRules((path_globs, near), (self._dirs, listing_dirs(conventional)), self._listing)  # .reach
        self._folded = casefolded(matching)  # "Straße" also as "strasse" (full case folding, .reach)
        self._links = link_option(resolve_links, name)  # read each path as the OS resolves its links now
        #: trees (.reach); a file tool's tree (a search below a directory) with a home's ``*`` one directory name
        self._trees = TreeRules(anchored, self._globs.dirs)
        self._file_trees = TreeRules([fold_case(t) for p in deny_paths for t in home_tokens(canonical_path(p))],
                                     self._globs.dirs)
        if isinstance(allow_commands, str):
            allow_commands = [allow_commands]
        self._allow_commands = (None if allow_commands is None else
                                [_allowed_command(e, f"{name}.allow_commands") for e in allow_commands])
        self.unresolvable = Decision.parse(unresolvable)
        if not self.unresolvable.refuses:
            raise InputError(f"{name}: unresolvable must block (REJECT, ESCALATE or HALT), not "
                             f"{self.unresolvable.name}: a command that cannot be read is never allowed")
        #: the tools that only read, when the configuration names them (otherwise inferred from names: .writes)
        self._readers = (_globs(read_only_tools, f"{name}.read_only_tools", grant_name) or re.compile(r"(?!)")
                         if read_only_tools is not None else None)
        self._allowed = Verdict.allow(self.name)  # verdicts are immutable: one ALLOW serves every call
        self._not_a_call = Verdict.allow(self.name, "not a tool call")

    def check(self, context: Context, proposal: Any) -> Verdict:
        call = as_tool_call(proposal)
        if call is None:
            if isinstance(proposal, (str, Step)):
                return self._not_a_call
            return Verdict(self.decision, f"cannot read a proposal of type {type(proposal).__name__} "
                                          "(not a tool call, a step or text)", self.name)
        if len(call.name) > MAX_TOOL_NAME:  # its namespace forms are not all computed: refused unread
            return Verdict(self.decision, f"a tool name of {len(call.name)} characters (at most {MAX_TOOL_NAME})",
                           self.name)
        found: list[tuple[Decision, str]] = []
        forms = name_forms(call.name)  # refusing rules match any namespace form, the allow list the whole name
        name = forms[0]
        if self._halt is not None and any(self._halt.match(f) for f in forms):
            found.append((Decision.HALT, f"tool {call.name} stops the run"))
        if self._escalate is not None and any(self._escalate.match(f) for f in forms):
            found.append((Decision.ESCALATE, f"tool {call.name} needs human approval"))
        if self._deny is not None and any(self._deny.match(f) for f in forms):
            found.append((self.decision, f"tool {call.name} is denied"))
        if self._allow_given and not self._granted(call.name):
            found.append((self.decision, f"tool {call.name} is not in the allow list"))
        if found and max(d for d, _ in found) >= max(self._decisions()) and _plain(call.arguments):  # (nor fail)
            return self._refusal(found)  # the rules below cannot give a stricter one: "violations" lists the name's
        if self._commands or self._paths is not None or self._allow_commands is not None:
            found += self._structured(name, call)
        for rule in self.arguments:
            why = rule.violation(call)
            if why:
                found.append((rule.decision, why))  # type: ignore[arg-type]
        return self._refusal(found) if found else self._allowed

    def _refusal(self, found: list[tuple[Decision, str]]) -> Verdict:
        decision, reason = max(found, key=lambda x: x[0])  # first of the strictest
        return Verdict(decision, reason, self.name, details={"violations": [r for _, r in found]})

    def _decisions(self) -> list[Decision]:
        """Every decision a rule of this guard may give (its ``check`` gives one of them or ALLOW)."""
        return [self.decision, self.unresolvable, *[Decision.HALT] * (self._halt is not None),
                *[Decision.ESCALATE] * (self._escalate is not None),
                *[Decision.parse(r.decision) for r in self.arguments]]

    def strictest(self) -> Decision:
        """The strictest decision (by :attr:`~agentguard.core.types.Decision.strictness`) :meth:`check` may give: a
        :class:`~agentguard.core.GuardStack` holding a verdict at least as strict need not ask this guard."""
        return max(self._decisions(), key=lambda d: d.strictness)

    def _structured(self, name: str, call: ToolCall) -> list[tuple[Decision, str]]:
        """Violations of ``allow_commands``, ``deny_commands``, ``deny_paths`` and unresolvable commands."""
        out: list[tuple[Decision, str]] = []
        shell_tool = name in _SHELL_TOOLS
        cwds, unsafe_env = _call_context(call.arguments)
        reader = reads_only(call.name, self._readers)  # every other tool writes the paths it names (.writes)
        context = CWD_ARGS | ENV_ARGS if shell_tool else frozenset()  # a shell's directory and environment
        bases = base_dirs(call.arguments, canonical_name)
        if bases is None:  # more directories x values than a check reads
            bases = ()
            out.append((self.unresolvable, f"{call.name} names more directories and values than the guard joins "
                                           "(arguments.MAX_BASES, MAX_JOINS): refused unread"))
        trees = reads_trees(call.name, call.arguments)  # a search reads every file below its directories
        names = NAME_WORDS | SEARCH_WORDS if trees else NAME_WORDS  # a search's query may be a file name
        named: list[str] = []  # the strings read as paths (for resolve_links)
        for var in unsafe_env:
            out.append((self.unresolvable, f"{call.name} sets {var!r} in the command's environment, which changes "
                                           "what runs"))
        paths: list[tuple[str, Any]] = []
        subtrees: list[tuple[str, Any]] = []
        writes: list[tuple[Decision, str]] = []
        file_trees: list[tuple[str, Any]] = []
        for key, value in call.arguments.items():
            k = canonical_name(key)
            is_cmd = shell_tool or k in COMMAND_ARGS
            if isinstance(key, str) and path_shaped(key):  # a tool taking {path: content} as its arguments
                start = len(paths)
                why = path_values("", key, paths, bases)
                if why:
                    out.append((self.unresolvable, f"an argument named {key[:80]!r} of {call.name}: {why}"))
                written = config_write("", key, paths[start:], bases, reader, context)
                if written:
                    writes.append((self.unresolvable, f"an argument named {key[:80]!r} of {call.name}: {written}"))
            entries = named_entries(value)  # every path-named key nested in it: {"spec": {"src": "id_rsa"}}
            if entries is None:
                out.append((self.unresolvable, f"argument '{key}' of {call.name} names more than {MAX_ENTRIES} "
                                               "nested paths: refused unread"))
            for i, (nk, nv) in enumerate([(k, value)] + (entries or [])):
                if fds := descriptors(nk, nv):  # open(3) reads descriptor 3
                    path_values(nk, fds, paths, bases)
                for text in strings(nv) if i and (path_named(nk) or not names.isdisjoint(nk.split("_"))) else []:
                    start = len(paths)  # (the argument itself: read below)
                    named += [text] if isinstance(text, str) else []
                    why = None if isinstance(text, TooDeep) else path_values(nk, text, paths, bases, names=names)
                    file_trees += [(t, tok) for t, tok in paths[start:] if trees and "\n" not in t]
                    why = why or (None if isinstance(text, TooDeep) else  # too deep: refused below
                                  config_write(nk, text, paths[start:], bases, reader, context))
                    if why:
                        writes.append((self.unresolvable, f"argument '{key}' ({nk}) of {call.name}: {why}"))
            for text in strings(value):
                if isinstance(text, TooDeep):
                    out.append((self.unresolvable, f"argument '{key}' of {call.name} is nested deeper than "
                                                   f"{MAX_NESTING} levels, mixes strings and objects or holds an "
                                                   "object it cannot read as text: refused unread"))
                    continue
                if not shell_tool or k in PATH_ARGS:  # a non-shell tool may open its "args" as files
                    start = len(paths)
                    named += [text] if isinstance(text, str) else [str(t) for t in text]
                    why = path_values(k, text, paths, bases, names=names)
                    if why:
                        out.append((self.unresolvable, f"argument '{key}' of {call.name}: {why}"))
                    if trees and path_named(k):
                        file_trees += [(t, tok) for t, tok in paths[start:] if "\n" not in t]
                    written = config_write(k, text, paths[start:], bases, reader, context)
                    if written:  # the shell guard's rule for a write target, on the same spellings
                        writes.append((self.unresolvable, f"argument '{key}' of {call.name}: {written}"))
                if not is_cmd:
                    continue
                found = _analyse(text, cwds, each=k in COMMAND_LISTS)
                for why in found.unresolvable:
                    out.append((self.unresolvable, f"argument '{key}' of {call.name} cannot be resolved: {why}"))
                paths += found.paths
                subtrees += found.subtrees
                for cmd in found.commands:
                    via = f" (via {cmd.via})" if cmd.via else ""
                    for (prog, need), entry in zip(self._commands, self._command_text):
                        if prog.fullmatch(cmd.program) and (need <= cmd.flags or (need and cmd.unknown_args)):
                            out.append((self.decision, f"argument '{key}' of {call.name} runs {entry!r}{via}"))
                    if self._allow_commands is not None and not any(a.allows(cmd) for a in self._allow_commands):
                        out.append((self.decision, f"argument '{key}' of {call.name} runs "
                                                   f"{' '.join(cmd.argv)[:80]!r}{via}, not in allow_commands"))
        if self._paths is not None and self._links:  # the files the links existing now lead to (.reach)
            real, doors, why = linked(named, bases, [t for t, tok in file_trees if tok is None])
            if why:
                out.append((self.unresolvable, f"{call.name}: {why}"))
            paths += [(r, None) for r in real if r not in named]
            file_trees += [(d, None) for d in doors]
        if self._paths is not None:
            for (text, tokens), rule in [(t, self._trees) for t in subtrees] + [
                    (t, self._file_trees) for t in file_trees]:
                if rule.holds(text, tokens):
                    out.append((self.decision, f"{call.name} reads, copies, moves or links the tree {text!r}, "
                                               "which holds a denied path"))
            for text, tokens in paths:
                relative = not text.startswith(("/", "~"))
                if self._globs.listed(text, tokens):  # list_dir ~/.aws: ~/.aws/* (.reach)
                    out.append((self.decision, f"path {text!r} of {call.name} may be a directory whose entries "
                                               "are denied (a listing names them)"))
                if tokens is None:
                    if any(self._paths.fullmatch(f) or (self._folded and self._folded.fullmatch(f.casefold()))
                           for f in [text] + (["~/" + text, "/" + text] if relative else [])):
                        out.append((self.decision, f"path {text!r} of {call.name} is denied"))
                    continue
                if self._globs.meets(tokens, relative):
                    out.append((self.decision, f"path pattern {text!r} of {call.name} could match a denied path"))
        return out + writes
