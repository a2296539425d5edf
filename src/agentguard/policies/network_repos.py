"""The configuration files of the repository a git command runs in, found as git finds it (split from
:mod:`.network_configs`, session 26), the subcommand it runs (:func:`git_subcommand`), and the directory a call's
clients run in (:func:`working_places`: the guard's, or a ``cwd``-like argument's, :func:`call_directories`)."""

from __future__ import annotations

import os
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable, Iterator, Mapping, Sequence

from .network_cache import read_cached
from .network_files import read_limited
from .shell.gitargs import GLOBAL_VALUES as GIT_GLOBAL_VALUES

__all__ = ["call_directories", "git_subcommand", "project_files", "repository_files", "working_places"]

#: the directories the call being decided names as its working directory (a ``cwd``-like argument), or None
_CALL_DIRS: ContextVar[tuple[str, ...] | None] = ContextVar("agentguard_network_call_dirs", default=None)


@contextmanager
def call_directories(cwds: Sequence[str]) -> Iterator[None]:
    """While inside, the working directory a command's clients run in is each of ``cwds`` (a call's ``cwd``-like
    arguments, :func:`.rules._call_context`; session 26), not the guard's: :func:`working_places`. None given: the
    guard's. A context variable: each thread and task decides its own call."""
    token = _CALL_DIRS.set(tuple(cwds) if cwds else None)
    try:
        yield
    finally:
        _CALL_DIRS.reset(token)


def _places(spelled: str, bases: list[str]) -> list[str]:
    """The directories a place names from each of ``bases`` (an absolute or ``~`` one from none), as written
    (``sub/..`` is the kernel's to resolve: ``sub`` may be a link); an unknown one (the shell computes it) as a name
    no file has."""
    if any(c in spelled for c in "*$`"):
        return ["*?" + spelled]
    path = os.path.expanduser(spelled)
    return [path] if os.path.isabs(path) else [os.path.join(b, path) for b in bases]


def _located(spelled: str, bases: list[str], test: Callable[[str], bool]) -> list[str]:
    """The places of :func:`_places` that exist (``test``), with links resolved as the kernel resolves them (git
    reads its directory back with ``getcwd``); none existing: a marker ``network_configs`` refuses (a relative place
    found from no base: the tool's working directory is not the guard's, so it cannot be read; an absolute one that
    does not exist is walked up from, as before)."""
    found = _places(spelled, bases)
    if not found or found[0].startswith("*?"):   # (a relative place below one not found: not found)
        return found or ["*?" + spelled]
    there = [os.path.realpath(p) for p in found if test(p)]
    if not there and os.path.isabs(os.path.expanduser(spelled)):
        return [os.path.normpath(found[0])]
    return there or ["*?" + spelled]


def _created(spelled: str, assigned: Mapping[str, list[str]]) -> bool:
    """Whether the relative place ``spelled`` is below a directory the command makes (``(created)``: ``git clone URL
    x``, ``mkdir x``), which holds nothing the guard could read when the call is decided."""
    path = os.path.normpath(spelled)
    if os.path.isabs(os.path.expanduser(spelled)):
        return False
    for made in map(os.path.normpath, assigned.get("(created)", [])):   # (below it, or a parent mkdir -p makes)
        if made.split(os.sep)[-1] not in (".", "..") and (path == made or (path + os.sep).startswith(
                made + os.sep) or (made + os.sep).startswith(path + os.sep) and path.split(os.sep)[-1] != ".."):
            return True
    return False


def working_places(assigned: Mapping[str, list[str]]) -> tuple[list[str], list[str]]:
    """``(the directories a command's client may run in, markers)``: the call's working directory and every
    directory the command's ``cd``s reach from it (``assigned["(cd)"]``, each from the places before it), a ``cd``
    found from none a marker (refused), but one into a directory the command makes (``(created)``). The call's
    working directory is the guard's, or (session 26) each the call names (:func:`call_directories`: a relative one
    joined to the guard's, links resolved); one that is not a directory here, or whose name the shell computes, is
    a marker (refused, fail closed) and no base."""
    out: list[str] = []
    try:
        here: str | None = os.getcwd()
    except OSError:   # (the guard's directory was removed: no relative place can be read)
        here = None
    named = _CALL_DIRS.get()
    if named is None:
        if here is None:
            return [], ["*?(the guard's working directory)"]
        bases = [here]
    else:
        bases = []
        for cwd in named:
            path = os.path.expanduser(cwd)
            path = path if os.path.isabs(path) else os.path.join(here, path) if here is not None else ""
            if not path or any(c in cwd for c in "*$`") or not os.path.isdir(path):
                out.append("*?" + cwd)   # (a place not found: no base, refused)
            elif os.path.realpath(path) not in bases:
                bases.append(os.path.realpath(path))
    for cd in assigned.get("(cd)", []):   # cd a && cd b && git fetch: a/b (and the places before, widening)
        found = _located(cd, bases, os.path.isdir)
        if found[0].startswith("*?") and _created(cd, assigned):
            continue   # (git clone URL x && cd x: the command's new directory)
        out += [p for p in found if p.startswith("*?")]
        bases += [p for p in found if not p.startswith("*?") and p not in bases]
    return bases, out


def project_files(name: str, assigned: Mapping[str, list[str]]) -> list[str]:
    """The files ``name`` in every directory a command's client may run in (:func:`working_places`) and each of its
    parents (session 26: npm's project ``.npmrc`` is the one of the nearest directory up holding ``package.json`` or
    ``node_modules``; every one up is read, widening only), and the places' markers."""
    places, out = working_places(assigned)
    for place in places:
        d = place
        while True:
            out.append(os.path.join(d, name))
            d, parent = os.path.dirname(d), d
            if d == parent:
                break
    return list(dict.fromkeys(out))


