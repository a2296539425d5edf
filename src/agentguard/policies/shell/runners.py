"""Build and test runners' options as allow lists: an option that loads code from elsewhere is refused (session 19).

Allowing ``make``, ``pytest``, ``npm test``, ``cargo build`` or ``go test`` accepts running the *project's* code (the
makefile, conftest.py, package.json scripts, build.rs in the working directory). Each of them also has options that
load code from somewhere else, which the deny list of :data:`~.programs.HAZARDS` named one by one and missed
(session 19, each run with the real program where installed: GNU make 4.3, pytest 9, npm 11, cargo 1.95):
``make -f /tmp/x.mk``, ``make -C /tmp/x``, ``make -I /tmp`` (an ``include`` found there; a relative ``-C docs``
stays allowed, as ``cd docs && make`` is), ``pytest -p evil`` (a plugin
module), ``pytest -c /tmp/x.ini`` and ``-o addopts=...`` (``addopts = -p evil``, ``pythonpath = /tmp``), ``pytest
--confcutdir=/`` (conftest.py files of every parent directory), ``npm test --prefix /tmp/x`` (that package.json's
script), ``npm test --node-options=--require=/tmp/x.js`` (npm reads any ``--KEY=VALUE`` as its config),
``cargo build --manifest-path /tmp/x/Cargo.toml`` (that build.rs), ``cargo -Z ...``, ``python -m unittest discover
-s /tmp/x`` (that directory's test modules, Python 3.11), ``go test -modfile=/tmp/go.mod``
(its replace directives), ``go build -ldflags=-extld=/tmp/x`` (the external linker it runs). So each runner's
options are an **allow list** (:data:`RUNNERS`, from the programs' manuals: GNU make 4.3 ``make --help``, pytest 9
``pytest --help``, npm 11 ``npm help test/run/ls``, cargo 1.95 ``cargo help build``, go 1.22 ``go help build``,
``go help testflag``), as :mod:`.options` does for ``jq``: an option not listed is refused, so a release that adds one
that loads code is not read as harmless. A long option may be abbreviated where the program allows it (GNU getopt,
pytest's argparse); an abbreviation is read as every listed option it may stand for and refused unless all are
allowed. Values are checked where they can name code (``pytest -p no:NAME`` only disables a plugin; ``cargo
--target`` must be a target triple, not a JSON spec file; ``go -ldflags`` only ``-s -w -X``; ``make -C``/``-f``/``-I``
only inside the project). After ``--``, ``cargo test``/``fmt`` pass words to the test binary or rustfmt, but
``cargo clippy -- ...`` hands them to clippy-driver, which is rustc (``--extern``, ``-L``, ``-Z codegen-backend`` load
crates and backends): only lint levels are allowed there. (``mypy --config-file`` outside the project, whose
``plugins = /tmp/x/evil.py`` ran, is refused in :func:`~.options.mypy_reason`.)

Code from elsewhere also comes in through the operands and the directory: ``pytest /tmp/x/test_a.py`` and ``go test
../x`` load that directory's tests and conftest.py, and ``cd /tmp/x && make`` its makefile. A runner whose test path
operand, or whose directory (a ``cd`` earlier in the same text), leaves the project (an absolute path, ``~``, ``..``)
is refused (:func:`runner_reason`); relative directories (``cd src && make``) stay allowed. ``cmake``/``ctest`` keep
their deny list (:mod:`.options`) but a source, build, install or test directory outside the project is refused
(``cmake -S /tmp/x`` ran its CMakeLists.txt, cmake 3.25) and the words after ``cmake --build DIR --`` are read as
``make``'s. A directory the tool
itself names (its ``cwd`` argument) is the project's. A word that is not fixed is refused where it could be an
option. What a shell kept from an earlier call (a persistent ``cd``) is not in the text and not seen here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from .globs import intersects
from .model import DASH_ANY
from .words import Word

__all__ = ["RUNNERS", "Runner", "leaves_project", "runner_reason"]


@dataclass(frozen=True)
class Runner:
    """One runner's allowed options; a value option takes the next word unless its value is attached."""

    short_flags: str = ""
    short_values: str = ""
    long_flags: frozenset[str] = frozenset()
    long_values: frozenset[str] = frozenset()
    short_optional: str = ""        # short options whose value is attached, or a number in the next word (make -j 4)
    abbreviations: bool = True      # long options may be abbreviated (GNU getopt, argparse)
    single_dash_long: bool = False  # go: -run, -count (one dash, whole names)
    code_operands: bool = False     # operands are test files or packages (pytest, go): they must stay in the project
    passthrough: bool = True        # words after "--" go to the project's own script or test binary


def _fs(text: str) -> frozenset[str]:
    return frozenset(text.split())


