"""git operations that write into the working tree files another commit chooses: read as archive extraction (s19).

A commit is an archive: checking it out writes the files, names and **symbolic links** it holds. Session 19 ran
each of these with git 2.39 in a temporary repository whose other branch held ``k -> ~/.ssh/id_rsa``: ``git
checkout evil``, ``git pull ../up evil``, ``git restore --source=origin/evil k``, ``git checkout origin/evil -- k``
and ``git apply`` of that commit's patch wrote the link, and the next allowed command, ``cat k``, printed the key,
while the guard only ever saw ``k``. A commit can also hold a directory with ``HEAD``, ``objects/``, ``refs/`` and a
``config`` (``core.fsmonitor = CMD``): git discovers it as a repository, and ``cd ev && git status`` ran ``CMD``
(``safe.bareRepository`` defaults to ``all``). Writing ``ev/config`` or ``k`` by name is already refused
(:data:`~.startup.CONFIG_FILES`, ``deny_paths``); a checkout writes them under names the command never spells, as
``tar -x`` does (refused since session 11). ``-c core.symlinks=false`` turns the links into plain files but not
the planted repository, so no spelling of these operations is safe, and they are refused as extraction is.

The structural rule, :func:`git_content_reason`: the working tree, the index and ``HEAD`` may only be written from
trusted content. **The trust model** (session 19b) is the one of the shell example itself, which runs the project's
code (``make``, ``pytest``, ``npm test``): the *project's own* content is trusted as far as running it, and only
content from outside the project is foreign. Trusted sources:

- ``HEAD`` and its ancestors (``HEAD``, ``@``, ``HEAD~2``, ``HEAD^``), the index, the stash (made from the working
  tree);
- a *plain local branch name* (:func:`local_name`: ``main``, ``feature-x``, ``release.2``; no ``/``, not starting with
  ``-``, not an object id of 4 hex digits or more, not ``git describe`` output ``x-3-gHEX``, not a pseudo-ref such as
  ``FETCH_HEAD``/``ORIG_HEAD``/``MERGE_HEAD``, not a file of the git directory such as ``shallow``, whose first line
  ``git fetch --depth=1 URL`` sets to the foreign commit; no ``@{``, ``^``, ``~``, ``:`` or ``..``). git reads it as
  ``refs/heads/NAME`` first (``checkout``/``switch``), else a tag ``NAME``, ``refs/remotes/NAME/HEAD``, or, by
  checkout's guess, the one remote-tracking branch ``REMOTE/NAME``;
- the upstream of the current branch and origin's branches by plain name: ``git pull``, ``git pull --rebase``,
  ``git pull --ff-only`` with no operands, or ``git pull origin NAME...`` with plain names (or origin's ``HEAD``), and
  only with options of an allow list (:data:`_PULL_FLAGS`; ``--set-upstream``, ``--recurse-submodules``,
  ``--upload-pack``, ``-s`` are refused).

That is sound only while every name those readings reach holds the project's content, so every allowed command that
writes such a name is held to it (the invariant; ``tests/policies/shell/test_vcs.py`` runs random sequences of
these commands with real git and checks it at the end, and that no foreign link reached the working tree; a long
option is read with git's abbreviations, ``--set`` as ``--set-upstream``, ``--ta`` as ``--tags``):

- ``git remote`` may only be read (``git remote``, ``-v``, ``show``, ``get-url``): ``add``, ``set-url``,
  ``rename``, ``remove``, ``set-head``... are refused, since ``git checkout evil`` guesses ``e/evil`` of a new remote
  ``e`` and ``git pull origin NAME`` reads origin's URL (the reads that print a URL, ``-v``, ``show``, ``get-url``,
  read ``.git/config`` for ``deny_paths``: :func:`~.gitargs.prints_config`);
- ``git branch`` and ``git tag`` make a name only at trusted content (start point or target ``FETCH_HEAD``, an object
  id, ``e/evil``, ``origin/x`` are refused), ``branch -m/-c`` only between plain names, and ``branch -u`` only to
  ``origin/NAME`` or a local ``NAME``;
- ``fetch`` may update origin's remote-tracking refs and ``FETCH_HEAD`` only (a fetch from a URL or a path writes no
  other ref; checked with git 2.39, tags are not auto-followed from such a fetch): a refspec with a destination
  (``+evil:main``), ``--refmap``, ``-u``/``--update-head-ok`` (``git fetch -u origin +evil:master`` then ``git stash``
  wrote ``k``), ``--set-upstream`` (the fetched URL becomes the upstream ``git pull`` reads) and ``--tags``/``tag X``
  from a repository other than origin (a fetched tag ``topic`` beat checkout's guess of ``origin/topic``) are refused;
- ``push`` sends only trusted content (its refspecs' sources), sets an upstream only to origin, and has no
  ``--repo``/``--receive-pack``; ``update-ref``, ``symbolic-ref``, ``replace``... are :data:`FOREIGN`.

Every other source is foreign and refused as extraction is: ``origin/x`` and ``e/x`` (conservatively, even origin's:
``git pull origin x`` or ``git checkout x`` is the spelling allowed), ``-`` and ``@{-1}``, ``FETCH_HEAD``, an object
id, a tag named with ``/``, a patch or mailbox (``apply``, ``am``), ``merge``, ``rebase``, ``cherry-pick``,
``revert``, a pull from another repository (``git pull ../up evil``, ``git pull ev.git main``), a clone or
submodule. So ``checkout``/``switch``/``restore``/``reset`` are allowed with no revision or a trusted one (``git
checkout main``, ``git checkout -b new main``, ``git restore --source=HEAD~1 f``); ``--recurse-submodules`` is
refused; ``stash pop/apply/branch`` only take a stash entry (``stash@{N}``, ``N``); ``stash store`` is refused (it
makes any commit a stash entry); ``remote add --mirror`` is refused with every other ``remote add``.

Not covered (a decision on the command's text cannot see them): content already on disk before the session is the
project's, including a repository another program left there with foreign branches (and a directory ``origin``
already in the project: in a repository with no remote named ``origin`` git reads ``git pull origin NAME`` as a
pull from the path ``./origin``, ``./origin.git`` or ``./origin/.git``; writing, linking, copying or moving anything
to such a path is refused since session 20, :data:`~.startup.REMOTE_PATHS`). The soundness also relies
on the example's allow list refusing ``git config`` (``branch.x.remote``, ``remote.x.url``) and ``git -C``.

An option this reader does not know is read as taking no value, so its next word is read as an operand, which can
only refuse more; a word that is not fixed after one of these subcommands is refused (it may be a revision).
Links and repositories present before the session (a cloned project's own ``k -> ~/.ssh/id_rsa``) are not in any
command's text: only a check of the filesystem at decision time can see them (not made here: the guard may run on
another machine than the agent's shell).
"""

