"""The destinations a network client reads from its default configuration files, and writes of those files (s25).

``printf 'url = "http://169.254.169.254/"' > ~/.curlrc`` then ``curl https://example.com`` fetches the metadata
address too (curl 7.88 reads ``~/.curlrc`` unless ``-q`` is its first option); ``git config --global
url.http://10.0.0.7/.insteadOf https://github.com/`` then ``git clone https://github.com/x/y`` clones from 10.0.0.7; a
``~/.wgetrc`` ``http_proxy``, a ``~/.npmrc`` ``registry``, a ``pip.conf`` ``index-url`` move every later run. The
command that runs the client shows none of it. Three readings close the class:

- **the write** (:func:`config_writes`): a command that writes a file of :data:`NETWORK_CONFIGS` (a redirection,
  ``cp``, ``tee``, ``sed -i``, ``git config --global``..., as the shell reader finds writes,
  :attr:`.shell.model.Analysis.writes`) is refused: what the file will hold is not known here
  (``base64 -d > ~/.curlrc``);
- **the run** (:func:`default_destinations`): a client's default files are read as the client reads them, where they
  exist when the call is decided, with the guard process's environment and the command's own assignments
  (``HOME=/tmp/h curl``, ``CURL_HOME=``, ``WGETRC=``, ``GIT_CONFIG_GLOBAL=``, ``PIP_CONFIG_FILE=``...; one the shell
  computes refuses): curl's ``$CURL_HOME/.curlrc``, ``$XDG_CONFIG_HOME/.curlrc``, ``~/.curlrc`` (curl's own grammar,
  :mod:`.network_files`; not after a first ``-q``/``--disable``); wget's ``$WGETRC`` or ``~/.wgetrc`` and
  ``/etc/wgetrc`` (not with ``--no-config``); git's system and global files (``$GIT_CONFIG_SYSTEM``/``/etc/gitconfig``,
  ``$GIT_CONFIG_GLOBAL`` or ``$XDG_CONFIG_HOME/git/config`` and ``~/.gitconfig``, their ``include.path`` and
  ``includeIf.*.path`` files) for a subcommand that connects (``url.*.insteadOf`` bases, ``http[.URL].proxy``,
  ``remote.*.url``/``pushurl``/``proxy``, ``http[.URL].curloptResolve``'s addresses (s26);
  ``core.sshCommand``/``core.gitProxy`` are commands read again);
  npm's (``npx``, ``pnpm``, ``yarn``) ``$NPM_CONFIG_USERCONFIG`` or ``~/.npmrc`` and ``/etc/npmrc``
  (``registry``, ``@scope:registry``, ``proxy``, ``https-proxy``); pip's ``$PIP_CONFIG_FILE``, ``/etc/pip.conf``,
  ``/etc/xdg/pip/pip.conf``, ``~/.pip/pip.conf``, ``~/.config/pip/pip.conf``, ``$VIRTUAL_ENV/pip.conf``
  (``index-url``, ``extra-index-url``, ``find-links`` URLs, ``proxy``); kubectl's and helm's (``k9s``)
  ``$KUBECONFIG`` (a list) or ``~/.kube/config`` and ``--kubeconfig`` (every ``server``/``proxy-url``; s26); docker's
  contexts' endpoints (``$DOCKER_CONFIG`` or ``~/.docker``, ``contexts/meta/*/meta.json``; not a local socket's). Every candidate file is read, not only the
  one the client would pick (widening only refuses more). A missing file is none; one that exists but cannot be
  read (permissions, over 1 MiB) refuses (fail closed), and so does a relative place a command assigns
  (``CURL_HOME=.``: under the tool's working directory, which the guard does not know). Also read: what a git
  command sets for itself (``-c NAME=VALUE``, whose ``include.path`` file is read; ``GIT_CONFIG_KEY_<n>``/
  ``GIT_CONFIG_VALUE_<n>``), npm's ``--userconfig``/``--globalconfig`` file, and a client's own configuration
  command with literal words read as the entry it sets (:func:`.network_configs_writes.config_set`: ``git config
  --global url.X.insteadOf Y``, ``npm config set registry X``), which is then no unknown write;
- **the write before the read** (:func:`.network_configs_writes.read_after_write`): a file the same command writes
  before a client reads it (``base64 -d > c; curl -K c``, ``> /tmp/g; GIT_CONFIG_GLOBAL=/tmp/g git fetch``)
  refuses: the guard would read its old content; so does a directory written into whose tree holds a client's
  default file (:func:`.network_configs_writes.written_over`: ``cp -r d ~``, ``tar -xf a -C ~``, ``unzip a -d ~``,
  ``rsync -a d/ ~/`` then ``curl``: the names are the tree's). Not seen (s25 red team): an extraction into the
  working directory (``cd ~ && tar xf a``), ``tar -P``'s absolute members, a directory whose name the shell
  computes (``cp -r d/. $HOME/``: the rules guard refuses it).

A write whose whole name the shell computes (``> ~/$f``) is not matched (:func:`unfixed_writes` catches one in a
command that names a client's file: ``tee $HOME/.wgetrc``); the rules guard refuses it as a path it cannot fix.

The guard reads the files of the machine it runs on, as :mod:`.network_sshconfig` does: a deployment whose tools run
elsewhere reads the wrong files (its writes are still refused). A deployment whose own files name an internal
host (a corporate proxy, a registry mirror) lists it in ``allow``. A repository a git command names by an absolute
path (``-C /r``, ``cd /r &&``, ``--git-dir``, ``GIT_DIR``) has its ``config`` read too (s25 red team), and (session
26, :mod:`.network_repos`) one a relative place names (``git -C repo``, ``cd repo &&``, ``GIT_DIR=r/.git``) or the
command's own directory: the call's working directory (a ``cwd``-like argument, a relative one below the guard's;
else the guard's: the tool's where the guard runs beside it, as a hook does); a place found there by no reading
refuses, but a directory the command makes (``git clone URL x && cd x``, ``git -C x``); a work tree's
``.gitmodules`` too (``submodule.*.url``, and ``.git/config``'s, whose ``update = !cmd`` runs). A git builtin that
connects nowhere (``status``, ``log``...) reads no file; npm's project ``.npmrc`` is read the same way, every parent
up (s26). Not read: a client run in another directory without naming it, nor what a remote chooses, like a
redirect's target (``git clone X x && cd x && git submodule update --init``, ``git clone --recurse-submodules``: the
new ``.gitmodules`` is the remote's, unknown when the call is decided; s26: allowed, as the clone's own URL is
checked; an egress proxy closes it). Read
on the guard's machine when the call is decided: a file changed between decision and run is not seen. Files are
read only when regular (:func:`.network_files.read_regular`: a FIFO or device refuses, never waited on), split at
``\n`` as the clients split them. ssh's files are :mod:`.network_sshconfig`'s (ssh reads the passwd entry's home,
not ``$HOME``). Written by hand: the formats are small and no maintained Python package reads git's or curl's
configuration grammar.
"""

