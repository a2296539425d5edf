"""What programs do with their arguments: wrappers' real option arity, shells, interpreters, flags.

A wrapper runs another command after its own options and positional words; reading ``timeout -k 5s 10
rm -rf /`` right needs to know that ``-k`` takes a value and that one ``DURATION`` follows. Each
:class:`Wrapper` states that (from the programs' manuals: coreutils ``timeout``, ``env``, ``nice``,
``nohup``, ``chroot``, ``stdbuf``; util-linux ``setsid``, ``ionice``, ``taskset``, ``flock``; ``strace``;
``sudo``; OpenBSD ``doas``; ``su``/``runuser``; findutils ``xargs``; procps ``watch``; bash's ``exec``,
``command``, ``builtin``, ``time``). An option a table does not know makes the command unresolvable (its
arity is unknown, so where the wrapped command starts is unknown): fail closed, never a guess.
GNU long options may be abbreviated to any unambiguous prefix (``--kill`` for ``--kill-after``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .startup import CONFIG_FILES, REMOTE_PATHS

__all__ = ["CASE_EXACT", "CONFIG_FILES", "DELETE_OPTIONS", "HAZARDS", "Hazard", "INFO_OPTIONS", "INTERPRETERS", "NAME_BUILTINS",
           "NO_PATH_OPERANDS", "OTHER_SHELLS", "OUTPUT_OPERAND", "OUTPUT_OPTIONS", "POSIX_SHELLS", "READERS",
           "RECURSIVE", "REMOTE_PATHS", "RESERVED_WORDS", "RUNS_BY_OPTION", "SET_READING", "SET_READING_NAMES",
           "SINGLE_DASH_LONG", "TAR_VALUES", "UNMODELLED_RUNNERS", "UNRESOLVABLE_BUILTINS", "UNSAFE_ENV", "WRAPPERS",
           "Wrapper", "as_module", "command_word_reason", "deletes", "extracts", "hazard", "option_letters",
           "plain_name", "set_hazard", "tree_flag"]


@dataclass(frozen=True)
class Wrapper:
    """Option grammar of a program that runs another command."""

    short_arg: str = ""                      # short options taking a value (attached or next word)
    short_flag: str = ""                     # short options without a value
    long_arg: frozenset[str] = frozenset()   # long options taking a value (``--x=v`` or ``--x v``)
    long_flag: frozenset[str] = frozenset()  # long options without a value
    positional: int = 0                      # words between the options and the command (DURATION, NEWROOT)
    assignments: bool = False                # NAME=VALUE words before the command (env)
    optional_attached: str = ""              # short options whose value, if any, is attached (xargs -i)
    numeric_option: bool = False             # ``nice -10``: a dash and digits is an option
    no_command: str = "nothing"              # what runs without a command: "nothing" or "shell"
    extra: dict[str, str] = field(default_factory=dict)  # option -> meaning (cwd, payload, split, noexec...)


def _fs(*names: str) -> frozenset[str]:
    return frozenset(names)


WRAPPERS: dict[str, Wrapper] = {
    "timeout": Wrapper("ks", "v", _fs("kill-after", "signal"), _fs("foreground", "preserve-status", "verbose"),
                       positional=1),
    "env": Wrapper("uCSP", "i0v", _fs("unset", "chdir", "split-string"),
                   _fs("ignore-environment", "null", "debug", "list-signal-handling", "default-signal",
                       "ignore-signal", "block-signal"), assignments=True,
                   extra={"C": "cwd", "chdir": "cwd", "S": "split", "split-string": "split",
                          "P": "search"}),  # BSD env -P ALTPATH: where the program is looked up
    "nice": Wrapper("n", "", _fs("adjustment"), _fs(), numeric_option=True),
    "nohup": Wrapper(),
    "chroot": Wrapper("", "", _fs("userspec", "groups"), _fs("skip-chdir"), positional=1, no_command="shell"),
    "stdbuf": Wrapper("ioe", "", _fs("input", "output", "error")),
    "setsid": Wrapper("", "cfw", _fs(), _fs("ctty", "fork", "wait")),
    "ionice": Wrapper("cnpPu", "t", _fs("class", "classdata", "pid", "pgid", "uid"), _fs("ignore")),
    "strace": Wrapper("abeEIoOpPsSUuX", "cCdDfFhikqrtTvVwxyzZn",
                      _fs("output", "attach", "trace", "signal", "abbrev", "verbose", "raw", "read", "write",
                          "fault", "inject", "trace-path", "string-limit", "summary-sort-by", "user", "env",
                          "columns", "const-print-style", "argv0", "summary-columns", "status", "quiet",
                          "decode-fds", "silence", "kvm"),
                      _fs("follow-forks", "output-separately", "summary", "summary-only", "summary-wall-clock",
                          "daemonize", "no-abbrev", "debug", "instruction-pointer", "stack-trace",
                          "absolute-timestamps", "relative-timestamps", "syscall-times", "seccomp-bpf",
                          "timestamps", "decode-pids", "tips", "syscall-number", "successful-only",
                          "failed-only"), extra={"E": "assign", "env": "assign"}),
    "sudo": Wrapper("ugCDprRtTUh", "AbEeHiKklnPSsVv",
                    _fs("user", "group", "close-from", "chdir", "host", "prompt", "role", "type", "other-user",
                        "command-timeout", "chroot"),
                    _fs("askpass", "background", "preserve-env", "edit", "set-home", "login", "remove-timestamp",
                        "reset-timestamp", "list", "non-interactive", "preserve-groups", "stdin", "shell",
                        "version", "validate", "help", "bell"),
                    assignments=True,
                    extra={"D": "cwd", "chdir": "cwd", "R": "root", "chroot": "root", "e": "edit", "edit": "edit",
                           "l": "noexec", "list": "noexec", "v": "noexec", "validate": "noexec", "h": "unknown",
                           "s": "shell", "shell": "shell", "i": "shell", "login": "shell", "V": "noexec",
                           "version": "noexec", "help": "noexec", "K": "noexec", "k": "noexec"}),
    "doas": Wrapper("uC", "nsL", extra={"s": "shell", "C": "noexec", "L": "noexec"}),
    "su": Wrapper("cgGsw", "flmpPhV",
                  _fs("command", "group", "supp-group", "shell", "whitelist-environment", "session-command"),
                  _fs("login", "preserve-environment", "pty", "help", "version", "fast"),
                  positional=-1, no_command="shell",
                  extra={"c": "payload", "command": "payload", "session-command": "payload"}),
    "runuser": Wrapper("cgGsuw", "flmpPhV",
                       _fs("command", "group", "supp-group", "shell", "user", "whitelist-environment",
                           "session-command"),
                       _fs("login", "preserve-environment", "pty", "help", "version", "fast"),
                       positional=-1, no_command="shell",
                       extra={"c": "payload", "command": "payload", "session-command": "payload"}),
    "xargs": Wrapper("adEILnPs", "0oprtx",
                     _fs("arg-file", "delimiter", "max-lines", "max-args", "max-procs", "max-chars",
                         "process-slot-var"),
                     _fs("null", "open-tty", "interactive", "no-run-if-empty", "verbose", "exit", "show-limits"),
                     optional_attached="eil", extra={"stdin_args": "yes"}),
    "watch": Wrapper("ndq", "bcegptwxrC", _fs("interval", "differences", "equexit", "shotsdir"),
                     _fs("beep", "color", "no-color", "errexit", "chgexit", "precise", "no-title", "no-wrap",
                         "exec", "no-rerun", "no-linewrap"), extra={"join": "yes", "x": "exec", "exec": "exec"}),
    "flock": Wrapper("wEc", "sxunoFh", _fs("timeout", "conflict-exit-code", "command"),
                     _fs("shared", "exclusive", "unlock", "nonblock", "close", "no-fork", "verbose"),
                     positional=1, extra={"c": "payload", "command": "payload"}),
    "taskset": Wrapper("", "acp", _fs(), _fs("all-tasks", "cpu-list", "pid"), positional=1),
    "exec": Wrapper("a", "cl"),
    "command": Wrapper("", "pvV", extra={"v": "noexec", "V": "noexec"}),
    "builtin": Wrapper(),
    "time": Wrapper("of", "pavqV", _fs("output", "format"), _fs("portability", "append", "verbose", "quiet")),
    "nocorrect": Wrapper(),
    "noglob": Wrapper(),
}

#: shells whose ``-c`` payload is read with the bash grammar (POSIX family)
POSIX_SHELLS = frozenset({"sh", "bash", "dash", "ash", "ksh", "mksh", "pdksh", "oksh", "lksh", "posh", "yash",
                          "rbash", "hush", "bash5", "ksh93"})
#: shells with another grammar: any payload or script is unresolvable
OTHER_SHELLS = frozenset({"zsh", "csh", "tcsh", "fish", "elvish", "nu", "xonsh", "pwsh", "powershell", "rc",
                          "es", "scsh", "ion", "oil", "osh", "ysh", "tclsh", "wish", "expect"})
#: interpreters: option letters introducing inline code; reading code from stdin is unresolvable
INTERPRETERS: dict[str, str] = {"python": "c", "python2": "c", "python3": "c", "pypy": "c", "pypy3": "c",
                                "perl": "eE", "ruby": "e", "node": "ep", "nodejs": "ep", "deno": "", "bun": "e",
                                "php": "rBRFE", "lua": "e", "luajit": "e", "rscript": "e", "r": "e", "julia": "e",
                                "osascript": "e", "jshell": "", "irb": "", "groovy": "e", "guile": "c",
                                "racket": "e", "sbcl": "", "ghci": "e", "ocaml": "", "busybox": ""}
#: per interpreter, the options (besides ``--version``/``--help``) that print information and exit
INFO_OPTIONS: dict[str, tuple[str, ...]] = {
    "python": ("-V", "-VV", "-h"), "python2": ("-V", "-h"), "python3": ("-V", "-VV", "-h"), "pypy": ("-V", "-h"),
    "pypy3": ("-V", "-h"), "node": ("-v", "-h"), "nodejs": ("-v", "-h"), "deno": ("-V",), "bun": ("-v", "-h"),
    "perl": ("-v", "-V"), "php": ("-v", "-h", "-i", "-m"), "lua": ("-v",), "luajit": ("-v",),
}
#: programs (bash builtins or coreutils) that never open, write or run their operands: their arguments are
#: text, not path candidates (``echo "$(date)"`` names no file; the substitution's own command is still
#: read and checked). Options that would read a file (``date -f``, ``hostname -F``) are why those are
#: not listed.
NO_PATH_OPERANDS = frozenset({"echo", "printf", "true", "false", ":", "basename", "dirname", "seq", "sleep",
                              "expr", "yes"})
AWKS = frozenset({"awk", "gawk", "mawk", "nawk", "busybox-awk"})
#: bash builtins whose effect is code not in the text (eval, source) or a changed meaning of later words
UNRESOLVABLE_BUILTINS: dict[str, str | None] = {
    "eval": "eval runs text built at run time", "source": "source runs an unknown file",
    ".": "'.' runs an unknown file", "alias": "an alias changes what later words run",
    "coproc": "coproc (its grammar is misread by parsers; refused)", "enable": "enable can load builtins",
    "hash": "hash can bind a name to another program", "fc": "fc re-runs history", "bind": "bind runs code",
    "complete": "complete can run commands", "compgen": "compgen can run commands",
    "mapfile": "mapfile -C runs a callback", "readarray": "readarray -C runs a callback",
    "let": "arithmetic on variables can run commands (array subscripts)",
    "shopt": "shopt changes how later words are parsed (extglob) and expanded",
    "trap": "trap runs code on a later signal",
}
#: environment variables whose value is code or changes what programs load or run, or where paths point (HOME,
#: OLDPWD, TMPDIR), or through what the network goes (proxies, CA bundles). A deny pattern by CLASS (any name
#: containing OPTS, FLAGS, PAGER, EDITOR, PATH, HOOK, CONFIG, RC, HOME... plus whole families: GIT_*, LESS*,
#: TAR_*, PYTHON*, NODE_*, npm_config_*, CARGO_*, GO*, MAKE*): programs read many variables, and a name that
#: matches is refused (over-refusing a harmless FOO_FLAGS is the price of not listing every program's).
UNSAFE_ENV = re.compile(
    r"PATH|BASH_ENV|ENV|LD_\w+|PROMPT_COMMAND|PS[0-4]|SHELLOPTS|BASHOPTS|BASH_FUNC_.*|BASH_\w*|"
    r"GIT_\w*|EDITOR|VISUAL|PAGER|"
    r"PERL5\w*|PERLLIB|PYTHON\w*|NODE_\w+|RUBY\w*|GEM_\w+|BUNDLE_\w+|NPM_CONFIG_\w+|npm_config_\w+|"
    r"CARGO_\w+|RUSTC\w*|RUSTDOC\w*|RUSTFLAGS|GO\w*|CC|CXX|CPP|LD|AR|AS|MAKE\w*|MFLAGS|CMAKE_\w+|"
    r"IFS|CDPATH|GLOBIGNORE|BASH_XTRACEFD|HISTFILE|DYLD_\w+|HOME|OLDPWD|PWD|TMPDIR|XDG_\w+|"
    r"SIMPLE_BACKUP_SUFFIX|VERSION_CONTROL|"  # the names cp/mv/ln back a file up under (.derived)
    r"LESS\w*|TAR_\w+|TAPE|PS_\w+|CMD_ENV|ZIPOPT|UNZIP\w*|GZIP|GREP_\w+|SSH_\w+|SUDO_\w+|PIP_\w+|PYTEST_\w+|"
    r"BROWSER|TERMINAL|SHELL|TERMINFO\w*|LOCPATH|GCONV_PATH|MALLOC_\w+|GLIBC_TUNABLES|HOSTALIASES|"
    r"\w*(PATH|OPTS|OPTIONS|FLAGS|PAGER|EDITOR|OPEN|CLOSE|SHELL|WRAPPER|HOOK|ASKPASS|COMMAND|CMD|PROGRAM|"
    r"EXEC|PRELOAD|LIB|CONFIG|STARTUP|RC|INIT|PLUGINS?|HOME|DIR|PROFILE|EDIT|DEFAULTS|RSH|NETRC|POSIX|PROXY|"
    r"proxy|CA_BUNDLE|CERT)\w*")
@dataclass(frozen=True)
class Hazard:
    """Options of a program (or a ``git`` subcommand) that run a command, load code or read file names from
    elsewhere: the allow list names the program, so these must be read here (fail closed)."""

    why: str
    long: tuple[str, ...] = ()      # long options; GNU getopt, git and npm accept any unambiguous prefix
    short: str = ""                 # short option letters, anywhere in a cluster (``-czIf``)
    word: str = ""                  # a regex a whole word must not match (``zip -TT``, ``less +!cmd``)
    safe_long: tuple[str, ...] = ()  # exact names of harmless options that share a prefix (``--checkpoint``)
    bare_cluster: bool = False      # the first word is an option cluster even without a dash (``tar czf``)


_RUNS = "an option that runs a command or loads code"
_NAMES = "an option that reads the names of files from standard input or a file (unknown paths)"
#: git's remote helpers (gitremote-helpers(7), transport.c): a repository ``NAME::address`` runs the program
#: ``git-remote-NAME`` (``ext::sh -c cmd`` runs any command where protocol.ext.allow permits it; ``fd::``, one on PATH),
#: and so does a URL whose scheme git does not carry itself (``NAME://``; git's own: file, git, ssh, http(s), ftp(s))
_REMOTE_HELPER = Hazard(_RUNS + " (a git remote helper: git-remote-NAME runs for NAME::address or NAME://)",
                        word=r"[A-Za-z][A-Za-z0-9+.-]*::.*|(?!(?:https?|ftps?|git|ssh|git\+ssh|ssh\+git|file)://)"
                             r"[A-Za-z][A-Za-z0-9+.-]*://.*")
#: from the programs' manuals (GNU tar, sort, coreutils wc/du, Info-ZIP zip, git-grep/fetch/pull/clone/init,
#: GNU make, cmake, ctest, go help build/test/vet, npm config, cargo --config, less, ripgrep)
HAZARDS: dict[str, tuple[Hazard, ...]] = {
    "tar": (Hazard(_RUNS, ("to-command", "checkpoint-action", "use-compress-program", "info-script",
                           "new-volume-script", "rmt-command", "rsh-command"), "IF", safe_long=("checkpoint",),
                   bare_cluster=True),
            Hazard(_NAMES, ("files-from",), "T", safe_long=("file",), bare_cluster=True),  # --file: the archive
            Hazard("an option that extracts members to absolute paths or over symbolic links",
                   ("absolute-names", "dereference"), "Ph", bare_cluster=True),
            Hazard("an archive named host:path is opened through a remote shell (rsh/ssh)",
                   word=r"[^-/=][^/=]*:.*")),
    "sort": (Hazard(_RUNS, ("compress-program",)), Hazard(_NAMES, ("files0-from",))),
    "wc": (Hazard(_NAMES, ("files0-from",)),),
    "du": (Hazard(_NAMES, ("files0-from",)),),
    "zip": (Hazard(_RUNS, word=r"-TT.*|--unz.*|--unzip-command.*"), Hazard(_NAMES, word=r"-@|--names-s.*")),
    "git grep": (Hazard(_RUNS, ("open-files-in-pager", "ext-grep"), "O"),),
    "git fetch": (Hazard(_RUNS, ("upload-pack",)), _REMOTE_HELPER),
    "git pull": (Hazard(_RUNS, ("upload-pack", "exec")), _REMOTE_HELPER),
    "git clone": (Hazard(_RUNS, ("upload-pack", "template", "config"), "uc"), _REMOTE_HELPER),
    "git ls-remote": (Hazard(_RUNS, ("upload-pack",)), _REMOTE_HELPER),
    "git push": (Hazard(_RUNS, ("receive-pack", "exec")), _REMOTE_HELPER),
    "git archive": (Hazard(_RUNS, ("exec",)), _REMOTE_HELPER),
    "git init": (Hazard(_RUNS + " (hooks from a template directory)", ("template", "separate-git-dir")),),
    # --pathspec-from-file: the paths git adds, commits, restores or resets are in a file (session 18)
    **{f"git {s}": (Hazard(_NAMES, ("pathspec-from-file",)),) for s in ("add", "checkout", "restore", "commit",
                                                                         "stash", "reset", "rm")},
    "git": (Hazard(_RUNS, ("exec-path", "config-env", "upload-pack", "receive-pack"), word=r"-c"),),
    "make": (Hazard(_RUNS + " (--eval, a makefile from standard input)", ("eval",), "E",
                    word=r"-|-f-|--file=-|--makefile=-"),
             Hazard("an assignment that changes the shell make runs recipes with", word=r"\.?SHELL(FLAGS)?=.*")),
    "cmake": (Hazard(_RUNS + " (-E command mode, -P script, -C initial cache script)", word=r"-[EPC].*"),),
    "ctest": (Hazard(_RUNS, ("build-and-test", "test-command", "script"), word=r"-S.*|-SP.*|-SR.*"),),
    # -ldflags '-linkmode=external -extld=./x' (go tool link): the external linker or archiver is a program
    "go": (Hazard(_RUNS, word=r"--?(exec|toolexec|vettool)(=.*)?|.*-ext(ld|ar)\b.*"),),
    **{s: (Hazard(_NAMES, ("check",), "c"),) for s in ("md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum",
                                                       "sha512sum", "b2sum", "cksum")},
    "npm": (Hazard(_RUNS, ("script-shell", "shell", "node-options", "userconfig", "globalconfig", "call",
                           "init-module", "editor", "browser")),),
    "cargo": (Hazard(_RUNS, ("config",), word=r"-Z.*"),),
    "less": (Hazard(_RUNS, ("lesskey-file", "lesskey-src", "lesskey-content"), "k",
                    word=r"\+(?!(\d+[gGpP%]?|[gGF]|/[^!|]*|\?[^!|]*)$).*"),
             # -t TAG opens the file a tags file names for TAG (less 590 showed a file no word named; session 18)
             Hazard(_NAMES, ("tag", "tag-file"), "tT")),
    # ripgrep 14: --hostname-bin runs a program for the {host} of a hyperlink format (session 17)
    "rg": (Hazard(_RUNS, ("pre", "hostname-bin")),),
    "file": (Hazard(_NAMES, ("files-from",), "f"),),
    "split": (Hazard(_RUNS + " (--filter: each piece is piped to a shell command)", ("filter",)),),
    "find": (Hazard(_NAMES, word=r"-files0-from"),),  # GNU find 4.9: starting points from a file
    "unzip": (Hazard("an option that extracts members to absolute or parent paths", word=r"-[^-]*[:^].*"),),
    "date": (Hazard("an option that sets the system clock", ("set",), "s"),),
    "hostname": (Hazard("an operand or option that sets the host name", ("file", "boot"), "Fb", word=r"[^-].*"),),
}


#: programs with an option that runs a command: an unknown word (``$x``, a glob that could match a file named
#: ``--checkpoint-action=exec=sh x``: wildcard injection) could be that option
RUNS_BY_OPTION = frozenset(p for p, hs in HAZARDS.items() if any(h.why != _NAMES for h in hs))


def as_module(program: str, words: list[str]) -> tuple[str, list[str]]:
    """``python -m MOD ARGS`` is the program ``MOD`` with ``ARGS`` (``python -m pytest --basetemp ~``: pytest's
    options, :func:`deletes`); any other command is itself."""
    if program.startswith(("python", "pypy")) and len(words) > 1 and words[0] == "-m":
        return words[1], words[2:]
    return program, words


#: GNU tar 1.34's short options that take a value (``-b 20``, ``-C dir``, ``-f archive``...)
TAR_VALUES = "bCfFgHIKLNTVX"


def option_letters(program: str, word: str) -> str:
    """The option letters of a short cluster: for tar, up to the first that takes a value (``-cfx.tar`` is ``c`` and
    ``f`` with the archive ``x.tar``, not an ``x``); for other programs every letter (reading more only refuses)."""
    letters = word.lstrip("-")
    if program == "tar" and word.startswith("-"):
        at = next((k for k, ch in enumerate(letters) if ch in TAR_VALUES), len(letters))
        return letters[:at + 1]
    return letters


def hazard(program: str, words: list[str]) -> str | None:
    """Why ``words`` (the literal arguments of ``program``) use a :data:`HAZARDS` option, or None."""
    at = next((k for k, w in enumerate(words) if not w.startswith("-")), len(words))
    sub = words[at] if program == "git" and at < len(words) else ""
    for h in HAZARDS.get(program, ()) + HAZARDS.get(f"{program} {sub}", ()):
        scope = words[:at] if program == "git" and h in HAZARDS["git"] else words  # git's own options
        for k, w in enumerate(scope):
            if w == "--" and program != "git":
                break
            if h.word and re.fullmatch(h.word, w, re.S):
                return f"{program} {w[:40]!r}: {h.why}"
            if w.startswith("--") and len(w) > 2:
                opt = w[2:].split("=", 1)[0]
                if opt not in h.safe_long and any(name.startswith(opt) for name in h.long):
                    return f"{program} {w[:40]!r}: {h.why}"
            elif h.short and ((w.startswith("-") and len(w) > 1) or (k == 0 and h.bare_cluster)):
                if any(ch in h.short for ch in option_letters(program, w)):
                    return f"{program} {w[:40]!r}: {h.why}"
    return None


#: programs that read, copy, move, link or change the whole tree of a directory operand, and the options of which
#: one makes them do so (short letters case-exact, as each program's getopt reads them: ``ls -r`` reverses the
#: order, ``ls -R`` recurses; long ones as ``--name``); an empty set: always. ``mv`` and ``ln`` move or link the tree
#: (``ln -s /etc e; cat e/shadow``); a recursive listing names every file below its operands, as ``ls ~/.ssh`` names
#: ~/.ssh/* (session 22: ``ls -R ~``, ``find ~``, ``du -a ~``, ``tree -a ~`` printed ~/.ssh/id_rsa and
#: ~/.aws/credentials); du names files only with -a (without, the directories: ``du -sh ~`` stays allowed).
#: Session 23: the letters were compared case-folded, so ``ls -r /etc`` (reverse) was refused as ``ls -R /etc``.
RECURSIVE: dict[str, frozenset[str]] = {
    **{g: frozenset({"r", "R", "d", "--dereference-recursive", "--directories", "--recursive"})
       for g in ("grep", "egrep", "fgrep")},
    "rg": frozenset(), "ag": frozenset(), "ack": frozenset(), "tar": frozenset(), "mv": frozenset(),
    "ln": frozenset(), "rsync": frozenset(), "cp": frozenset({"r", "R", "a", "--recursive", "--archive"}),
    "scp": frozenset({"r"}), "zip": frozenset({"r", "R", "--recurse-paths", "--recurse-patterns"}),
    "gzip": frozenset({"r", "--recursive"}), "gunzip": frozenset({"r", "--recursive"}),
    "chmod": frozenset({"R", "--recursive"}), "chown": frozenset({"R", "--recursive"}),
    "chgrp": frozenset({"R", "--recursive"}), "rm": frozenset({"r", "R", "--recursive"}),
    "diff": frozenset({"r", "--recursive"}), "shred": frozenset(), "git": frozenset(), "unzip": frozenset(),
    "ls": frozenset({"R", "--recursive"}), "du": frozenset({"a", "--all"}), "tree": frozenset(), "find": frozenset(),
}
#: programs that only read their operands (a config file they name is read, not written)
READERS = frozenset({"cat", "head", "tail", "less", "more", "grep", "egrep", "fgrep", "rg", "wc", "diff", "cmp",
                     "comm", "stat", "file", "ls", "md5sum", "sha1sum", "sha256sum", "xxd", "od", "hexdump", "nl",
                     "tac", "rev", "du", "tree", "realpath", "readlink", "basename", "dirname", "echo", "printf",
                     "test", "[", "jq", "column", "fold", "expand", "cut", "uniq", "zcat", "which", "type"})
#: readers that write too (session 11: ``uniq c.txt ~/.gitconfig`` and ``xxd -r -p c.hex ~/.gitconfig`` wrote a
#: git config whose core.fsmonitor ran on the next ``git status``; the reader exemption skipped the check):
#: programs whose operands after the first are output files, and options whose value is an output file
OUTPUT_OPERAND = frozenset({"uniq", "xxd"})
OUTPUT_OPTIONS: dict[str, tuple[str, ...]] = {"tree": ("-o",), "less": ("-o", "-O", "--log-file", "--LOG-FILE")}
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[0-9]*\])?")
#: bash builtins whose operands (or an option's value) are variable NAMES. A subscript in a name is evaluated
#: as arithmetic, which expands ``$(...)`` inside it even when the word was single-quoted: ``test -v
#: 'a[$(id)]'``, ``printf -v 'a[$(id)]' x``, ``unset 'a[$(id)]'`` (for an array ``a``) run ``id``. Per builtin,
#: the option that introduces the names ("" for every operand).
NAME_BUILTINS: dict[str, str] = {"test": "-v", "[": "-v", "unset": "", "read": "", "getopts": "", "wait": "-p",
                                 "printf": "-v", "export": "", "readonly": "", "declare": "", "typeset": "",
                                 "local": ""}


#: bash's reserved words (``time`` aside: it is read as a wrapper). tree-sitter-bash reads ``time`` and ``!`` before a
#: compound command as a simple command, and the compound's words as commands named ``if``, ``then``, ``do``, ``{``
#: (session 21: ``time if true; then rm -rf /; fi`` was read as the program ``then`` with the operands ``rm -rf /``);
#: bash never runs an unquoted reserved word as a program, so one read as a command name is a misread
RESERVED_WORDS = frozenset({"!", "case", "coproc", "do", "done", "elif", "else", "esac", "fi", "for", "function",
                            "if", "in", "select", "then", "until", "while", "{", "}", "[[", "]]"})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[.*\])?\+?=.*", re.S)


def command_word_reason(text: str, literal: bool) -> str | None:
    """Why a command word cannot be read as the program bash runs, or None: a word bash computes (an expansion, a
    substitution, a glob), a reserved word (a compound command the parser misread: :data:`RESERVED_WORDS`) or an
    assignment (``time X=1 agpwn`` assigns X and runs agpwn; the parser gave ``X=1`` as the program). A name
    spelled otherwise than the rules read it is :func:`.model.spelled_name_reason`."""
    if not literal:
        return f"the command word {text!r} is not a fixed word (expansion, substitution or glob)"
    if text in RESERVED_WORDS or _ASSIGNMENT.fullmatch(text):
        return f"the command word {text!r} is a reserved word or an assignment: the parser misread the command"
    return None


def plain_name(text: str) -> bool:
    """A variable name bash assigns or tests without evaluating anything (``x``, ``a[3]``)."""
    return bool(_PLAIN_NAME.fullmatch(text))


#: programs that run another command (or a command on another machine or in a container) whose option
#: grammar is not modelled in :data:`WRAPPERS`: with any argument, what runs cannot be read (a deny list
#: would otherwise miss ``unshare rm -rf /``)
UNMODELLED_RUNNERS = frozenset(n.replace("-", "_") for n in {  # program names are canonical ("-" as "_")
    "unbuffer", "script", "parallel", "sem", "nsenter", "unshare", "firejail", "bwrap", "systemd-run", "ssh",
    "dbus-launch", "dbus-run-session", "fakeroot", "proot", "catchsegv", "valgrind", "gdb", "lldb", "ltrace",
    "chrt", "numactl", "prlimit", "cpulimit", "torsocks", "proxychains", "proxychains4", "sg", "newgrp",
    "pkexec", "run-parts", "start-stop-daemon", "at", "batch", "crontab", "tmux", "screen", "caffeinate",
    "sshpass", "rlwrap", "entr", "setpriv", "capsh", "runcon", "sandbox-exec", "faketime", "xvfb-run", "mpirun",
    "srun", "docker", "podman", "kubectl", "nerdctl", "lxc-attach", "machinectl", "schroot", "firejail",
    "ts", "retry", "systemd-nspawn", "vagrant", "pdsh", "clush", "ansible",
})


#: programs whose short options differ by case (getopt reads them exactly): ``chmod -r`` removes read permission,
#: ``chmod -R`` recurses; ``ls -r`` reverses, ``ls -R`` recurses (session 23: both were read as one flag)
CASE_EXACT = frozenset({"chmod", "chown", "chgrp", "ls", "du", "sort", "tail", "head", "scp", "rsync", "ssh", "df"})
#: programs whose single-dash options are words (``find -delete``), not letter clusters
SINGLE_DASH_LONG = frozenset({"find", "java", "go", "gfind", "bfs"})
#: options that delete their operands (read as ``rm -r -f`` of them, like ``find -delete``): long names (any
#: unambiguous prefix) and short letters
DELETE_OPTIONS: dict[str, tuple[tuple[str, ...], str]] = {
    "tar": (("remove-files",), ""), "zip": (("move",), "m"),
    "rsync": (("remove-source-files", "remove-sent-files"), ""),
    # pytest removes its --basetemp directory if it exists ("--basetemp ~" deletes the home; session 17)
    "pytest": (("basetemp",), ""), "py.test": (("basetemp",), ""),
}


def extracts(program: str, words: list[str]) -> str | None:
    """Why ``program`` writes files under names its input chooses (``tar -x``, ``unzip``, ``gunzip -N``), or None.

    The names are in the archive, not in the text: an archive made with ``tar --transform 's,x,.git/hooks/
    pre-commit,'`` writes a hook on extraction. Extracting to standard output (``tar -xO``, ``unzip -p``) and
    listing or testing (``unzip -l``, ``-t``) write nothing.
    """
    opts = [w for w in words[:words.index("--")] if w.startswith("-")] if "--" in words else \
        [w for w in words if w.startswith("-")]
    longs = [w[2:].split("=", 1)[0] for w in opts if w.startswith("--") and len(w) > 2]
    shorts = "".join(option_letters(program, w) for w in opts if not w.startswith("--"))
    if program == "tar":
        bare = words[0] if words and not words[0].startswith("-") else ""
        if not ("x" in shorts or "x" in bare or any(n and ("extract".startswith(n) or "get".startswith(n))
                                                    for n in longs)):
            return None
        if "-O" in opts or any(n.startswith("to-s") and "to-stdout".startswith(n) for n in longs):
            return None
        return "tar extracts members under names the archive chooses (.git/hooks/*, .npmrc...)"
    if program == "unzip":
        if "-" in words or any(ch in shorts for ch in "ltpcvZz"):
            return None
        return "unzip extracts members under names the archive chooses (.git/hooks/*, .npmrc...)"
    if program in ("gzip", "gunzip"):
        decompress = program == "gunzip" or "d" in shorts or any(
            n and ("decompress".startswith(n) or "uncompress".startswith(n)) for n in longs)
        if decompress and ("N" in shorts or any(n.startswith("na") and "name".startswith(n) for n in longs)) \
                and "c" not in shorts and not any(n.startswith("std") or n == "to-stdout" for n in longs):
            return f"{program} -N restores the file name stored in the archive"
    return None


#: ``set`` options that change how bash reads the lines after it (session 11: ``set -o keyword`` then ``less x
#: LESSOPEN='|./ev/ls %s'`` put LESSOPEN in less's environment; ``set -H`` with history makes ``!$`` a command)
SET_READING = {"k": "keyword", "H": "histexpand"}
SET_READING_NAMES = frozenset({"keyword", "histexpand", "history", "posix", "onecmd"})


def set_hazard(words: list[str]) -> str | None:
    """Why ``set WORDS`` changes how later lines are read (assignment words anywhere, history expansion, posix)."""
    for k, w in enumerate(words):
        if w in ("--", "-"):
            break
        if w.startswith("-") and not w.startswith("--"):
            if any(ch in SET_READING for ch in w[1:]):
                return f"set {w}: changes how the following lines are read"
            if "o" in w[1:] and k + 1 < len(words) and words[k + 1] in SET_READING_NAMES:
                return f"set -o {words[k + 1]}: changes how the following lines are read"
        elif not w.startswith("+"):
            break  # positional parameters follow
    return None


def deletes(program: str, words: list[str]) -> str | None:
    """The option of ``words`` that makes ``program`` delete its operands (:data:`DELETE_OPTIONS`), or None."""
    program, words = as_module(program, words)
    longs, shorts = DELETE_OPTIONS.get(program, ((), ""))
    for w in words:
        if w == "--":
            break
        if w.startswith("--") and len(w) > 3 and any(n.startswith(w[2:].split("=", 1)[0]) for n in longs):
            return w
        if shorts and w.startswith("-") and not w.startswith("--") and any(ch in shorts for ch in w[1:]):
            return w
    return None


def tree_flag(tree: frozenset[str], words: list[str]) -> bool:
    """Whether the literal argument ``words`` hold one of a :data:`RECURSIVE` entry's options: a short letter of a
    cluster as written (case-exact: getopt compares letters exactly), a long one also abbreviated: GNU getopt_long
    takes any unambiguous prefix, so ``grep --dereference-rec x ~`` and ``grep --direc=rec x ~`` read the home's tree
    as ``grep -R`` does (grep 3.8, session 20); an ambiguous prefix only makes the program fail. Reading every letter
    of a cluster (a value joined to its option too) only reads more trees."""
    for w in words:
        if w == "--":
            return False
        if w.startswith("--") and len(w) > 2:
            name = w.split("=", 1)[0]
            if any(t.startswith("--") and t.startswith(name) for t in tree):
                return True
        elif w.startswith("-") and len(w) > 1 and any(ch in tree for ch in w[1:]):
            return True
    return False
