"""A configuration file a command writes before a network client of the same command reads it (s25): the write
half of :mod:`.network_configs` (which reads the files and refuses a write of one).

- :func:`read_after_write`: a file the command writes that a client is pointed at (``base64 -d > c; curl -K c``,
  ``> /tmp/g; GIT_CONFIG_GLOBAL=/tmp/g git fetch``);
- :func:`written_over`: a directory the command writes a tree into that holds a client's default file (``cp -r d
  ~``, ``tar -xf a -C ~``, ``unzip a -d ~``, ``rsync -a d/ ~/`` then ``curl``; s25 red team);
- :func:`own_writes_less`: the writes less a client's own words (``curl -K c`` names c, does not write it);
- :func:`config_set`: a client's own configuration command, read as the entry it writes (then no unknown write).

In each the guard would read the file's old content, so the command is refused.
"""

from __future__ import annotations

import os
import re
from typing import Iterable, Mapping, Sequence

from .network_configs import (_MAX_INCLUDE, _git_destinations, _git_pairs, _named_files, _npmrc, _pip_conf,
                              default_destinations)
from .network_files import named_inputs
from .shell.gitargs import GLOBAL_VALUES as GIT_GLOBAL_VALUES
from .shell.paths import PathForm

__all__ = ["config_set", "own_writes_less", "read_after_write", "tree_writes", "written_over"]


def own_writes_less(writes: Sequence[list[PathForm]], argvs: Iterable[Sequence[str]]) -> list[list[PathForm]]:
    """``writes`` (:attr:`.shell.model.Analysis.writes`) less, once each, those of each of ``argvs``' own words (a
    multiset difference: ``cp x c; curl -K c`` keeps cp's write of c, takes curl's reading of its ``-K`` value); a
    write matches one with the same first spelling and every spelling of it (after a ``cd``, the command's writes are
    spelled from its places too)."""
    from .shell.analysis import analyse_argv

    left = list(writes)
    keys = [tuple(t for t, _ in forms) for forms in left]
    for argv in argvs:
        for forms in analyse_argv(argv).writes:
            key = tuple(t for t, _ in forms)
            # the same write, or (s26) it read from a cd's places too (cd b && git config user.name x: b/.git/config)
            at = keys.index(key) if key in keys else next((i for i, k in enumerate(keys) if k[:1] == key[:1] and set(
                key) <= set(k)), None)
            if at is not None:
                del left[at]
                del keys[at]
    return left


def read_after_write(argvs: Iterable[Sequence[str]], assigned: Mapping[str, list[str]],
                     written: Iterable[str], any_input: bool = False) -> list[str]:
    """A configuration the command writes before a client reads it (``base64 -d > c; curl -K c``, ``... > /tmp/g;
    GIT_CONFIG_GLOBAL=/tmp/g git fetch``, ``git -c include.path=F``): the file is read when the call is decided, so
    its old content is not what the client reads. A written path (``written``: its literal spellings) that is a file
    or below a directory the command points a client at (a ``-K``/``-i``/``--config``/``--userconfig`` value, a
    ``-c include.path`` value, a value assigned to one of :data:`.network_configs_env._ENV_NAMES`) gives a marker
    (refused)."""
    inputs = [v for name, vs in assigned.items() if not name.startswith("(") for v in vs]   # (no cd, no prefix)
    for argv in argvs:
        inputs += named_inputs(argv) + _named_files("npm", argv)
        if argv and argv[0].rsplit("/", 1)[-1].lower() == "git":
            inputs += [v for n, v in _git_pairs(argv, {}, {}) if n.endswith(".path")]
    places = {os.path.normpath(os.path.expanduser(p)) for p in inputs if p and p != "-"}
    if any_input:   # (whether the commands name any such place)
        return ["(names one)"] if places else []
    out = []
    for text in written:
        path = os.path.normpath(os.path.expanduser(text))
        if any(path == p or path.startswith(p.rstrip("/") + "/") for p in places):
            out.append(f"(a configuration file {text!r} written before the client reads it)")
    return out


#: a program that creates a virtual environment (its tree holds no pip.conf): python -m venv D, virtualenv D, uv venv D
_VENV = re.compile(r"^(?:python[\d.]*|py) (?:-\S+ )*-m ?(?:venv|virtualenv)\b|^(?:virtualenv|uv venv)\b")


def tree_writes(writes: Sequence[list[PathForm]], argvs: Sequence[Sequence[str]]) -> tuple[str, ...]:
    """The literal spellings of ``writes`` (:attr:`.shell.model.Analysis.writes`) that :func:`written_over` reads:
    all but the clients' own (``curl --output-dir ~`` writes after it read ``~/.curlrc``), a ``cd``'s and those of a
    program that creates a virtual environment."""
    if not writes:   # (nothing written: no client's file to tell apart; session 26, the files not looked up)
        return ()
    left = own_writes_less(writes, [a for a in argvs if a and (a[0] in ("cd", "pushd") or _VENV.search(
        " ".join(a[:4])) or default_destinations(a, {}, {"HOME": "/"}, files_only=True)[0])])
    return tuple(dict.fromkeys(t for forms in left for t, tokens in forms if tokens is None))


