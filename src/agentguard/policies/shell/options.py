"""Option and operand grammars of allowed programs whose words run code or read files no word names (session 18).

:data:`~.programs.HAZARDS` lists single options to refuse (a deny list); the programs here need more than that,
because what runs is in an *operand* or in a value's *shape*, so each is read with its own grammar:

- ``jq``: the filter may begin with module directives, and ``import "PATH" as $x;`` reads ``PATH.json`` (relative
  to the working directory or a ``-L`` directory), ``include "PATH";`` reads ``PATH.jq``: ``jq -n 'import
  "home/u/.docker/config" as $c; $c'`` printed the Docker credentials while only the filter text named them.
  ``modulemeta`` loads a module by name too. A filter that holds one of these words is refused (they are
  keywords: jq spells them no other way), and so is a filter read from a file (``-f``/``--from-file``: its
  directives are not in the text). jq's options are an **allow list** (:data:`JQ_OPTIONS`, jq 1.6 and 1.7's
  manuals): an option not listed is refused, so a jq release that adds an option reading or running something
  (1.6's hidden ``--run-tests FILE`` runs the programs of a file) is not read as harmless. ``~/.jq``, which jq
  loads at start, is a start-up file (:data:`~.startup.CONFIG_FILES`).
- ``make``: a command-line word ``NAME=VALUE`` (also ``:=``, ``::=``, ``:::=``, ``+=``, ``?=``, ``!=``) is a
  makefile line. GNU make 4.3 ran ``make 'x!=id'``, ``make 'x:=$(shell id)'`` and even ``make 'x=$(shell id)'``
  for a makefile that never names ``x`` (the variable is exported to the recipes' environment, so expanded), and
  a recipe line runs a value through ``sh`` (``make 'CC=id;'``). An assignment is refused when it runs a shell
  (``!=``), holds a make expansion (``$``, in the value or the name: ``make '$(shell id)=1'`` ran it too), a
  shell metacharacter (``; & | ` ( ) < >``, a quote, a backslash,
  a newline) or names make's own control variables (``SHELL``, ``.SHELLFLAGS``, ``MAKEFLAGS``, ``MAKEFILES``,
  ``MAKE*``). A plain value (``CC=clang``, ``PREFIX=/usr/local``, ``CFLAGS=-O2 -g``) stays allowed: what the
  makefile does with it is the project's code, which the allow list accepts by allowing ``make``.
- ``cmake``: a cache entry ``-D NAME=VALUE`` is read by CMake's own modules before any project code:
  ``-DCMAKE_PROJECT_INCLUDE=/tmp/x.cmake`` ran the script (cmake 3.25), ``CMAKE_TOOLCHAIN_FILE``,
  ``CMAKE_MODULE_PATH``, ``CMAKE_C_COMPILER_LAUNCHER``, ``Python3_EXECUTABLE`` and ``Foo_DIR`` (find_package loads
  ``FooConfig.cmake`` from it) name scripts or programs to run. ``CMAKE_*`` names are an **allow list**
  (:data:`CMAKE_SAFE`: build type, install prefix, standards, compile-commands export...); any other name is refused
  when it is shaped like a program, script, directory or flags (:data:`CMAKE_CODE`). ``--toolchain`` is refused; the
  words after ``cmake --build DIR --`` go to the native build tool and are read as ``make``'s.
- ``tar``: an archive named ``host:file`` is opened through a remote shell; the old hazard read only a bare word,
  so ``tar -cfa:b src`` (the name attached in a cluster) connected to host ``a`` (:func:`tar_reason`).
- ``ps``: the BSD option ``e`` prints every process's environment, read from ``/proc/PID/environ`` (a denied
  path): ``ps auxe`` (:func:`ps_reason`).
- ``mypy``: ``--python-executable`` runs that interpreter to find its packages, ``--install-types`` runs pip to
  install packages, and ``@FILE`` reads more options from a file (argparse's ``fromfile_prefix_chars``); a
  ``--config-file`` outside the project is refused (session 19: its ``plugins = /tmp/x/evil.py`` ran ``evil.py``).

Everything returned is a reason to refuse (the caller records it as unresolvable): fail closed.
"""