RUNNERS: dict[str, Runner] = {
    # (not -p/--print-data-base: it prints every variable, the environment's too, session 20, .envreads)
    "make": Runner("kisnqBwrRStdhv", "oWCfI",
                   _fs("keep-going ignore-errors silent quiet dry-run just-print recon question always-make "
                       "print-directory no-print-directory no-builtin-rules no-builtin-variables no-keep-going stop "
                       "touch trace version help warn-undefined-variables no-silent "
                       "check-symlink-times "
                       "debug jobs load-average output-sync"),
                   _fs("jobs load-average max-load output-sync old-file assume-old what-if new-file assume-new "
                       "debug shuffle directory file makefile include-dir"), short_optional="jlO"),
    "pytest": Runner("qvxslhV", "rkmnWp",
                     _fs("quiet verbose exitfirst showlocals last-failed lf failed-first ff new-first nf stepwise sw "
                         "stepwise-skip sw-skip collect-only co collectonly strict-markers strict-config strict "
                         "no-header no-summary disable-warnings disable-pytest-warnings runxfail full-trace "
                         "doctest-modules doctest-continue-on-failure cache-clear cache-show version help fixtures "
                         "fixtures-per-test markers setup-show setup-only setup-plan pdb trace noconftest "
                         "keep-duplicates continue-on-collection-errors force-short-summary no-cov "
                         "cov-fail-under"),
                     _fs("tb durations durations-min maxfail color code-highlight capture show-capture import-mode "
                         "junitxml junit-xml junit-prefix doctest-glob doctest-report ignore ignore-glob deselect "
                         "log-level log-cli-level log-file log-file-level log-format log-date-format lfnf "
                         "last-failed-no-failures basetemp numprocesses dist maxprocesses cov cov-report timeout "
                         "reruns count asyncio-mode cov-fail-under verbosity pythonwarnings"),
                     code_operands=True),
    "npm": Runner("sqdgyl", "w",
                  _fs("if-present silent quiet verbose json parseable all long global ignore-scripts "
                      "foreground-scripts color no-color production dev workspaces ws include-workspace-root "
                      "link unicode no-unicode progress no-progress offline prefer-offline yes version help"),
                  _fs("loglevel depth omit include workspace"), abbreviations=False),
    "cargo": Runner("qvrjpFh", "jpF",
                    _fs("quiet verbose release all-targets workspace all lib bins tests benches examples "
                        "all-features no-default-features offline locked frozen no-run no-fail-fast doc "
                        "timings keep-going future-incompat-report check help ignore-rust-version "
                        "unit-graph build-plan"),
                    _fs("package exclude bin test bench example features profile target jobs color "
                        "message-format target-dir"), abbreviations=False),
    "go": Runner("", "", _fs("v x n a race msan asan short json failfast benchmem cover trimpath work "
                             "buildvcs linkshared i"),
                 _fs("run bench count timeout tags mod p parallel cpu coverprofile covermode coverpkg o "
                     "benchtime shuffle fuzz fuzztime list skip ldflags gcflags buildmode compiler "
                     "outputdir blockprofile cpuprofile memprofile mutexprofile trace pgo"),
                 abbreviations=False, single_dash_long=True, code_operands=True),
    "unittest": Runner("hvqfcb", "kspt", _fs("help verbose quiet locals failfast catch buffer"),
                       _fs("durations start-directory pattern top-level-directory"), code_operands=True),
}
#: value options whose values are checked (:func:`_value_reason`)
_TRIPLE = re.compile(r"[A-Za-z0-9_.]+(-[A-Za-z0-9_.]+){1,4}")
_LDFLAGS = re.compile(r"(\s*(-s|-w|-X(=|\s+)\S+=\S*|-X\s*\S+))*\s*")


def leaves_project(text: str) -> bool:
    """Whether a directory or path word leaves the project's tree: absolute, home-relative, or through ``..``."""
    return text.startswith(("/", "~")) or ".." in text.split("/") or text.startswith("\\")


def _value_reason(program: str, name: str, value: str) -> str | None:
    if program == "unittest" and name in ("s", "t", "start-directory", "top-level-directory") and \
            leaves_project(value):
        return f"python -m unittest -{name} {value[:40]!r}: tests outside the project (their modules run)"
    if program == "make" and name in ("C", "f", "I", "directory", "file", "makefile", "include-dir") and \
            leaves_project(value):
        return f"make {name} {value[:40]!r}: a makefile or directory outside the project"
    if program == "pytest" and name in ("p", "plugin"):
        return None if value.startswith("no:") else f"pytest -p {value[:40]!r} loads a plugin module"
    if program == "pytest" and name in ("W", "pythonwarnings") and value.count(":") >= 2:
        category = value.split(":")[2]
        if category and "." in category:
            return f"pytest -W {value[:40]!r}: a warning category in a module is imported"
    if program == "cargo" and name == "target" and not _TRIPLE.fullmatch(value):
        return f"cargo --target {value[:40]!r}: a target spec file names the linker and tools to run"
    if program == "go" and name == "ldflags" and not _LDFLAGS.fullmatch(value.strip("'\"")):
        return f"go -ldflags {value[:40]!r}: only -s, -w and -X are allowed (-extld runs a linker)"
    if program == "go" and name in ("gcflags",) and re.search(r"[/\\]|plugin|importcfg|embedcfg", value):
        return f"go -gcflags {value[:40]!r}: names files the compiler reads"
    return None