from __future__ import annotations

import configparser
import glob
import os
import re
import shutil
import sys
from typing import Iterable, Mapping, Sequence

from .network_cache import read_cached
from .network_files import (config_lines, curl_config, docker_context_hosts, kubeconfig_destinations, read_limited,
                            wgetrc_destinations)
from .network_programs import program_destinations
from .network_repos import git_subcommand, project_files, repository_files
from .network_remotes import git_remote_host
from .shell.gitargs import GLOBAL_VALUES as GIT_GLOBAL_VALUES
from .shell.model import first_match, glob_matcher
from .shell.paths import PathForm

__all__ = ["NETWORK_CONFIGS", "client_kind", "config_writes", "default_destinations", "git_entries",
           "unfixed_writes"]

#: files a network client reads its destinations or proxies from (fnmatch, ``*`` crosses ``/``; a relative path is
#: read below any directory): curl's, wget's, git's (and a repository's), npm's and yarn's, pip's, ssh's, Docker's
#: (``proxies``), and the environment files a later shell or session reads ``http_proxy`` from
NETWORK_CONFIGS: tuple[str, ...] = (
    "*.curlrc", "*/_curlrc", "*.wgetrc", "*/wgetrc", "*/wget2rc", "*.gitconfig", "*/.config/git/config",
    "*.git/config", "*.git/config.worktree", "*.gitmodules", "*/etc/gitconfig", "*.npmrc", "*/etc/npmrc",
    "*/.config/npm/npmrc", "*/.yarnrc", "*/.yarnrc.yml", "*pip.conf", "*pip.ini", "*.pydistutils.cfg", "*/.ssh/config",
    "*/etc/ssh/ssh_config", "*/etc/ssh/ssh_config.d/*.conf", "*/.docker/config.json", "/etc/environment",
    "*/.config/environment.d/*.conf", "*.bashrc", "*.bash_profile", "*.bash_login", "*.profile", "*.zshrc",
    "*.zshenv", "*.zprofile", "*.envrc", "/etc/profile", "/etc/profile.d/*.sh", "/etc/bash.bashrc", "/etc/zshenv",
    "/etc/zsh/zshenv", "/etc/zprofile", "/etc/zsh/zprofile", "/etc/zshrc", "/etc/zsh/zshrc",
    # session 26: the resolver's files (a name written into /etc/hosts reaches the address written beside it)
    "/etc/hosts", "/etc/resolv.conf", "/etc/nsswitch.conf", "/etc/host.conf", "/etc/gai.conf",
    "/etc/systemd/resolved.conf", "/etc/systemd/resolved.conf.d/*.conf", "/etc/dnsmasq.conf", "/etc/dnsmasq.d/*.conf",
    "*/.kube/config")