from __future__ import annotations

import re

from .globs import ANY_CHAR, Token, intersects
from .model import DASH_ANY
from .programs import TAR_VALUES
from .runners import leaves_project
from .words import Word

__all__ = ["CMAKE_CODE", "CMAKE_SAFE", "JQ_OPTIONS", "JQ_VALUES", "cmake_reason", "jq_reason",
           "make_reason", "mypy_reason", "option_reason", "ps_reason", "tar_archives", "tar_reason"]

#: jq options without a value (long names and single letters, which may be clustered: ``-rc``)
JQ_OPTIONS = frozenset({
    "--compact-output", "--null-input", "--exit-status", "--slurp", "--raw-output", "--join-output",
    "--ascii-output", "--raw-input", "--color-output", "--monochrome-output", "--sort-keys", "--tab", "--seq",
    "--stream", "--stream-errors", "--unbuffered", "--args", "--jsonargs", "--help", "--version",
    "--build-configuration", "--raw-output0", "--binary",
    "-c", "-n", "-e", "-s", "-r", "-j", "-a", "-R", "-C", "-M", "-S", "-h", "-V", "-b",
})
#: jq options with values: how many words follow (``--arg NAME VALUE``); ``-L``/``--library-path`` may be attached
JQ_VALUES: dict[str, int] = {"--indent": 1, "--arg": 2, "--argjson": 2, "--slurpfile": 2, "--rawfile": 2,
                             "--argfile": 2, "-L": 1, "--library-path": 1}
_AT_ANY: tuple[Token, ...] = (("c", (False, frozenset("@"))), ("*", ANY_CHAR))
_E_ANY: tuple[Token, ...] = (("*", ANY_CHAR), ("c", (False, frozenset("e"))), ("*", ANY_CHAR))
#: jq's builtins that read the environment: ``$ENV`` and ``env`` (not a field ``.env`` or a variable ``$env``)
_JQ_ENV = re.compile(r"\$ENV(?![A-Za-z0-9_])|(?<![A-Za-z0-9_$.\"])env(?![A-Za-z0-9_])")
_JQ_MODULES = re.compile(r"(?<![A-Za-z0-9_$])(import|include|modulemeta)(?![A-Za-z0-9_])")


def jq_reason(args: list[Word]) -> str | None:
    """Why this jq command could read a file its words do not name (see the module doc), or None."""
    at, filter_seen, ended = 0, False, False
    while at < len(args):
        w = args[at]
        at += 1
        if not w.literal:
            if not ended and (intersects(w.tokens, DASH_ANY) or not filter_seen):
                return f"jq: the word {w.text!r} is not fixed (it could be an option or the filter)"
            continue
        t = w.text
        if ended or not t.startswith("-") or t == "-":
            if not filter_seen and _JQ_MODULES.search(t):
                return "jq: the filter loads a module or data file (import/include/modulemeta) named in its text"
            if not filter_seen and _JQ_ENV.search(t):  # (session 20: jq -n env.TOKEN printed the secret)
                return "jq: the filter reads the environment (env, $ENV), whose variables may hold secrets"
            filter_seen = True
            continue
        if t == "--":
            ended = True
            continue
        if t in ("-f", "--from-file") or (t.startswith("--from-file=")):
            return "jq -f: the filter is read from a file (its import/include directives are not in the text)"
        name = t.split("=", 1)[0] if t.startswith("--") else t
        if t.startswith("-L") and len(t) > 2:
            continue  # -LDIR: the directory is an operand-like path, checked as one
        if name in JQ_VALUES:
            at += JQ_VALUES[name] - (1 if "=" in t and t.startswith("--") else 0)
            continue
        if t in JQ_OPTIONS:
            continue
        if not t.startswith("--") and all(f"-{ch}" in JQ_OPTIONS for ch in t[1:]):
            continue  # a cluster of flags: -rc, -nr
        if not t.startswith("--") and "f" in t[1:] and all(f"-{ch}" in JQ_OPTIONS or ch == "f" for ch in t[1:]):
            return "jq -f: the filter is read from a file (its import/include directives are not in the text)"
        return f"jq: option {t[:40]!r} is not one this reader knows (jq's options are an allow list)"
    return None