#: make's long options whose value is optional (``--jobs``, ``--jobs=4``; a number may follow as its own word)
_MAKE_OPTIONAL = frozenset({"jobs", "load-average", "max-load", "output-sync", "debug"})


def _next(words: list[str], k: int, always: bool = False) -> tuple[str, int]:
    """The value in the next word, and where reading goes on. A word starting with ``-`` is not taken as a value
    (argparse and getopt_long's optional values do not take it either): it is read as an option instead, which can
    only refuse more. ``always``: Go's flag package takes the next word whatever it is (``-ldflags "-s -w"``)."""
    if k < len(words) and (always or not words[k].startswith("-")):
        return words[k], k + 1
    return "", k


def _long(spec: Runner, name: str) -> list[str]:
    """The listed long options ``name`` may stand for (itself, or every one it abbreviates)."""
    known = spec.long_flags | spec.long_values
    if name in known or not spec.abbreviations:
        return [name] if name in known else []
    return [k for k in known if k.startswith(name)] if len(name) >= 2 else []


def _option_reason(program: str, spec: Runner, words: list[str], sub: str = "") -> str | None:
    """Why one of ``program``'s (fixed) option words is refused: not listed, or a value that names code. ``sub``: the
    subcommand (cargo: what follows ``--`` goes to the test binary or rustfmt, or to clippy-driver)."""
    k = 0
    while k < len(words):
        w = words[k]
        k += 1
        if w == "--":
            if not spec.passthrough:
                return f"{program}: words after -- are not read here"
            rest = words[k:]
            if program == "cargo" and sub not in ("test", "t", "bench", "fmt") and any(
                    r.startswith("-") and not re.fullmatch(r"-[DWAF].*|--(deny|warn|allow|forbid)(=.*)?", r)
                    for r in rest):  # clippy-driver is rustc: --extern/-L/-Z load crates and backends
                return f"{program} -- {' '.join(rest)[:40]!r}: only lint levels (-D, -W, -A, -F) are read after --"
            return None
        if program == "cargo" and k == 1 and w.startswith("+"):
            if "/" in w or "\\" in w:
                return f"cargo {w[:40]!r}: a toolchain given by its path"
            continue
        if not w.startswith("-") or w == "-":
            continue
        if program == "npm" and sub != "ls" and (w in ("-g", "--global") or (
                not w.startswith("--") and "g" in w)):
            return f"npm {sub} {w!r}: the global prefix's package runs, not the project's"
        if w.startswith("--") or spec.single_dash_long:
            name, eq, value = w.lstrip("-").partition("=")
            names = _long(spec, name)
            if not names:
                return f"{program} {w[:40]!r}: not an option this reader allows ({program}'s options are an " \
                       "allow list; those that load code from elsewhere are left out)"
            takes = [n for n in names if n in spec.long_values]
            if takes and not eq and not (program == "make" and set(takes) & _MAKE_OPTIONAL):
                value, k = _next(words, k, spec.single_dash_long)
            for n in takes:
                why = _value_reason(program, n, value)
                if why:
                    return why
            continue
        for j, ch in enumerate(w[1:], 1):
            if ch in spec.short_values or ch in spec.short_optional:
                value = w[j + 1:]
                if not value and ch in spec.short_values:
                    value, k = _next(words, k)
                elif not value and k < len(words) and words[k].isdigit():
                    value, k = words[k], k + 1
                why = _value_reason(program, ch, value)
                if why:
                    return why
                break
            if ch not in spec.short_flags:
                return f"{program} {w[:40]!r}: the option -{ch} is not one this reader allows ({program}'s " \
                       "options are an allow list; those that load code from elsewhere are left out)"
    return None


def _moved_out(program: str, moved: Sequence[str], start: Sequence[str]) -> str | None:
    roots = [c.rstrip("/") + "/" for c in start if c]
    gone = [d for d in moved if leaves_project(d) and not any((d + "/").startswith(r) for r in roots)]
    if gone:
        return f"{program} runs the code of {gone[0][:60]!r}, a directory outside the project (a cd before it)"
    return None