_MATCHER = glob_matcher(NETWORK_CONFIGS)


def config_writes(configs: Iterable[Sequence[PathForm]]) -> list[str]:
    """The spellings of the written paths among ``configs`` (:attr:`.shell.model.Analysis.writes`: each a path's
    spellings) that may be a file of :data:`NETWORK_CONFIGS`. A spelling whose last component starts with a glob or
    a part the shell computes (``*.txt``, ``refs/*``: bash's glob does not match a leading dot, and a project's
    ``*.txt`` is no client's file) is not counted: a write under a name computed whole (``> ~/$f``) is the rules
    guard's (it refuses it as a path it cannot fix)."""
    return [t for forms in configs if (t := first_match([f for f in forms if f[0].rsplit("/", 1)[-1][:1] not in
                                                         "*?[" and f[0].strip()], _MATCHER)) is not None]


# the names of those files as a text may spell them (quotes and backslashes removed first)
_NAMED = re.compile(r"curlrc|wget2?rc|gitconfig|git/config|npmrc|yarnrc|pip\.(?:conf|ini)|pydistutils|ssh/config|"
                    r"ssh_config|docker/config|environment|bash_?rc|bash_(?:profile|login)|profile|zsh(?:rc|env)|"
                    r"zprofile|envrc|etc/hosts|resolv\.conf|nsswitch|gai\.conf|host\.conf|resolved\.conf|dnsmasq", re.I)


def unfixed_writes(command: str, paths: Iterable[PathForm]) -> list[str]:
    """A write the shell reader cannot fix that may be such a file: the command's text names one of
    :data:`NETWORK_CONFIGS` (``$HOME/.curlrc`` unquoted, ``tee ${H}/.wgetrc``) and one of its paths has a part the
    shell computes or a glob (read as the file: refused); [] otherwise."""
    named = _NAMED.search(command) or _NAMED.search(re.sub(r"[\\'\"]", "", command))
    if named is None or not any("*" in text for text, _ in paths):
        return []
    return [f"a path the shell computes, in a command naming {named.group(0)!r}"]


def _unreadable(path: str, why: str) -> str:
    return f"(the configuration file {path!r} cannot be read here: {why})"


