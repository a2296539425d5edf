"""A configuration file a command writes before a network client of the same command reads it (s25): the write
half of :mod:`.network_configs` (which reads the files and refuses a write of one).

- :func:`read_after_write`: a file the command writes that a client is pointed at (``base64 -d > c; curl -K c``,
  ``> /tmp/g; GIT_CONFIG_GLOBAL=/tmp/g git fetch``);
- :func:`written_over`: a directory the command writes a tree into that holds a client's default file (``cp -r d
  ~``, ``tar -xf a -C ~``, ``unzip a -d ~``, ``rsync -a d/ ~/`` then ``curl``; s25 red team);
- :func:`own_writes_less`: the writes less a client's own words (``curl -K c`` names c, does not write it).

In each the guard would read the file's old content, so the command is refused.
"""

from __future__ import annotations

import os
from typing import Iterable, Mapping, Sequence

from .network_configs import _git_pairs, _named_files, default_destinations
from .network_files import named_inputs
from .shell.paths import PathForm

__all__ = ["own_writes_less", "read_after_write", "written_over"]


def own_writes_less(writes: Sequence[list[PathForm]], argvs: Iterable[Sequence[str]]) -> list[list[PathForm]]:
    """``writes`` (:attr:`.shell.model.Analysis.writes`) less, once each, those of each of ``argvs``' own words (a
    multiset difference: ``cp x c; curl -K c`` keeps cp's write of c, takes curl's reading of its ``-K`` value)."""
    from .shell.analysis import analyse_argv

    left = list(writes)
    keys = [tuple(t for t, _ in forms) for forms in left]
    for argv in argvs:
        for forms in analyse_argv(argv).writes:
            key = tuple(t for t, _ in forms)
            if key in keys:
                del left[keys.index(key)]
                keys.remove(key)
    return left


def read_after_write(argvs: Iterable[Sequence[str]], assigned: Mapping[str, list[str]],
                     written: Iterable[str], any_input: bool = False) -> list[str]:
    """A configuration the command writes before a client reads it (``base64 -d > c; curl -K c``, ``... > /tmp/g;
    GIT_CONFIG_GLOBAL=/tmp/g git fetch``, ``git -c include.path=F``): the file is read when the call is decided, so
    its old content is not what the client reads. A written path (``written``: its literal spellings) that is a file
    or below a directory the command points a client at (a ``-K``/``-i``/``--config``/``--userconfig`` value, a
    ``-c include.path`` value, a value assigned to one of :data:`.network_configs_env._ENV_NAMES`) gives a marker (refused)."""
    inputs = [v for vs in assigned.values() for v in vs]
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


def written_over(argvs: Iterable[Sequence[str]], assigned: Mapping[str, list[str]], written: Iterable[str],
                 env: Mapping[str, str] | None = None) -> list[str]:
    """A directory the command writes into (``written``: literal spellings, a client's own writes and a ``cd``'s
    left out) that holds a default configuration file of a client it runs (``cp -r d ~``, ``tar -xf a -C ~``,
    ``unzip a -d ~``, ``rsync -a d/ ~/``, then ``curl``): the names written below it are the archive's or the
    tree's, which no reading of the text shows, so ``~/.curlrc`` may be new when curl reads it; a marker (refused).
    A write of the file itself is :func:`config_writes`'s."""
    files = [os.path.normpath(os.path.expanduser(f)) for argv in argvs
             for f in default_destinations(argv, assigned, env, files_only=True)[0] if not f.startswith("*")]
    out = []
    for text in written:
        path = os.path.normpath(os.path.expanduser(text))
        if os.path.isabs(path) and any(f.startswith(path.rstrip("/") + "/") for f in files):
            out.append(f"(a tree written into {text!r}, over a client's configuration files, before it reads them)")
    return out