_ASSIGNMENT = re.compile(r"([^\s:#=!?+]+)\s*(:::=|::=|:=|\+=|\?=|!=|=)(.*)", re.S)
_SHELL_TEXT = re.compile(r"[$;&|`()<>'\"\\\n\r]")
_MAKE_CONTROL = re.compile(r"\.?SHELL(FLAGS)?|MAKE\w*|\.RECIPEPREFIX|\.DEFAULT_GOAL|VPATH|GPATH", re.I)


def make_reason(words: list[str]) -> str | None:
    """Why one of make's command-line assignments runs code (see the module doc), or None."""
    for w in words:
        if w == "--":
            continue
        if w.startswith("-"):
            continue
        m = _ASSIGNMENT.fullmatch(w)
        if m is None:
            if "=" in w:
                return f"make {w[:40]!r}: an assignment this reader cannot split into a name and a value"
            continue
        name, op, value = m.groups()
        if op == "!=":
            return f"make {w[:40]!r}: '!=' runs the value as a shell command"
        if _SHELL_TEXT.search(value) or "$" in name:
            return f"make {w[:40]!r}: the value holds a make expansion or shell text (it runs)"
        if _MAKE_CONTROL.fullmatch(name.strip()):
            return f"make {w[:40]!r}: sets the shell make runs recipes with, or make's own options"
    return None


#: the CMAKE_* cache entries ``cmake -D`` may set: they choose a build, name no program, script or directory
#: of code (CMake 3.25's manual, cmake-variables(7)); any other CMAKE_* name is refused
CMAKE_SAFE = frozenset({
    "CMAKE_BUILD_TYPE", "CMAKE_INSTALL_PREFIX", "CMAKE_EXPORT_COMPILE_COMMANDS", "CMAKE_C_STANDARD",
    "CMAKE_CXX_STANDARD", "CMAKE_CXX_STANDARD_REQUIRED", "CMAKE_C_STANDARD_REQUIRED", "CMAKE_CXX_EXTENSIONS",
    "CMAKE_C_EXTENSIONS", "CMAKE_POSITION_INDEPENDENT_CODE", "CMAKE_VERBOSE_MAKEFILE", "CMAKE_COLOR_DIAGNOSTICS",
    "CMAKE_COLOR_MAKEFILE", "CMAKE_UNITY_BUILD", "CMAKE_INTERPROCEDURAL_OPTIMIZATION", "CMAKE_MESSAGE_LOG_LEVEL",
    "CMAKE_SKIP_RPATH", "CMAKE_SKIP_INSTALL_RPATH", "CMAKE_FIND_DEBUG_MODE", "CMAKE_INSTALL_MESSAGE",
    "CMAKE_CONFIGURATION_TYPES", "CMAKE_OSX_ARCHITECTURES", "CMAKE_OSX_DEPLOYMENT_TARGET", "CMAKE_CUDA_ARCHITECTURES",
    "CMAKE_CUDA_STANDARD", "CMAKE_WARN_DEPRECATED", "CMAKE_ERROR_DEPRECATED", "CMAKE_SUPPRESS_REGENERATION",
})
#: other cache names refused by shape: they name programs, scripts, directories searched for code, or flags
#: handed to a compiler (``-fplugin=x.so``, ``-B/tmp/`` make the compiler driver load or run code)
CMAKE_CODE = re.compile(r"\w*(EXECUTABLE|COMMAND|COMPILER|LAUNCHER|PROGRAM|INCLUDE|TOOLCHAIN|PATH|FILE|DIR|ROOT|"
                        r"LINKER|FLAGS|CONFIG|SCRIPT|PLUGIN|MODULE|HINTS|WRAPPER|TOOL|EMULATOR|SHELL|HOOK)\w*", re.I)