def _read_file(path: str, kind: str, depth: int = 0) -> tuple[list[str], list[str]]:
    """``(destinations, commands)`` of one configuration file as ``kind`` reads it; a missing file gives none, one
    that exists but cannot be read a marker no host reader takes for a public name. Cached
    (:func:`.network_cache.read_cached`) while every file the reading read is as it was: the same answer as reading
    again."""
    if path.startswith("*?"):   # (_located: a relative place no base reaches)
        return [_unreadable(path[2:], "a place not found from the call's working directory")], []
    path = os.path.expanduser(path)
    if any(c in path for c in "*$`") or not path.strip():
        return [_unreadable(path, "its name is computed by the shell")], []
    try:
        found = read_cached(path, (kind, depth), lambda: _parse(path, kind, depth))
    except OSError as e:
        return [_unreadable(path, type(e).__name__)], []
    return ([], []) if found is None else (list(found[0]), list(found[1]))


def _parse(path: str, kind: str, depth: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    text = read_limited(path)
    if text is None:
        return (_unreadable(path, "over 1 MiB or not a file"),), ()
    if kind == "curl":
        return tuple(curl_config(text)), ()
    if kind == "wget":
        return tuple(wgetrc_destinations(text)), ()
    if kind == "npm":
        return tuple(_npmrc(text, depth)), ()
    if kind == "pip":
        return tuple(_pip_conf(path, text)), ()
    if kind in ("kube", "docker"):
        found = kubeconfig_destinations(text) if kind == "kube" else docker_context_hosts(text)
        return tuple(found) if found is not None else (_unreadable(path, "no YAML or JSON"),), ()
    if kind == "alias":   # (a git file's alias names, for default_destinations)
        return tuple(n.split(".", 1)[1] for n, _ in git_entries(text) if n.startswith("alias.")), ()
    dests, commands = _git_destinations(git_entries(text), path, depth)
    return tuple(dests), tuple(commands)


_MAX_INCLUDE = 10   # git's own limit on nested includes (and npm's files named in turn, here)
_NPM_KEYS = re.compile(r"(?:@[^:=\s]+:)?registry|proxy|https-proxy|http-proxy", re.I)


#: npm keys that name another configuration file npm reads (``prefix``: its ``etc/npmrc``, the global one)
_NPM_FILES = {"globalconfig": "", "userconfig": "", "prefix": "etc/npmrc"}


def _npmrc(text: str, depth: int = 0) -> list[str]:
    """npm's ini: ``key = value`` lines (``;``/``#`` comments); ``registry``, ``@scope:registry``, the proxies, and
    the files ``globalconfig``, ``userconfig`` and ``prefix`` name (npm 11 reads ``$prefix/etc/npmrc`` as its global
    file: s25 red team), read in turn (``depth``: how deep this file is named)."""
    out: list[str] = []
    for line in re.split(r"[\r\n]+", text):   # (npm's ini package splits at either)
        key, eq, value = line.strip().partition("=")
        key, value = key.strip().lower(), value.strip().strip("'\"")
        if not eq or key.startswith((";", "#")):
            continue
        if "${" in value and (_NPM_KEYS.fullmatch(key) or key in _NPM_FILES):
            out.append(_unreadable(key, "its value reads the environment"))
        elif _NPM_KEYS.fullmatch(key):
            out.append(value)
        elif key in _NPM_FILES and value:
            named = os.path.join(value, _NPM_FILES[key]) if _NPM_FILES[key] else value
            out += [_unreadable(value, "named too deep")] if depth >= _MAX_INCLUDE else _read_file(
                named if named.startswith(("/", "~")) else "*" + named, "npm", depth + 1)[0]
    return out


def _pip_conf(path: str, text: str) -> list[str]:
    """pip's configuration (``configparser``, as pip reads it): every section's ``index-url``, ``extra-index-url``,
    ``find-links`` (the URLs among their blank-separated values) and ``proxy``."""
    parser = configparser.RawConfigParser()
    try:
        parser.read_string(text, source=path)
    except configparser.Error as e:
        return [_unreadable(path, type(e).__name__)]
    out: list[str] = []
    for section in parser.sections():
        for key, value in parser.items(section):
            key = key.replace("_", "-")
            if key in ("index-url", "extra-index-url", "find-links", "i"):
                out += [w for w in value.split() if "://" in w]
            elif key == "proxy" and value.strip():
                out.append(value.strip())
    return out


def _git_value(raw: str) -> str:
    """A git config value: quotes removed, ``\\"``, ``\\\\``, ``\\n``, ``\\t`` unescaped, a ``#``/``;`` outside
    quotes ends it."""
    out, quoted, k = [], False, 0
    while k < len(raw):
        c = raw[k]
        if c == "\\" and k + 1 < len(raw):
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(raw[k + 1], raw[k + 1]))
            k += 2
            continue
        if c == '"':
            quoted = not quoted
        elif c in "#;" and not quoted:
            break
        else:
            out.append(c)
        k += 1
    return "".join(out).strip()