from __future__ import annotations

import re

from .gitargs import GLOBAL_VALUES
from .words import Word

__all__ = ["FOREIGN", "TRUSTED_REV", "git_content_reason", "git_split", "local_name", "remote_words", "trusted_rev"]

#: subcommands that write the working tree, the index or HEAD from content the text does not hold (or run a
#: command: ``submodule foreach``), refused whatever their words
FOREIGN = frozenset({"merge", "rebase", "cherry-pick", "revert", "am", "apply", "clone", "submodule",
                     "bisect", "read-tree", "replace", "update-ref", "symbolic-ref", "worktree", "sparse-checkout",
                     "filter-branch", "filter-repo", "fast-import", "update-index", "bundle", "merge-tree",
                     "subtree", "unpack-objects", "checkout-index"})
#: HEAD and its ancestors: ``HEAD``, ``@``, ``HEAD~3``, ``HEAD^2``, ``@~``
TRUSTED_REV = re.compile(r"(HEAD|@)([~^][0-9]*)*")
_STASH_ENTRY = re.compile(r"([0-9]+|(refs/)?stash(@\{[0-9]+\})?)")
_PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
#: names git reads as something other than a ref: an abbreviated object id (4 hex digits or more, git's
#: MINIMUM_ABBREV), ``git describe`` output (``v1-3-gdeadbee`` names the object ``deadbee``), a pseudo-ref in the git
#: directory (``FETCH_HEAD``, ``MERGE_HEAD``: upper case, ``-`` and ``_``, git's ``is_pseudoref_syntax``)
_NOT_A_REF = re.compile(r"[0-9a-fA-F]{4,}|.*-g[0-9a-fA-F]+|[A-Z_-]+|.*\.\..*|.*\.(lock)?")
#: files git keeps in the git directory: a one-level name is first read as ``$GIT_DIR/NAME`` (git's first dwim rule),
#: so ``git checkout shallow`` checked out the foreign commit ``git fetch --depth=1 URL evil`` had written to
#: ``.git/shallow`` (git 2.39); compared case-folded, as a case-insensitive file system reads them (``fetch_head``)
_GIT_DIR_FILES = frozenset({"shallow", "config", "description", "index", "packed-refs", "commondir", "gitdir", "info",
                            "logs", "objects", "refs", "hooks", "branches", "modules", "worktrees", "auto_merge",
                            "merge_autostash", "merge_msg", "merge_mode", "merge_rr", "squash_msg", "commit_editmsg",
                            "tag_editmsg", "sequencer", "rebase-merge", "rebase-apply", "rr-cache", "lfs", "svn"})