#: cmake/ctest options whose value names no directory of code (a prefix to install into, a generator, a target...)
_CMAKE_VALUES = frozenset({"--prefix", "--install-prefix", "-D", "-U", "-G", "-A", "-T", "--target", "-t", "--config",
                           "-j", "--parallel", "--component", "--log-level", "--loglevel", "-R", "-E", "-L", "-LE",
                           "-I", "--timeout", "--repeat", "-C", "--build-config", "--output-junit", "-O",
                           "--output-log", "--preset", "--default-directory-permissions", "--strip"})


def _cmake_reason(program: str, args: list[Word], moved: Sequence[str], start: Sequence[str]) -> str | None:
    """cmake and ctest: a source, build, install or test directory outside the project runs its code
    (``cmake -S /tmp/x`` runs its CMakeLists.txt, ``cmake --build /tmp/x`` its makefile, ``cmake --install /tmp/x``
    its install scripts, ``ctest --test-dir /tmp/x`` its tests); the native tool's words after ``cmake --build DIR
    --`` are read as ``make``'s (:data:`RUNNERS`)."""
    why = _moved_out(program, moved, start)
    if why:
        return why
    words = [w.text for w in args if w.literal]
    end = words.index("--") if "--" in words else len(words)
    k = 0
    while k < end:
        w = words[k]
        k += 1
        if w in _CMAKE_VALUES:
            k += 1
            continue
        value = w.split("=", 1)[1] if w.startswith("--") and "=" in w else w
        if w.startswith("-") and not w.startswith(("-S", "-B", "--build", "--install", "--test-dir")):
            continue
        if w.startswith(("-S", "-B")) and len(w) > 2:
            value = w[2:]
        elif w in ("-S", "-B", "--build", "--install", "--test-dir"):
            value = words[k] if k < end else ""
            k += 1
        if leaves_project(value):
            return f"{program} {w[:40]!r} {value[:40]!r}: a directory outside the project (its cmake scripts run)"
    if end < len(words) and "--build" in " ".join(words[:end]):
        return _option_reason("make", RUNNERS["make"], words[end + 1:])
    return None


def runner_reason(program: str, args: list[Word], moved: Sequence[str], start: Sequence[str] = ()) -> str | None:
    """Why this runner command loads code from outside the project, or None (not a runner, or allowed).

    ``program`` is the program's name; ``python -m pytest`` is read as ``pytest``; ``args`` are the words after it
    (``npm``/``cargo``/``go``: after the subcommand too, which the caller's allow list decides); ``moved`` the
    directories a ``cd`` earlier in the text may have moved to, ``start`` those it started in (the tool's ``cwd``:
    the project, so a directory below one of them stays inside).
    """
    if program.startswith(("python", "pypy")) and len(args) > 1 and args[0].literal and args[0].text == "-m" \
            and args[1].literal:
        program, args = args[1].text, args[2:]
    if program in ("py.test", "gmake"):
        program = {"py.test": "pytest", "gmake": "make"}[program]
    if program in ("cmake", "ctest"):
        return _cmake_reason(program, args, moved, start)
    spec = RUNNERS.get(program)
    if spec is None:
        return None
    sub = ""
    why = _moved_out(program, moved, start)
    if why:
        return why
    if program in ("npm", "cargo", "go"):  # the subcommand: "npm run test", "cargo +nightly build", "go test"
        heads = [i for i, w in enumerate(args) if not (w.literal and w.text.startswith(("-", "+")))][:1]
        if program == "npm" and heads and args[heads[0]].literal and args[heads[0]].text in ("run", "run-script"):
            heads.append(heads[0] + 1)  # the script's name
        for i, w in enumerate(args[:heads[0]] if heads else args):
            if w.literal and w.text.startswith("+"):
                why = _option_reason(program, spec, [w.text]) if program == "cargo" else None
                if why or program != "cargo" or i:
                    return why or f"{program} {w.text[:40]!r}: not an option this reader allows"
        sub = args[heads[0]].text if heads else ""
        args = [w for i, w in enumerate(args) if i not in heads and not (
            program == "cargo" and i == 0 and w.literal and w.text.startswith("+"))]
    for w in args:
        if w.literal and w.text == "--":
            break
        if not w.literal and (w.unknown or w.split or intersects(w.tokens, DASH_ANY) or (spec.code_operands and (
                leaves_project(w.text) or re.search(r"(^|/)\.[^/]*[*?\[]", w.text)))):
            return f"{program}: the word {w.text!r} is not fixed and could be an option that loads code, or tests " \
                   "outside the project"  # a glob that cannot start with "-" (tests/test_*.py) is an operand
    words = [w.text for w in args]
    end = words.index("--") if "--" in words else len(words)
    if spec.code_operands:
        for t in words[:end]:
            if not t.startswith("-") and leaves_project(t.split("::", 1)[0]):
                return f"{program} {t[:60]!r}: tests outside the project (their conftest.py or package runs)"
    return _option_reason(program, spec, words, sub)