_SECTION = re.compile(r'\s*\[\s*([\w.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\](.*)')


def git_entries(text: str) -> list[tuple[str, str]]:
    """``(name, value)`` of every entry of a git config text: the name ``section[.subsection].key`` (section and key
    folded, the subsection as written; ``[a.B]`` folds to ``a.b``), continuation lines joined."""
    text = re.sub(r"\\\r?\n", "", text)
    section, out = "", []
    for line in config_lines(text):
        m = _SECTION.match(line)
        if m:
            head, sub, line = m.group(1).lower(), m.group(2), m.group(3)
            section = head if sub is None else head + "." + re.sub(r"\\(.)", r"\1", sub)
        key, eq, value = line.strip().partition("=")
        key = key.strip()
        if key and key[0] not in "#;[" and re.fullmatch(r"[A-Za-z][\w-]*", key) and section:
            out.append((f"{section}.{key.lower()}", _git_value(value) if eq else "true"))
    return out


def _git_destinations(entries: list[tuple[str, str]], path: str, depth: int) -> tuple[list[str], list[str]]:
    """``(destinations, commands)`` of git config entries (:func:`git_entries`) of the file ``path``, its include
    files read in turn (``depth``: how deep this file is included)."""
    dests: list[str] = []
    commands: list[str] = []
    for name, value in entries:
        low = name.lower()
        if low.startswith("url.") and low.endswith((".insteadof", ".pushinsteadof")):
            base = name[4:name.rfind(".")]
            dests.append(base if "://" in base else git_remote_host(base) or base)
        elif low.startswith("remote.") and low.endswith((".url", ".pushurl")) or (
                low.startswith("submodule.") and low.endswith(".url") and not value.startswith(("./", "../"))):
            dests.append(value if "://" in value else git_remote_host(value) or value)   # (a submodule's: s26)
        elif low.startswith("submodule.") and low.endswith(".update") and value.startswith("!"):
            commands.append(value[1:])   # (update = !command: git runs it in .git/config, not from .gitmodules)
        elif low.endswith(".proxy") and low.startswith(("http.", "https.", "remote.")) and value:
            dests.append(value)
        elif low.startswith("http.") and low.endswith(".curloptresolve") and value:   # curl's --resolve (s26)
            dests += program_destinations(["curl", "--resolve", value])
        elif low in ("core.sshcommand", "core.gitproxy") and value:
            commands.append(value)
        elif (low == "include.path" or low.startswith("includeif.") and low.endswith(".path")) and value:
            if depth >= _MAX_INCLUDE:
                dests.append(_unreadable(value, "included too deep"))
                continue
            inc = os.path.expanduser(value)
            inc = inc if os.path.isabs(inc) else os.path.join(os.path.dirname(path), inc)
            more = _read_file(inc, "git", depth + 1)
            dests += more[0]
            commands += more[1]
    return dests, commands


#: git's subcommands that connect to a remote (a configured alias is read as one too)
_GIT_CONNECTS = frozenset({"maintenance", "for-each-repo", "remote-ext", "remote-fd", "submodule--helper",
                           "fetch", "pull", "push", "clone", "ls-remote", "remote", "submodule", "archive",
                           "fetch-pack", "send-pack", "request-pull", "lfs", "fsck"})