#: git's options before the subcommand that take no value (one not known here, or one a newer git reads with the
#: next word, ``--attr-source TREE``, leaves the subcommand unknown: read as connecting; s26)
_GIT_FLAGS = frozenset("""-p --paginate -P --no-pager --bare --no-replace-objects --literal-pathspecs --glob-pathspecs
--noglob-pathspecs --icase-pathspecs --no-optional-locks --no-lazy-fetch --no-advice --version""".split())


#: the options :func:`git_subcommand` skips with their value: git's (:data:`.shell.gitargs.GLOBAL_VALUES`) but those
#: whose value may be the word git runs (``--attr-source``, new in git 2.40; ``--exec-path``, ``--list-cmds``,
#: ``--super-prefix``): after those the subcommand is unknown, read as connecting (refuses more)
_SKIPPED = GIT_GLOBAL_VALUES - {"--attr-source", "--exec-path", "--list-cmds", "--super-prefix"}


def git_subcommand(args: Sequence[str]) -> str | None:
    """The subcommand a git command runs ("" for none), None after an option not known (its value may be the word
    read as the subcommand: ``git --attr-source status fetch`` fetches)."""
    k = 0
    while k < len(args) and args[k].startswith("-"):
        if args[k] in _SKIPPED:
            k += 2
        elif args[k] in _GIT_FLAGS or ("=" in args[k] and args[k].startswith("--")):
            k += 1
        else:
            return None
    return args[k] if k < len(args) else ""


def repository_files(argv: Sequence[str], env: Mapping[str, str], assigned: Mapping[str, list[str]]) -> list[str]:
    """The configuration files of the repository a git command runs in, found as git finds it (s25 red team: ``git
    -C /r fetch``, ``cd /r && git fetch``, ``--git-dir=/r/.git``, ``GIT_DIR=/r/.git`` fetched from /r's internal
    origin unseen): its ``config`` and ``config.worktree`` (and a linked worktree's common ones), the ``.git``
    directory or ``gitdir:`` file, a bare one, up the parents, and a work tree's ``.gitmodules`` (session 26: its
    ``submodule.*.url`` is where ``git submodule update``, ``--recurse-submodules`` connect). Session 26: a relative place (``git -C repo``, ``cd
    repo &&``, ``GIT_DIR=r/.git``) and the command's own directory are read from the guard's working directory (the
    tool's, when the guard runs beside it: a hook), each ``cd`` from the places the ones before it reach; a relative
    place that exists from none of them cannot be read (refused, fail closed), but a ``cd`` into a directory the
    command makes (``git clone URL && cd x``: :func:`.network_configs_env.command_env`'s ``(created)``)."""
    bases, out = working_places(assigned)
    works, gits = bases, []
    k, chained, new = 1, False, False
    while k < len(argv) and argv[k].startswith("-"):
        w, value = argv[k], argv[k + 1] if k + 1 < len(argv) else ""
        if w == "-C" and not (new and not os.path.isabs(os.path.expanduser(value))):   # (each from the one before)
            works = _located(value, works if chained else bases, os.path.isdir)
            # (git clone URL x && git -C x: the command's new directory, and a relative place below it)
            new = works[0].startswith("*?") and not chained and _created(value, assigned)
            out += [p for p in works if p.startswith("*?") and not new]
            works, chained = [p for p in works if not p.startswith("*?")], True
        gits += [w[len("--git-dir="):]] if w.startswith("--git-dir=") else [value] if w == "--git-dir" else []
        k += 2 if w in GIT_GLOBAL_VALUES else 1
    gits += ([env["GIT_DIR"]] if env.get("GIT_DIR") else []) + list(assigned.get("GIT_DIR", []))
    starts = [(w, False) for w in works]
    for g in gits:
        found = _located(g, works, os.path.exists)
        out += [p for p in found if p.startswith("*?")]
        starts += [(p, True) for p in found if not p.startswith("*?")]
    for start, bare in starts:
        d = start
        while os.path.isabs(d):
            dot = os.path.join(d, ".git")
            link = _text(dot) if os.path.isfile(dot) else None
            found = d if bare or os.path.isfile(os.path.join(d, "HEAD")) and os.path.isdir(os.path.join(d, "objects")) \
                else dot if os.path.isdir(dot) else os.path.join(d, link.strip()[7:].strip()) \
                if link is not None and link.startswith("gitdir:") else None
            if found is not None:
                common = _text(os.path.join(found, "commondir")) if os.path.isfile(
                    os.path.join(found, "commondir")) else None
                for g in [found] + ([os.path.join(found, common.strip())] if common else []):
                    out += [os.path.join(g, "config"), os.path.join(g, "config.worktree")]
                out += [] if found == d else [os.path.join(d, ".gitmodules")]   # (a work tree's submodules: s26)
                break
            d, parent = os.path.dirname(d), d
            if d == parent:
                break
    return list(dict.fromkeys(out))


def _text(path: str) -> str | None:
    """The text of a small file of a repository (``.git``, ``commondir``), through
    :func:`.network_cache.read_cached`; None unreadable."""
    if any(c in path for c in "*$`") or path.startswith("*?"):   # (a directory so named: read as it is)
        return read_limited(path)
    def parse() -> tuple[tuple[str, ...], tuple[str, ...]]:
        text = read_limited(path)
        return ((), ()) if text is None else ((text,), ())

    try:
        found = read_cached(path, "text", parse)
    except OSError:
        return None
    return found[0][0] if found is not None and found[0] else None