#: per subcommand: short options taking a value, long options taking a value, options that create a branch
#: (their value is the new name, not a revision)
_GRAMMAR: dict[str, tuple[str, frozenset[str], frozenset[str]]] = {
    "checkout": ("bB", frozenset({"orphan", "conflict", "pathspec-from-file"}), frozenset({"b", "B", "orphan"})),
    "switch": ("cC", frozenset({"create", "force-create", "orphan", "conflict"}),
               frozenset({"c", "C", "create", "force-create", "orphan"})),
    "restore": ("s", frozenset({"source", "conflict", "pathspec-from-file"}), frozenset()),
    "reset": ("", frozenset({"pathspec-from-file"}), frozenset()),
    "stash": ("m", frozenset({"message", "pathspec-from-file"}), frozenset()),
    "fetch": ("jo", frozenset({"depth", "deepen", "shallow-since", "shallow-exclude", "jobs", "server-option",
                               "negotiation-tip", "upload-pack", "filter", "refmap"}), frozenset()),
    "remote": ("tm", frozenset({"track", "master", "mirror"}), frozenset()),
    "pull": ("", frozenset(), frozenset()),
    "branch": ("u", frozenset({"set-upstream-to", "contains", "no-contains", "merged", "no-merged", "points-at",
                               "sort", "format"}), frozenset()),
    "tag": ("mFu", frozenset({"message", "file", "local-user", "sort", "format", "contains", "no-contains", "merged",
                              "no-merged", "points-at", "cleanup"}), frozenset()),
    "push": ("o", frozenset({"repo", "receive-pack", "exec", "push-option"}), frozenset()),
}
#: ``git pull``'s options that change neither where it fetches from nor what it runs (an allow list: an unknown one,
#: ``--set-upstream``, ``--recurse-submodules``, ``--upload-pack``, ``-s``/``-X``, or an abbreviation, is refused)
_PULL_FLAGS = frozenset({"r", "rebase", "no-rebase", "ff-only", "ff", "no-ff", "q", "quiet", "v", "verbose",
                         "autostash", "no-autostash", "stat", "n", "no-stat", "no-edit", "commit", "no-commit",
                         "squash", "no-squash", "p", "prune", "no-tags", "no-verify", "verify"})
_PULL_REBASE = frozenset({"", "true", "false", "merges"})
#: the remote a session may pull from and name as an upstream: the project's own (see the module docstring)
ORIGIN = "origin"
_WHY = ("writes files {what} chooses into the working tree (a symlink to ~/.ssh/id_rsa, a repository whose config "
        "runs a command), as tar -x does; only HEAD, HEAD~N, the index, the stash and the project's own branches "
        "(a plain local name, the upstream, origin's NAME) are trusted")


def local_name(name: str) -> bool:
    """``name`` is a plain branch name: git resolves it only to a ref of this repository (``refs/heads/NAME``, a
    tag ``NAME``, ``refs/remotes/NAME/HEAD`` or, by ``checkout``'s guess, one remote's ``REMOTE/NAME``), never to an
    object id, a pseudo-ref (``FETCH_HEAD``), a reflog entry (``@{-1}``, ``-``) or a path of another repository."""
    folded = name.lower()
    return bool(_PLAIN.fullmatch(name)) and not _NOT_A_REF.fullmatch(name) and folded not in _GIT_DIR_FILES and \
        not folded.endswith("_head") and not folded.startswith(("bisect_", "sharedindex"))


def trusted_rev(rev: str) -> bool:
    """``rev`` names trusted content: ``HEAD`` or an ancestor, or a plain local branch name (module docstring)."""
    return bool(TRUSTED_REV.fullmatch(rev)) or local_name(rev)


def _long(name: str, known: frozenset[str]) -> str | None:
    """The long option ``name`` names: itself, or the one known option it is a prefix of (git's abbreviations)."""
    if name in known:
        return name
    hits = [k for k in known if k.startswith(name)] if len(name) >= 2 else []
    return hits[0] if len(hits) == 1 else None


def _means(names: list[str], *options: str) -> bool:
    """One of ``names`` may be one of ``options``: the option itself or any prefix of it (git takes a unique prefix
    of a long option as the option, ``--set`` as ``--set-upstream``, ``--ta`` as ``--tags``; a prefix that is not
    unique only makes git fail, so reading every prefix as the option can only refuse more)."""
    return any(n and o.startswith(n) for n in names for o in options)


