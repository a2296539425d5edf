"""The environment a command gives the network clients it runs, and the clients it runs that the shell reader does
not see (s25 red team), for :mod:`.network_configs`' reading of their default configuration files.

- :func:`command_env`: the values the command assigns the variables that move a client's files (``HOME=/tmp/h
  curl``, ``export CURL_HOME=...``, ``HOME+=/x``: computed, refused), and the home of a user it switches to (``su bob
  -c 'curl ...'``, ``runuser -u bob --``, ``sudo``: real su and runuser set HOME to the passwd entry's home);
- :func:`unseen_clients`: a client named anywhere in the command's text that no command the shell reader found runs
  (``su bob -c 'curl ...'``, ``eval curl``, ``parallel curl :::``, ``python3 -c "os.system('curl ...')"``,
  ``unshare -r curl``): its default files are read as if it ran (a git one as if it connected), widening only.
"""

from __future__ import annotations

import re
from typing import Iterable, Mapping, Sequence

from .network_configs import _PROGRAMS, client_kind, default_destinations

__all__ = ["command_env", "names_client", "unseen_clients"]

#: the environment variables that move a client's configuration files
_ENV_NAMES = ("HOME", "CURL_HOME", "XDG_CONFIG_HOME", "WGETRC", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM",
              "GIT_CONFIG_NOSYSTEM", "PIP_CONFIG_FILE", "NPM_CONFIG_USERCONFIG", "NPM_CONFIG_GLOBALCONFIG",
              "VIRTUAL_ENV", "npm_config_userconfig", "npm_config_globalconfig", "NPM_CONFIG_PREFIX",
              "npm_config_prefix", "PREFIX", "GIT_DIR", "KUBECONFIG", "DOCKER_CONFIG")
_ASSIGN = re.compile(r"(?<![\w.-])(" + "|".join(_ENV_NAMES) + r"|GIT_CONFIG_(?:KEY|VALUE)_\d+)(\+?)=([^\s;&|<>()]*)")
#: such a variable named as a bare word, not assigned with NAME=: a builtin that sets it by name (``read HOME``,
#: ``printf -v HOME``, ``mapfile HOME``, ``HOME[0]=``, ``declare -n r=HOME``): its value is not known here
_NAMED_VAR = re.compile(r"(?<![\w$.{/-])(" + "|".join(_ENV_NAMES) + r")(?![\w.=+-]|\+=)")
#: a program that runs a command as another user, with that user's home (su, runuser: the passwd entry's; sudo's
#: default env_reset sets it too), and the words after it (the name whole: s26, ``git submodule`` read as ``su``
#: gave HOME ``~root``)
_SWITCH = re.compile(r"(?<![\w.-])(sudo|doas|su|runuser|pkexec)(?![\w.-])((?:\s+[^\s;&|()]+)*)")
_SU_VALUES = frozenset({"-c", "-s", "-g", "-G", "-w", "--command", "--shell", "--group", "--supp-group",
                        "--session-command", "--whitelist-environment"})


def _switched_users(program: str, words: Sequence[str]) -> list[str]:
    """The users ``program words...`` runs as: ``-u USER``/``--user[=]USER`` (sudo, doas, runuser, pkexec), su's
    first word that is no option; root without one."""
    users: list[str] = []
    k = 0
    while k < len(words):
        w = words[k]
        k += 1
        if w in ("-u", "--user"):
            users += words[k:k + 1]
            k += 1
        elif w.startswith(("-u", "--user=")) and program != "su":
            users.append(w.split("=", 1)[1] if w.startswith("--") else w[2:])
        elif program == "su" and w in _SU_VALUES:
            k += 1
        elif program == "su" and not w.startswith("-"):
            return users + [w]
    return users or ["root"]


#: an interpreter or pip named by its path (``/srv/venv/bin/python -m pip``, ``~/v/bin/pip3``): pip reads the
#: ``pip.conf`` of its prefix (``sys.prefix``, a virtual environment run without activating it)
_INTERPRETER = re.compile(r"(?<![\w.~/-])((?:/|~/)[^\s;&|<>()'\"`$]*?)/bin/(?:python|pip|pypy|pipx)[\d.-]*(?![\w.-])")


#: a directory a ``cd``/``pushd`` names (its repository is read for a later git, key ``(cd)``; session 26: a relative
#: one too, and one the shell computes, kept as written: refused)
_CD = re.compile(r"(?<![\w.-])(?:cd|pushd)\s+(?:--\s+)?(['\"]?)([^\s;&|<>()'\"`-][^\s;&|<>()'\"`]*)\1(?=$|[\s;&|)])")