def cmake_reason(words: list[str]) -> str | None:
    """Why this cmake command runs a script or program its words name (see the module doc), or None."""
    k = 0
    while k < len(words):
        w = words[k]
        k += 1
        if w == "--" and "--build" in words[:k]:
            return make_reason(words[k:])  # the native build tool's own arguments
        if w.startswith("--toolchain"):
            return f"cmake {w[:40]!r}: a toolchain file is a script cmake runs"
        if w.startswith("-D"):
            entry = w[2:] or (words[k] if k < len(words) else "")
            k += 0 if w[2:] else 1
            name = entry.split("=", 1)[0].split(":", 1)[0]
            if name.upper().startswith("CMAKE_") and name not in CMAKE_SAFE:
                return f"cmake -D {name[:40]!r}: a CMAKE_ variable outside the allow list (it may name code to run)"
            if name not in CMAKE_SAFE and CMAKE_CODE.fullmatch(name):
                return f"cmake -D {name[:40]!r}: names a program, a script or a directory of code"
    return None


def mypy_reason(words: list[str]) -> str | None:
    """Why this mypy command runs a program or reads options from a file (see the module doc), or None."""
    for k, w in enumerate(words):
        if w == "--":
            break
        if w.startswith("@"):
            return f"mypy {w[:40]!r}: reads more options from a file"
        name = w[2:].split("=", 1)[0]
        if w.startswith("--") and len(name) >= 3 and "config-file".startswith(name):
            value = w.split("=", 1)[1] if "=" in w else (words[k + 1] if k + 1 < len(words) else "")
            if leaves_project(value):  # session 19: its "plugins = /tmp/x/evil.py" ran evil.py (mypy 1.x)
                return f"mypy {w[:40]!r} {value[:40]!r}: a config file outside the project (its plugins run)"
        if w.startswith("--") and len(name) >= 3 and any(n.startswith(name) for n in ("python-executable",
                                                                                     "install-types")):
            return f"mypy {w[:40]!r}: runs another program (an interpreter, or pip to install packages)"
    return None


def tar_archives(words: list[str]) -> list[str]:
    """Every archive name of a tar command, in each spelling GNU tar reads: ``-f A``, ``-fA``, a cluster
    ``-cvfA``, the old style ``tar cf A`` (each value letter of the first word takes the next word), ``--file=A``,
    ``--file A``."""
    out: list[str] = []
    k = 0
    if words and not words[0].startswith("-"):  # old style: "tar cvfC a.tar dir"
        pending = [ch for ch in words[0] if ch in TAR_VALUES]
        for ch, value in zip(pending, words[1:]):
            out += [value] if ch == "f" else []
        k = 1 + len(pending)
    while k < len(words):
        w = words[k]
        k += 1
        if w == "--":
            break
        if w.startswith("--file=") or w == "--file":
            value = w[7:] if "=" in w else (words[k] if k < len(words) else "")
            k += 0 if "=" in w else 1
            out.append(value)
        elif w.startswith("-") and not w.startswith("--"):
            for j, ch in enumerate(w[1:], 1):
                if ch in TAR_VALUES:
                    value = w[j + 1:] or (words[k] if k < len(words) else "")
                    k += 0 if w[j + 1:] else 1
                    out += [value] if ch == "f" else []
                    break
    return out


def tar_reason(words: list[str]) -> str | None:
    """Why tar opens its archive through a remote shell, or None. GNU tar (``rmt.h``'s ``_remdev``) reads an
    archive name with a ``:`` after a first character and no ``/`` before it as ``[user@]host:file`` and runs
    ``rsh``/``ssh`` to the host unless ``--force-local``: ``tar -cfa:b src`` (a cluster), ``--file=h:x`` and
    ``TAPE=h:x tar -c`` (``TAPE`` is refused among :data:`~.programs.UNSAFE_ENV`) connected to the host."""
    if "--force-local" in words:
        return None
    for name in tar_archives(words):
        at = name.find(":")
        if at > 0 and "/" not in name[:at]:
            return f"tar: the archive {name[:40]!r} is host:path, opened through a remote shell (rsh/ssh)"
    return None