#: git's builtins (2.39, ``git --list-cmds=builtins``) that connect to no remote: an alias of the same name is
#: ignored by git, so their files need not be read (session 26: most git commands an agent runs)
_GIT_LOCAL = frozenset("""add am annotate apply blame branch cat-file check-attr check-ignore check-mailmap
check-ref-format checkout-index cherry cherry-pick clean column commit commit-graph commit-tree config count-objects
describe diff diff-files diff-index diff-tree fmt-merge-msg for-each-ref format-patch grep hash-object help init
init-db interpret-trailers log ls-files ls-tree mailinfo mailsplit merge-base merge-file mktag mktree mv name-rev
notes pack-refs patch-id range-diff read-tree reflog rerere reset rev-list rev-parse rm shortlog show show-branch
show-ref stripspace symbolic-ref tag update-index update-ref var verify-commit verify-tag version whatchanged
write-tree status stash""".split())
_PROGRAMS = {"curl": "curl", "wget": "wget", "wget2": "wget", "git": "git", "npm": "npm", "npx": "npm",
             "pnpm": "npm", "yarn": "npm", "pip": "pip", "pip3": "pip", "pipx": "pip", "kubectl": "kube",
             "helm": "kube", "k9s": "kube", "docker": "docker"}
_VERSION = re.compile(r"-?\d+(?:\.\d+)*$")   # pip3.11, pip-3.11, python3.12, wget2: the program's version