def _created(text: str) -> list[str]:
    """The directories a command's ``git clone``, ``git init``, ``git worktree add`` and ``mkdir`` make (a clone's operands, and their last
    components without ``.git``: its default directory), for a later ``cd`` into one (session 26: ``git clone URL &&
    cd x && git submodule update`` reads no repository the guard could find, and needs none: the new one's
    configuration is what the command writes)."""
    out: list[str] = []
    if "mkdir" not in text and "git" not in text:
        return out
    for part in re.split(r"[;&|\n()]+", text):
        words = [w.strip("'\"") for w in part.split()]
        if words[:1] == ["mkdir"]:
            out += [w for w in words[1:] if not w.startswith("-")]
        elif words[:1] == ["git"] and "worktree" in words and "add" in words:   # (git worktree add [-b B] PATH)
            rest = words[words.index("add") + 1:]
            out += [w for k, w in enumerate(rest) if not w.startswith("-") and (k == 0 or rest[k - 1] not in (
                "-b", "-B", "--reason"))][:1]
        elif words[:1] == ["git"] and ("clone" in words or "init" in words):
            k = words.index("clone") if "clone" in words else words.index("init")
            operands = [w for w in words[k + 1:] if not w.startswith("-")]
            out += operands + [re.sub(r"\.git$", "", w.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1])
                               for w in operands]
    return [w for w in out if w]


def command_env(readings: Iterable[str]) -> dict[str, list[str]]:
    """Per variable of :data:`_ENV_NAMES`, the values the command's texts (as written and as bash expands them)
    assign it (``HOME=/tmp/h curl ...``, ``export WGETRC=rc``); a value the shell computes is kept as written, and
    one appended to (``HOME+=/x``: the old value is the tool's) or set by name (``read HOME``) is kept as a name no
    file has (refused). A program
    that switches user (``su bob -c 'curl ...'``, ``runuser -u bob --``, ``sudo curl``: HOME becomes that user's)
    assigns HOME ``~USER`` (s25 red team: real su and runuser set it); an interpreter or pip named by its absolute
    path gives its prefix (key ``(prefix)``: pip 23 reads ``PREFIX/pip.conf``), a ``cd`` its absolute directory
    (key ``(cd)``: a later git reads its repository's files; s26: a relative one too), the directories it makes
    (key ``(created)``, :func:`_created`); s25 red team. A key in parentheses is no variable: no
    file of the command is read as written there (:func:`.network_configs_writes.read_after_write`)."""
    out: dict[str, list[str]] = {}
    for text in readings:
        for m in _ASSIGN.finditer(text):
            out.setdefault(m.group(1), []).append(("*+=" if m.group(2) else "") + m.group(3).strip("'\""))
        for m in _NAMED_VAR.finditer(text):   # read HOME, printf -v HOME, mapfile HOME, HOME[0]=, declare -n r=HOME
            out.setdefault(m.group(1), []).append(f"*{m.group(1)} set by name")
        for m in _SWITCH.finditer(text):
            users = _switched_users(m.group(1), m.group(2).split())
            out.setdefault("HOME", []).extend("~" + u.strip("'\"") for u in users)
        out.setdefault("(prefix)", []).extend(m.group(1) for m in _INTERPRETER.finditer(text))
        out.setdefault("(cd)", []).extend(m.group(2) for m in _CD.finditer(text))   # cd /r && git fetch: /r's repo
        out.setdefault("(created)", []).extend(_created(text))
    for name in ("(prefix)", "(cd)", "(created)"):
        if not out.get(name):
            out.pop(name, None)
    return out


_CLIENT_WORD = re.compile(r"(?:(?<![\w.-])|(?<=-m))(" + "|".join(sorted(_PROGRAMS, key=len, reverse=True)) +
                          r")(?:-?\d+(?:\.\d+)*)?(?![\w.-])")   # (pip3.11, python -mpip)


def names_client(readings: Iterable[str], argvs: Iterable[Sequence[str]]) -> bool:
    """Whether the command runs a network client (an argv of one) or names one anywhere (a program the reader does
    not unwrap may run it): only then do the places it assigns (``HOME=``, ``PREFIX=``...) lead to a client's file
    (``make PREFIX=/usr/local install`` names none, and writes /usr/local as make's operand)."""
    return any(client_kind(a)[0] for a in argvs) or any(_CLIENT_WORD.search(t.lower()) for t in readings)


def unseen_clients(readings: Iterable[str], argvs: Iterable[Sequence[str]], assigned: Mapping[str, list[str]],
                   env: Mapping[str, str] | None = None) -> list[tuple[list[str], list[str]]]:
    """``(destinations, commands)`` of the default files of each client named in ``readings`` (the command's texts)
    whose kind no argv of ``argvs`` runs: a program the shell reader does not unwrap runs it (see the module
    docstring). Its own words are not known, so its every candidate file is read (no ``-q``, git as ``git fetch``)."""
    seen = {client_kind(a)[0] for a in argvs}
    out = []
    for name in dict.fromkeys(m.group(1) for text in readings for m in _CLIENT_WORD.finditer(text.lower())):
        if _PROGRAMS[name] not in seen:
            seen.add(_PROGRAMS[name])
            out.append(default_destinations([name, "fetch"] if name == "git" else [name], assigned, env))
    return out