def _parse(sub: str, words: list[str]) -> tuple[list[tuple[str, str]], list[str], list[str] | None, list[str]]:
    """``(options with their values, operands before --, operands after -- (None: no --), option names)``."""
    shorts, longs, _ = _GRAMMAR.get(sub, ("", frozenset(), frozenset()))
    opts: list[tuple[str, str]] = []
    names: list[str] = []
    before: list[str] = []
    k = 0
    while k < len(words):
        w = words[k]
        k += 1
        if w == "--":
            return opts, before, words[k:], names
        if w.startswith("--"):
            name, eq, value = w[2:].partition("=")
            full = _long(name, longs)
            names.append(full or name)
            if full is not None and not eq:
                value = words[k] if k < len(words) else ""
                k += 1
            opts.append((full or name, value))
        elif w.startswith("-") and len(w) > 1:
            for j, ch in enumerate(w[1:], 1):
                names.append(ch)
                if ch in shorts:
                    value = w[j + 1:]
                    if not value:
                        value = words[k] if k < len(words) else ""
                        k += 1
                    opts.append((ch, value))
                    break
                opts.append((ch, ""))
        else:
            before.append(w)
    return opts, before, None, names


def _revisions(sub: str, words: list[str]) -> str | None:
    """checkout, switch, restore, reset: the reason a revision they read from is not trusted, or None."""
    opts, before, after, names = _parse(sub, words)
    if any(len(n) > 3 and "recurse-submodules".startswith(n) for n in names):
        return f"git {sub} --recurse-submodules " + _WHY.format(what="each submodule's commit")
    if sub == "restore":
        revs = [v for n, v in opts if n in ("s", "source")]
    elif sub == "switch" or after is not None or any(n in _GRAMMAR[sub][2] for n, _ in opts):
        revs = before  # the start point, or the tree-ish before "--"
    else:
        revs = before[:1]  # "git checkout X F...": git reads X as a revision when one is so named, F as paths
    for rev in revs:
        if not trusted_rev(rev):
            return f"git {sub} {rev[:40]!r}: " + _WHY.format(what="the commit")
    return None


def git_split(args: list[Word]) -> tuple[str, list[Word]] | None:
    """git's subcommand and the words after it (past git's own options), or None when no fixed word names it."""
    k = 0
    while k < len(args):
        w = args[k]
        if not w.literal:
            return None
        if w.text in GLOBAL_VALUES:
            k += 2
            continue
        if not w.text.startswith("-"):
            return w.text, args[k + 1:]
        k += 1
    return None


#: subcommands whose operands may name a remote or a remote-tracking ref (never a directory they create)
_NAMES_REMOTES = frozenset({"pull", "fetch", "push", "remote", "ls-remote", "log", "diff", "show", "branch",
                            "checkout", "switch", "restore", "reset", "rev-parse", "rev-list", "merge-base", "describe",
                            "shortlog", "reflog", "tag", "status", "blame", "grep", "ls-tree", "cherry", "range-diff",
                            "whatchanged"})


def remote_words(name: str, args: list[Word]) -> list[Word]:
    """git's words that name the remote origin or one of its refs (``git fetch origin``, ``git log origin/main``), not
    a path git writes; empty for another program or a subcommand that creates its operand (``git init origin``)."""
    split = git_split(args) if name == "git" else None
    if split is None or split[0] not in _NAMES_REMOTES:
        return []
    return [w for w in split[1] if w.literal and re.fullmatch(rf"{ORIGIN}(/[^\0]*)?", w.text)]


