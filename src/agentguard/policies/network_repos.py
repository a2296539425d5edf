"""The configuration files of the repository a git command runs in, found as git finds it (split from
:mod:`.network_configs`, session 26)."""

from __future__ import annotations

import os
from typing import Callable, Mapping, Sequence

from .network_cache import read_cached
from .network_files import read_limited

__all__ = ["project_files", "repository_files", "working_places"]


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
    if found[0].startswith("*?"):
        return found
    there = [os.path.realpath(p) for p in found if test(p)]
    if not there and os.path.isabs(os.path.expanduser(spelled)):
        return [os.path.normpath(found[0])]
    return there or ["*?" + spelled]


def working_places(assigned: Mapping[str, list[str]]) -> tuple[list[str], list[str]]:
    """``(the directories a command's client may run in, markers)``: the guard's working directory and every
    directory the command's ``cd``s reach from it (``assigned["(cd)"]``, each from the places before it), a ``cd``
    found from none a marker (refused), but one into a directory the command makes (``(created)``)."""
    try:
        bases = [os.getcwd()]
    except OSError:   # (the guard's directory was removed: no relative place can be read)
        return [], ["*?(the guard's working directory)"]
    out: list[str] = []
    created = {os.path.normpath(c).split(os.sep, 1)[0] for c in assigned.get("(created)", [])}
    for cd in assigned.get("(cd)", []):   # cd a && cd b && git fetch: a/b (and the places before, widening)
        found = _located(cd, bases, os.path.isdir)
        if found[0].startswith("*?") and os.path.normpath(cd).split(os.sep, 1)[0] in created:
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


def repository_files(argv: Sequence[str], env: Mapping[str, str], assigned: Mapping[str, list[str]]) -> list[str]:
    """The configuration files of the repository a git command runs in, found as git finds it (s25 red team: ``git
    -C /r fetch``, ``cd /r && git fetch``, ``--git-dir=/r/.git``, ``GIT_DIR=/r/.git`` fetched from /r's internal
    origin unseen): its ``config`` and ``config.worktree`` (and a linked worktree's common ones), the ``.git``
    directory or ``gitdir:`` file, a bare one, up the parents. Session 26: a relative place (``git -C repo``, ``cd
    repo &&``, ``GIT_DIR=r/.git``) and the command's own directory are read from the guard's working directory (the
    tool's, when the guard runs beside it: a hook), each ``cd`` from the places the ones before it reach; a relative
    place that exists from none of them cannot be read (refused, fail closed), but a ``cd`` into a directory the
    command makes (``git clone URL && cd x``: :func:`.network_configs_env.command_env`'s ``(created)``)."""
    bases, out = working_places(assigned)
    works, gits = bases, []
    k, chained = 1, False
    while k < len(argv) and argv[k].startswith("-"):
        w, value = argv[k], argv[k + 1] if k + 1 < len(argv) else ""
        if w == "-C":   # (each -C is read from the one before it)
            works = _located(value, works if chained else bases, os.path.isdir)
            out += [p for p in works if p.startswith("*?")]
            works, chained = [p for p in works if not p.startswith("*?")], True
        gits += [w[len("--git-dir="):]] if w.startswith("--git-dir=") else [value] if w == "--git-dir" else []
        k += 2 if w in ("-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env") else 1
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