#: procps-ng 4's options with a value: UNIX clusters (``-o FORMAT``), BSD words (``o FORMAT``), GNU long names
_PS_UNIX_VALUES, _PS_BSD_VALUES = "CGgOopqstUuk", "OopqtUk"
_PS_LONG_VALUES = frozenset({"format", "pid", "ppid", "sort", "cols", "columns", "lines", "rows", "user", "User",
                             "group", "Group", "sid", "tty", "quick-pid", "width", "deselect-format"})


def ps_reason(words: list[str]) -> str | None:
    """Why ps shows other processes' environments, or None. procps-ng's BSD option ``e`` (a word without a dash:
    ``ps auxe``, ``ps e``) prints each process's environment after its command, which ps reads from
    ``/proc/PID/environ`` (``ps auxe`` printed a variable of another process; ``/proc/*`` is a denied path). A
    word that is an option's value (``ps -o user``, ``ps o pid,user``) is not read as letters. The format
    specifier ``environ`` (``ps -o pid,environ``, ``ps -Oenviron``, ``ps --format=environ``) asks for the same
    environment (procps-ng 4.0.2 printed ``-``; others fill it): refused in any word (session 25)."""
    for w in words:
        if re.search(r"(?:^|[\s,=]|^-?-?[oO]|^--format)environ(?:$|[\s,=:])", w):
            return f"ps {w[:40]!r}: the format specifier environ shows each process's environment (/proc/PID/environ)"
    k = 0
    while k < len(words):
        w = words[k]
        k += 1
        if w.startswith("--"):
            name, eq, _ = w[2:].partition("=")
            k += 0 if eq or name not in _PS_LONG_VALUES else 1
            continue
        values = _PS_UNIX_VALUES if w.startswith("-") else _PS_BSD_VALUES
        letters = w[1:] if w.startswith("-") else w
        for j, ch in enumerate(letters):
            if ch == "e" and not w.startswith("-"):
                return f"ps {w[:40]!r}: the BSD option e shows each process's environment (/proc/PID/environ)"
            if ch in values:
                k += 0 if letters[j + 1:] else 1
                break
    return None


def option_reason(program: str, args: list[Word]) -> str | None:
    """The reason to refuse ``program``'s arguments under this module's grammars, or None (any other program).
    ``python -m MOD ARGS`` is read as ``MOD ARGS``. A word that is not fixed is refused where it could be what the
    grammar looks for: any word of make's (an unknown part may hold ``=`` or ``$``), one that could start with
    ``-`` for cmake, with ``-`` or ``@`` for mypy (a glob may match a file named ``@opts``)."""
    if program.startswith(("python", "pypy")) and len(args) > 1 and args[0].literal and args[0].text == "-m" \
            and args[1].literal:
        program, args = args[1].text, args[2:]
    if program == "jq":
        return jq_reason(args)
    readers = {"make": make_reason, "gmake": make_reason, "cmake": cmake_reason, "mypy": mypy_reason,
               "tar": tar_reason, "ps": ps_reason}
    if program not in readers:
        return None
    for w in args:
        if w.literal:
            continue
        if program == "tar":
            continue  # an unknown archive name is checked as a path; an unknown option by RUNS_BY_OPTION
        if program == "ps":
            if w.unknown or intersects(w.tokens, _E_ANY):
                return f"ps: the word {w.text!r} is not fixed and could hold the BSD option e (environments)"
            continue
        if program in ("make", "gmake") or intersects(w.tokens, DASH_ANY) or (
                program == "mypy" and intersects(w.tokens, _AT_ANY)):
            return f"{program}: the word {w.text!r} is not fixed and could be an option or assignment that runs code"
    return readers[program]([w.text for w in args if w.literal])