def git_content_reason(sub: str, args: list[Word]) -> str | None:
    """Why the git command ``git ... SUB ARGS`` writes the working tree from foreign content, or None.

    ``sub`` is the subcommand; ``args`` the words after it. See the module docstring for the rule.
    """
    if sub in FOREIGN:
        return f"git {sub} " + _WHY.format(what="another commit, a patch or a repository")
    if sub not in _GRAMMAR:
        return None
    if any(not w.literal for w in args):
        return f"git {sub}: a word that is not fixed may name a revision whose files it writes"
    words = [w.text for w in args]
    if sub in ("checkout", "switch", "restore", "reset"):
        return _revisions(sub, words)
    _, before, after, names = _parse(sub, words)
    if sub == "stash":
        action = before[0] if before else "push"
        if action == "store":
            return "git stash store makes any commit a stash entry, which stash pop " + _WHY.format(what="it")
        if action in ("pop", "apply", "branch"):
            entries = before[2:] if action == "branch" else before[1:]
            bad = [e for e in entries if not _STASH_ENTRY.fullmatch(e)]
            if bad:
                return f"git stash {action} {bad[0][:40]!r}: " + _WHY.format(what="the commit")
        return None
    if sub == "fetch":
        if any(n in ("u", "update-head-ok", "refmap") or (len(n) > 2 and "update-head-ok".startswith(n))
               for n in names):
            return "git fetch -u/--refmap moves local branches, whose files a later stash or checkout " + \
                _WHY.format(what="the fetched commit")
        operands = before + (after or [])
        refspecs = [] if any(n == "multiple" for n in names) else operands[1:]  # the first is the repository
        if any(":" in r for r in refspecs):
            return "git fetch with a refspec destination moves local refs (the checked-out branch, the stash), " \
                   "whose files a later stash or checkout " + _WHY.format(what="the fetched commit")
        if _means(names, "set-upstream"):
            return "git fetch --set-upstream makes the fetched repository the branch's upstream, which git pull " + \
                _WHY.format(what="it")
        repos = operands if _means([n for n in names if len(n) > 1], "multiple") else operands[:1]
        tags = _means(names, "tags") or "tag" in refspecs
        if tags and any(r != ORIGIN for r in repos):
            return "git fetch --tags/tag from a repository that is not origin writes its tags, which a plain name " \
                   "then names and a checkout " + _WHY.format(what="the tagged commit")
        return None
    return _refs_reason(sub, words)


def _refs_reason(sub: str, words: list[str]) -> str | None:
    """pull, remote, branch, tag, push: why the command points what a plain name or ``git pull`` reads at content
    from outside the project, or None."""
    opts, before, after, names = _parse(sub, words)
    operands = before + (after or [])
    if sub == "pull":
        for n, v in opts:
            if n not in _PULL_FLAGS or (n == "rebase" and v not in _PULL_REBASE):
                return f"git pull --{n}: only pulls from origin with options that change neither the repository " \
                       "nor what runs are read; another " + _WHY.format(what="the fetched commit")
        names_ok = all(n == "HEAD" or local_name(n) for n in operands[1:])
        if after is not None or (operands and (operands[0] != ORIGIN or not names_ok)):
            return f"git pull {' '.join(operands)[:60]!r}: only the upstream or origin's plain branch names are " \
                   "the project's; another repository " + _WHY.format(what="its commit")
        return None
    if sub == "remote":
        if before[:1] not in (["show"], ["get-url"]) and (before or set(names) - {"v", "verbose"}):
            return "git remote may only be read: a new remote (add, set-url, rename) lets git checkout NAME guess " \
                   "its branch NAME, whose files it " + _WHY.format(what="the remote")
        return None
    if sub == "push":
        if _means([n for n, _ in opts if len(n) > 1], "repo", "receive-pack", "exec") or \
                (_means(names, "u", "set-upstream") and operands[:1] not in ([], [ORIGIN])):
            return "git push --repo/--receive-pack/-u to a repository that is not origin: a later git pull " + \
                _WHY.format(what="it")
        for spec in operands[1:]:
            src = spec.lstrip("+").partition(":")[0]
            if src and not trusted_rev(src):
                return f"git push {spec[:40]!r}: a ref pushed from content that is not trusted is then pulled, " \
                       "and the pull " + _WHY.format(what="the commit")
        return None
    listing = any(n in ("l", "list", "d", "D", "delete") for n in names) or (sub == "tag" and
                                                                            any(n in ("v", "verify") for n in names))
    if sub == "branch":
        upstream = [v for n, v in opts if n in ("u", "set-upstream-to")]
        if any(not (local_name(u) or (u.startswith(ORIGIN + "/") and local_name(u[len(ORIGIN) + 1:])))
               for u in upstream):
            return f"git branch -u {upstream[0][:40]!r}: only a local branch or origin/NAME may be the upstream " \
                   "git pull " + _WHY.format(what="merges from")
        if any(n in ("m", "M", "move", "c", "C", "copy") for n in names):
            if any(n in ("r", "remotes", "a", "all") for n in names) or not all(map(local_name, operands)):
                return "git branch -m/-c of a name that is not a plain local branch " + _WHY.format(what="it")
            return None
        if upstream:
            return None
    if not listing and len(operands) >= 2 and not trusted_rev(operands[1]):
        return f"git {sub} {operands[0][:30]} {operands[1][:40]!r}: a {sub} at content that is not trusted is " \
               "named by a plain name, and a checkout of that name " + _WHY.format(what="the commit")
    return None