def written_over(argvs: Iterable[Sequence[str]], assigned: Mapping[str, list[str]], written: Iterable[str],
                 env: Mapping[str, str] | None = None) -> list[str]:
    """A directory the command writes into (``written``: literal spellings, a client's own writes and a ``cd``'s
    left out) that holds a default configuration file of a client it runs (``cp -r d ~``, ``tar -xf a -C ~``,
    ``unzip a -d ~``, ``rsync -a d/ ~/``, then ``curl``): the names written below it are the archive's or the
    tree's, which no reading of the text shows, so ``~/.curlrc`` may be new when curl reads it; a marker (refused).
    A write of the file itself is :func:`config_writes`'s."""
    written = [t for t in written if os.path.isabs(os.path.normpath(os.path.expanduser(t)))]
    if not written:   # (no tree written: the clients' files are not looked up; session 26)
        return []
    files = [os.path.normpath(os.path.expanduser(f)) for argv in argvs
             for f in default_destinations(argv, assigned, env, files_only=True)[0] if not f.startswith("*")]
    out = []
    for text in written:
        path = os.path.normpath(os.path.expanduser(text))
        if os.path.isabs(path) and any(f.startswith(path.rstrip("/") + "/") for f in files):
            out.append(f"(a tree written into {text!r}, over a client's configuration files, before it reads them)")
    return out


_GIT_CONFIG_SCOPES = frozenset({"--global", "--system", "--local", "--worktree", "--add", "--replace-all",
                                "--unset", "--unset-all", "--bool", "--int", "--path", "--no-type", "--null", "-z",
                                "--includes", "--no-includes", "--name-only", "--show-origin", "--show-scope"})
_GIT_CONFIG_READS = frozenset({"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "get", "list",
                               "--unset", "--unset-all", "unset"})
_GIT_CONFIG_VALUES = frozenset({"--type", "--default", "--comment", "-f", "--file", "--blob"})


def config_set(argv: Sequence[str]) -> tuple[list[str], list[str]] | None:
    """What a client's own configuration command (its words literal) sets for later runs, read as the entry it writes:
    ``git config [--global] KEY VALUE`` (a ``url.*.insteadOf`` base, a proxy, a remote URL, ``core.sshCommand``),
    ``npm config set KEY VALUE``, ``pip config set global.KEY VALUE``; ``([], [])`` for one that only reads or unsets;
    None for one this reader does not know (``git config --edit``, ``include.path``: the file it names may be
    written later), which is then judged as a write of the file."""
    prog = argv[0].rsplit("/", 1)[-1].lower() if argv else ""
    if prog == "git":
        k = 1
        while k < len(argv) and argv[k].startswith("-"):
            k += 2 if argv[k] in GIT_GLOBAL_VALUES else 1
        if k >= len(argv) or argv[k] != "config":
            return None
        rest, j = [], k + 1
        reads = False
        while j < len(argv):
            w = argv[j]
            j += 1
            if w in _GIT_CONFIG_READS:
                reads = True
            elif w in _GIT_CONFIG_VALUES:
                j += 1
            elif w in ("set",):
                continue
            elif w.startswith("-") and w not in _GIT_CONFIG_SCOPES and "=" not in w:
                return None   # --edit, --rename-section, an option this reader does not know
            elif not w.startswith("-"):
                rest.append(w)
        if reads or len(rest) < 2:
            return [], []
        name = rest[0]
        if re.fullmatch(r"(?i)include\.path|includeif\..*\.path", name):
            return None
        return _git_destinations(_git_pairs(["git", "-c", f"{name}={rest[1]}"], {}, {}), "", _MAX_INCLUDE)
    if prog in ("npm", "pnpm", "yarn", "pip", "pip3") and len(argv) > 2 and argv[1] == "config":
        if argv[2] not in ("set", "add"):
            return ([], []) if argv[2] in ("get", "list", "ls", "delete", "unset", "debug") else None
        pairs = [tuple(w.split("=", 1)) for w in argv[3:] if "=" in w] or (
            [(argv[3], argv[4])] if len(argv) >= 5 else [])
        out: list[str] = []
        for key, value in pairs:
            key = key.split(".", 1)[-1] if prog.startswith("pip") else key
            if prog.startswith("pip"):
                out += _pip_conf("", f"[global]\n{key} = {value}\n")
            else:
                out += _npmrc(f"{key}={value}")
        return out, []
    return None