def client_kind(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """The kind of client (``curl``, ``wget``, ``git``, ``npm``, ``pip``) ``argv`` runs, by its program's name less a
    version (``pip3.11``; s25 red team: only ``pip``/``pip3`` were known), and the argv it reads as: a Python
    (``python3.11``, ``py``) running the module pip (``-m pip``, ``-mpip``, after other options) is ``pip``."""
    if not argv:
        return None, []
    base = argv[0].rsplit("/", 1)[-1].lower()
    name = base if base in _PROGRAMS else _VERSION.sub("", base)
    if name in ("python", "py", "pypy"):
        k = 1
        while k < len(argv) and argv[k].startswith("-") and argv[k] != "-c" and not argv[k].startswith("-m"):
            k += 2 if argv[k] in ("-W", "-X", "-Q") else 1
        module = (argv[k + 1] if argv[k] == "-m" and k + 1 < len(argv) else argv[k][2:]) if k < len(argv) \
            and argv[k].startswith("-m") else ""
        if _VERSION.sub("", module.lower()) == "pip":
            return "pip", ["pip", *argv[k + (2 if argv[k] == "-m" else 1):]]
        return None, list(argv)
    return _PROGRAMS.get(name), list(argv)


def _values(name: str, env: Mapping[str, str], assigned: Mapping[str, list[str]]) -> list[str]:
    """The guard's value of the variable ``name`` and those the command assigns it (a relative one names a place
    under the tool's working directory, which the guard does not know: kept as a name no file has, refused)."""
    own = [v if v.startswith(("/", "~")) or name == "GIT_CONFIG_NOSYSTEM" else f"*{v}" for v in assigned.get(name, [])]
    return list(dict.fromkeys(([env[name]] if env.get(name) else []) + own))


def _homes(env: Mapping[str, str], assigned: Mapping[str, list[str]]) -> list[str]:
    return _values("HOME", env, assigned) or [os.path.expanduser("~")]


def _files(kind: str, argv: Sequence[str], env: Mapping[str, str], assigned: Mapping[str, list[str]]) -> list[str]:
    """The default configuration files the client ``kind`` reads for ``argv`` (every candidate)."""
    homes = _homes(env, assigned)
    xdg = _values("XDG_CONFIG_HOME", env, assigned)
    if kind == "curl":
        if len(argv) > 1 and argv[1] in ("-q", "--disable"):
            return []
        return [os.path.join(d, ".curlrc") for d in _values("CURL_HOME", env, assigned) + xdg + homes]
    if kind == "wget":
        if "--no-config" in argv:
            return []
        own = _values("WGETRC", env, assigned)
        return own + [os.path.join(h, ".wgetrc") for h in homes] + ["/etc/wgetrc", "/usr/local/etc/wgetrc"]
    if kind == "npm":
        user = _values("NPM_CONFIG_USERCONFIG", env, assigned) + _values("npm_config_userconfig", env, assigned)
        glob_ = _values("NPM_CONFIG_GLOBALCONFIG", env, assigned) + _values("npm_config_globalconfig", env, assigned)
        glob_ += [os.path.join(p, "etc", "npmrc") for name in ("NPM_CONFIG_PREFIX", "npm_config_prefix", "PREFIX")
                  for p in _values(name, env, assigned)]   # (npm's global file is $prefix/etc/npmrc)
        return user + [os.path.join(h, ".npmrc") for h in homes] + glob_ + [
            "/etc/npmrc", "/usr/etc/npmrc", "/usr/local/etc/npmrc"] + project_files(".npmrc", assigned)
    if kind == "pip":
        own = _values("PIP_CONFIG_FILE", env, assigned)
        if os.devnull in own and len(own) == 1:
            return []
        return [f for f in own if f != os.devnull] + ["/etc/pip.conf", "/etc/xdg/pip/pip.conf"] + [
            os.path.join(d, "pip", "pip.conf") for d in xdg + [os.path.join(h, ".config") for h in homes]] + [
            os.path.join(h, ".pip", "pip.conf") for h in homes] + [
            os.path.join(v, "pip.conf") for v in _values("VIRTUAL_ENV", env, assigned) + _pip_prefixes(env) + [
                p for p in assigned.get("(prefix)", []) if p.startswith(("/", "~"))]] + [
            os.path.join(d, "pip", "pip.conf") for d in env.get("XDG_CONFIG_DIRS", "/etc/xdg").split(":") if d]
    if kind == "kube":   # $KUBECONFIG (a list), else ~/.kube/config; --kubeconfig (_named_files); no "config" run
        if argv[1:2] == ["config"]:
            return []
        listed = [f for v in _values("KUBECONFIG", env, assigned) for f in v.split(os.pathsep) if f]
        return listed or [os.path.join(h, ".kube", "config") for h in homes]
    if kind == "docker":   # every context's endpoint ($DOCKER_CONFIG or ~/.docker: contexts/meta/*/meta.json)
        dirs = _values("DOCKER_CONFIG", env, assigned) or [os.path.join(h, ".docker") for h in homes]
        return [f for d in dirs for f in sorted(glob.glob(os.path.join(glob.escape(os.path.expanduser(d)), "contexts",
                                                                        "meta", "*", "meta.json")))]
    out = _values("GIT_CONFIG_GLOBAL", env, assigned) or [
        os.path.join(d, "git", "config") for d in xdg + [os.path.join(h, ".config") for h in homes]] + [
        os.path.join(h, ".gitconfig") for h in homes]
    nosystem = _values("GIT_CONFIG_NOSYSTEM", env, assigned)   # (git's boolean: a computed or false one reads it)
    if not nosystem or not all(v.lower() in ("1", "true", "yes", "on") for v in nosystem):
        out += _values("GIT_CONFIG_SYSTEM", env, assigned) or ["/etc/gitconfig"]
    return out + repository_files(argv, env, assigned)


def _pip_prefixes(env: Mapping[str, str]) -> list[str]:
    """The prefixes whose ``pip.conf`` pip reads as its site file (``sys.prefix``): the guard's own interpreter's,
    and those of the ``pip``/``python3`` the tool's ``PATH`` finds (the directory above its ``bin``, as named and
    with links resolved)."""
    out = [sys.prefix, sys.base_prefix]
    for name in ("pip", "pip3", "python3", "python"):
        found = shutil.which(name, path=env.get("PATH"))
        out += [os.path.dirname(os.path.dirname(p)) for p in ([found, os.path.realpath(found)] if found else [])]
    return list(dict.fromkeys(out))


def _named_files(kind: str, argv: Sequence[str]) -> list[str]:
    """The configuration files a command names: npm's ``--userconfig F``/``--globalconfig F`` (also ``=F``),
    kubectl's and helm's ``--kubeconfig F``."""
    if kind == "kube":
        return [w.split("=", 1)[1] if "=" in w else argv[k + 1] if k + 1 < len(argv) else ""
                for k, w in enumerate(argv) if w == "--kubeconfig" or w.startswith("--kubeconfig=")]
    if kind != "npm":
        return []
    out = []
    for k, w in enumerate(argv[1:], start=1):
        name, eq, value = w.partition("=")
        if name in ("--userconfig", "--globalconfig"):
            out.append(value if eq else argv[k + 1] if k + 1 < len(argv) else "")
        elif name == "--prefix" and (value if eq else argv[k + 1] if k + 1 < len(argv) else "").startswith("/"):
            out.append(os.path.join(value if eq else argv[k + 1], "etc", "npmrc"))   # (a relative one: not read)
    return out


def _git_pairs(argv: Sequence[str], env: Mapping[str, str], assigned: Mapping[str, list[str]]) -> list[tuple[str, str]]:
    """The entries a git command sets for itself: ``-c NAME=VALUE`` before the subcommand (name folded as a file's),
    and ``GIT_CONFIG_KEY_<n>``/``GIT_CONFIG_VALUE_<n>`` of the environment and the command's assignments."""
    pairs: list[tuple[str, str]] = []
    k = 1
    while k < len(argv) and argv[k].startswith("-"):
        w = argv[k + 1] if argv[k] == "-c" and k + 1 < len(argv) else argv[k][2:] if argv[k].startswith("-c") else ""
        name, eq, value = w.partition("=")
        if eq:
            pairs.append((name, value))
        k += 2 if argv[k] in GIT_GLOBAL_VALUES else 1
    keys = {n[len("GIT_CONFIG_KEY_"):]: env[n] for n in env if n.startswith("GIT_CONFIG_KEY_")}
    keys.update({n[len("GIT_CONFIG_KEY_"):]: vs[-1] for n, vs in assigned.items() if n.startswith("GIT_CONFIG_KEY_")})
    for i, key in keys.items():
        values = assigned.get(f"GIT_CONFIG_VALUE_{i}") or [env.get(f"GIT_CONFIG_VALUE_{i}", "")]
        pairs += [(key, v) for v in values]
    out = []
    for name, value in pairs:
        head, _, key = name.rpartition(".")
        section, dot, sub = head.partition(".")
        out.append((f"{section.lower()}{dot}{sub}.{key.lower()}", value))
    return out


def default_destinations(argv: Sequence[str], assigned: Mapping[str, list[str]],
                         env: Mapping[str, str] | None = None, files_only: bool = False) -> tuple[list[str], list[str]]:
    """``(destinations, commands)`` the client ``argv`` (program first, as bash expanded it) reads from its default
    configuration files (see the module docstring); ``assigned``: the command's own assignments
    (:func:`.network_configs_env.command_env`); ``env``: the environment (the guard process's by default).
    ``files_only``: the files themselves, unread, as ``(files, [])``."""
    if not argv:
        return [], []
    kind, argv = client_kind(argv)
    if kind is None:
        return [], []
    env = os.environ if env is None else env
    if kind == "git" and not files_only and git_subcommand(argv[1:]) in _GIT_LOCAL:
        return [], []   # (a builtin that connects nowhere: git runs no alias named as a builtin)
    if files_only:
        return list(dict.fromkeys(_files(kind, argv, env, assigned) + _named_files(kind, argv))), []
    dests: list[str] = []
    commands: list[str] = []
    for path in dict.fromkeys(_files(kind, argv, env, assigned) + _named_files(kind, argv)):
        found, run = _read_file(path, kind)
        dests += found
        commands += run
    if kind == "git":   # git -c NAME=VALUE, GIT_CONFIG_KEY_<n>/GIT_CONFIG_VALUE_<n>: entries read as a file's
        found, run = _git_destinations(_git_pairs(argv, env, assigned), "", 0)
        dests += found
        commands += run
        sub = git_subcommand(argv[1:])
        aliases = {n for path in _files(kind, argv, env, assigned) for n in _aliases(path)} \
            if dests or commands else set()
        if sub is not None and sub not in _GIT_CONNECTS and sub not in aliases:
            return [], []
    return dests, commands


def _aliases(path: str) -> list[str]:
    """The alias names a git configuration file defines (its own lines: git reads an include's too, which can only
    name more subcommands as connecting here when read)."""
    return [] if path.startswith("*") else _read_file(path, "alias")[0]
