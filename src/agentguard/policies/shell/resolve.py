"""What a command runs (issue 25): programs resolved through wrappers, shells' ``-c`` payloads, ``cd``.

:class:`Resolver` records each command (canonical program name, words, flags) and follows what it runs in
turn: wrappers with their real option arity (:data:`~.programs.WRAPPERS`: ``timeout -k 5s 10 rm`` runs
``rm``), ``busybox``/``toybox`` applets, POSIX shells' ``-c`` payloads (parsed again, recursively),
``su -c``/``flock -c``/``env -S``/``watch`` payloads, and the directories ``cd`` may move to. Builtins
whose effect is not in the text (``eval``, ``source``...) and anything whose arity is unknown are
unresolvable. Interpreters, ``awk``, ``sed`` and ``find`` are read by :mod:`.payloads`.
"""

from __future__ import annotations

import re

from .derived import derived_outputs, into_directory
from .gitargs import git_readings
from .globs import intersects
from .model import ANY_WORD, DASH_ANY, MAX_DEPTH, Command, WalkerBase, chain, configures_below, program_name
from .options import option_reason
from .paths import word_paths
from .runners import runner_reason
from .programs import (AWKS, HAZARDS, INTERPRETERS, NAME_BUILTINS, NO_PATH_OPERANDS, OTHER_SHELLS, OUTPUT_OPERAND,
                       OUTPUT_OPTIONS, POSIX_SHELLS, READERS, RECURSIVE, RUNS_BY_OPTION, UNMODELLED_RUNNERS, WRAPPERS,
                       UNRESOLVABLE_BUILTINS, UNSAFE_ENV, Wrapper, command_word_reason, deletes, extracts, hazard,
                       plain_name, set_hazard, tree_flag)
from .envreads import env_split
from .vcs import git_content_reason, git_split, remote_words
from .words import Word, literal_word
from .flags import flags_of

__all__ = ["Resolver"]


#: builtins that assign the variables they name (every word is checked: an option's value is over-read as a
#: name, which can only refuse more); :data:`DECLARES` also take attributes (``-n`` nameref, ``-i`` arithmetic)
ASSIGNING = frozenset({"read", "getopts", "wait", "export", "readonly", "declare", "typeset", "local"})
#: programs that create or remove directories only: no file they make configures a program (``mkdir config``)
MAKES_DIRECTORIES = frozenset({"mkdir", "rmdir"})
MAX_CWDS = 16
DECLARES = frozenset({"export", "readonly", "declare", "typeset", "local"})


def _links(name: str, args: list[Word]) -> bool:
    """Whether the command makes links to its operands: ``ln`` (symbolic or hard), ``cp -s``/``-l`` (any cluster
    holding ``s`` or ``l``, ``--sy...``, ``--li...``: read wide, which can only refuse more)."""
    if name == "ln":
        return True
    return name == "cp" and any(w.literal and ((not w.text.startswith("--") and w.text.startswith("-") and (
        "s" in w.text or "l" in w.text)) or w.text.startswith(("--sy", "--li"))) for w in args)


class Resolver(WalkerBase):
    """Program resolution (see the module docstring); the payload readers are :class:`~.payloads.PayloadReader`."""

    def resolve(self, argv: list[Word], depth: int, via: str, stdin_args: bool = False) -> None:
        """Record ``argv`` as a command and resolve what it runs in turn (wrappers, payloads)."""
        if depth > MAX_DEPTH or not argv:
            if depth > MAX_DEPTH:
                self.refuse(f"nesting deeper than {MAX_DEPTH} levels")
            return
        self.spend(len(argv))
        head = argv[0]
        why = command_word_reason(head.text, head.literal)  # $x, a glob; "then" or "X=1" misread after time/!
        if why is not None:
            self.refuse(why)
            return
        self.refuse_spelled(head.text)  # "HEAD", "ｌｓ": refused, and read on as the folded program
        name = program_name(head.text)
        args = argv[1:]
        literal_args = [w.text for w in args]
        flags, operands = flags_of(name, [w.text for w in args if w.literal])
        unknown = stdin_args or any(not w.literal and (w.split or intersects(w.tokens, DASH_ANY)) for w in args)
        if stdin_args:  # xargs: more words come from standard input
            args = args + [ANY_WORD]
            argv = argv + [ANY_WORD]
        self.out.commands.append(Command(name, tuple([head.text] + literal_args), flags, tuple(
            w.text for w in args if not (w.literal and w.text.startswith("-"))), unknown, via, tuple(argv)))
        if name == "printf" and args and args[0].text.startswith("-v"):
            var = args[0].text[2:] or (args[1].text if len(args) > 1 and args[1].literal else "PATH")
            if not args[0].literal or UNSAFE_ENV.fullmatch(var.split("[", 1)[0]):
                self.refuse("printf -v sets a variable that changes what runs")
        if name in HAZARDS:
            why = hazard(name, [w.text for w in args if w.literal])
            sub = next((w for w in args if not (w.literal and w.text.startswith("-"))), None)
            key = f"{name} {sub.text}" if name == "git" and sub is not None else name
            if why is None and key in RUNS_BY_OPTION and any(not w.literal for w in args) and (
                    unknown or name == "git"):
                why = f"{name}: an unknown word could be an option that runs a command"
            if why is None and name == "git" and sub is not None and not sub.literal:
                why = "git: the subcommand is not a fixed word"
            if why is not None:
                self.refuse(why)
        why = option_reason(name, args)  # jq's module directives, make's assignments, cmake -D, mypy (.options)
        if why is not None:
            self.refuse(why)
        why = runner_reason(name, args, self.cwds[self.start_cwds:], self.cwds[:self.start_cwds])  # (.runners)
        if why is not None:
            self.refuse(why)
        gone = deletes(name, [w.text for w in args if w.literal])
        if gone is not None:  # tar --remove-files, zip -m: the operands are deleted (as find -delete)
            targets = [w for w in args if not (w.literal and w.text.startswith("-"))]
            if "=" in gone:  # the option names what it deletes (pytest --basetemp=DIR)
                targets.append(literal_word(gone.split("=", 1)[1]))
            self.out.commands.append(Command("rm", ("rm", "-r", "-f", *[t.text for t in targets]),
                                             frozenset({"r", "f"}), tuple(t.text for t in targets), True,
                                             chain(via, f"{name} {gone}"), tuple(targets)))
        unpacked = extracts(name, [w.text for w in args if w.literal])
        if unpacked is not None or (name in ("unzip", "gunzip") and unknown):
            self.refuse(unpacked or f"{name}: an unknown word could be an option that extracts under stored names")
        why = set_hazard([w.text for w in args]) if name == "set" else None
        if why or (name == "set" and unknown):
            self.refuse(why or "set: an unknown word could be an option that changes how later lines are read")
        if name in NAME_BUILTINS:
            self.names(name, NAME_BUILTINS[name], args)
        self.printed(name, args)  # printenv, set, "export" -p: the environment (.envreads)
        tree = RECURSIVE.get(name)
        whole = tree is not None and (not tree or tree_flag(tree, [w.text for w in args if w.literal]) or unknown)
        if _links(name, args):  # "ln -s /etc/profile.d p": p/x.sh is /etc/profile.d/x.sh (.model.configures_below)
            for w in args:
                why = configures_below(word_paths(w, self.cwds)) if not (w.literal and w.text.startswith("-")) else None
                if why:
                    self.refuse(why)
                    break
        for w in into_directory(name, args):  # "cp authorized_keys ~/.ssh" writes ~/.ssh/authorized_keys
            self.add_paths(w, writes=True)
        derived = derived_outputs(name, args)  # "cp -b -S rc x ~/.bash", "gunzip ~/.bashrc.gz" write ~/.bashrc
        if isinstance(derived, str):
            self.refuse(derived)
        for w in () if isinstance(derived, str) else derived:
            self.add_paths(w, writes=True)
        written = output_words(name, args)  # a reader's output operand or option (uniq in OUT, xxd -r h OUT)
        remote = {w.text for w in remote_words(name, args)}  # "git fetch origin": a remote's name, not a path (.vcs)
        for w in args:  # echo's words are text, but a glob (or an unquoted expansion) makes bash list a directory
            if name not in NO_PATH_OPERANDS or w.split or not (w.literal or w.unknown):
                forms = self.add_paths(w, writes=(name not in READERS or any(w is x for x in written)) and
                                       name not in MAKES_DIRECTORIES, remotes=not (w.literal and w.text in remote))
                if whole:
                    self.out.subtrees.extend(forms)
            elif whole:
                self.out.subtrees.extend(word_paths(w, self.cwds))
        if whole:
            self.out.subtrees.extend((c, None) for c in self.cwds if c)  # no operand: the working directory
        if name == "git":  # object names and pathspecs, read with git's grammar (:mod:`.gitargs`)
            seen = git_readings(args)
            for w in seen.paths:
                self.add_paths(w, writes=seen.writes, remotes=not (w.literal and w.text in remote))
            for w in seen.trees:
                self.out.subtrees.extend(word_paths(w, self.cwds))
            for why in seen.unresolvable:
                self.refuse(why)
            split = git_split(args)  # a checkout of another commit is an archive extraction (:mod:`.vcs`)
            why = git_content_reason(*split) if split is not None else None
            if why is not None:
                self.refuse(why)
        self.dispatch(name, args, depth, via)

    def dispatch(self, name: str, args: list[Word], depth: int, via: str) -> None:
        """Resolve what the program ``name`` runs in turn: a wrapper's command, a shell's or an interpreter's
        payload, find's -exec, sed's e; a directory change; a runner whose grammar is not modelled is refused."""
        if name in UNMODELLED_RUNNERS and args:
            self.refuse(f"{name} runs another command with an option grammar not modelled here")
            return
        if name in UNRESOLVABLE_BUILTINS:
            why = UNRESOLVABLE_BUILTINS[name]
            if why:
                self.refuse(why)
            return
        if name in ("cd", "pushd", "popd"):
            self.chdir(name, args)
        elif name in WRAPPERS:
            self.wrapper(name, WRAPPERS[name], args, depth, via)
        elif name in ("busybox", "toybox"):
            rest = [w for w in args]
            while rest and rest[0].literal and rest[0].text.startswith("-"):
                if rest[0].text == "--":
                    rest = rest[1:]
                    break
                return  # busybox --list / --install: runs no applet
            if rest:
                self.resolve(rest, depth + 1, chain(via, name))
        elif name in POSIX_SHELLS or name in OTHER_SHELLS:
            self.shell(name, args, depth, via)
        elif name in INTERPRETERS:
            self.interpreter(name, INTERPRETERS[name], args)
        elif name in AWKS:
            self.awk(name, args)
        elif name in ("find", "gfind", "bfs"):
            self.find(name, args, depth, via)
        elif name == "sed" or name == "gsed":
            self.sed(args)

    def names(self, name: str, option: str, args: list[Word]) -> None:
        """Operands that are variable names: a subscript is evaluated as arithmetic (runs ``$(...)``)."""
        if option and not any(w.literal and w.text.startswith(option) for w in args):
            return
        for w in args:
            if not w.literal:
                self.refuse(f"{name}: the word {w.text!r} may be a name with a subscript (evaluated as arithmetic)")
                return
            text = w.text[len(option):] if option and w.text.startswith(option) else w.text
            if "[" in text and not plain_name(text.split("=", 1)[0]):
                self.refuse(f"{name} {w.text[:30]!r}: a subscript in a variable name is evaluated as arithmetic "
                            "(can run commands)")
                return
            if name in ASSIGNING and UNSAFE_ENV.fullmatch(text.split("=", 1)[0].split("[", 1)[0].rstrip("+")):
                # '"export" PATH=x', 'builtin declare PATH=x', 'read PATH': the parser reads no assignment
                # (a quoted or wrapped builtin is a plain command for it), bash assigns all the same
                self.refuse(f"{name} {w.text[:30]!r} assigns a variable that changes what runs")
                return
            if name in DECLARES and w.text.startswith("-") and re.search(r"[inaAxf]", w.text[1:]) and \
                    name != "export":
                self.refuse(f"{name} {w.text}: attributes that evaluate text or name other variables")
                return

    def chdir(self, name: str, args: list[Word]) -> None:
        if len(self.cwds) > MAX_CWDS:  # stop following: each cd joins every directory so far (the set grew
            self.refuse("too many directory changes to follow")  # without bound: 170 s for 800 "cd a;")
            return
        targets = [w for w in args if not (w.literal and w.text.startswith("-") and w.text != "-")]
        if name == "popd" or not targets:
            if name == "cd":  # cd alone: $HOME
                self.cwds.append("~") if "~" not in self.cwds else None
            elif len(self.cwds) == 1:
                self.refuse(f"{name} without a directory goes to one this text did not name")
            return
        w = targets[0]
        if not w.literal:
            self.refuse(f"{name} to {w.text!r}, not a fixed directory")
            return
        if w.text == "-" or (name == "pushd" and re.fullmatch(r"[+-]\d+", w.text)):
            if len(self.cwds) == 1:
                self.refuse(f"{name} {w.text} goes to $OLDPWD or the directory stack, unknown here")
            return  # back to a directory already in the set
        for form, _ in word_paths(w, self.cwds):
            if form not in self.cwds:
                self.cwds.append(form)
        if len(self.cwds) > MAX_CWDS:
            self.refuse("too many directory changes to follow")
            del self.cwds[MAX_CWDS + 1:]

    def wrapper(self, name: str, spec: Wrapper, args: list[Word], depth: int, via: str) -> None:
        i = 0
        meaning: set[str] = set()
        payload: Word | None = None
        split_runs = False  # env -S VALUE holds command words (else env prints the environment)
        while i < len(args):
            w = args[i]
            if not w.literal:
                self.refuse(f"{name}: the word {w.text!r} is not fixed, so where the command starts is unknown")
                return
            text = w.text
            if text == "--":
                i += 1
                break
            if name == "env" and text == "-":
                i += 1
                continue
            if text.startswith("--") and len(text) > 2:
                opt, eq, _ = text[2:].partition("=")
                known = [n for n in spec.long_arg | spec.long_flag if n.startswith(opt)]
                exact = opt in spec.long_arg or opt in spec.long_flag
                if not exact and len(known) != 1:
                    self.refuse(f"{name}: unknown option --{opt}")
                    return
                full = opt if exact else known[0]
                meaning.add(spec.extra.get(full, ""))
                value: Word | None = None
                if full in spec.long_arg:
                    if eq:
                        value = literal_word(text.split("=", 1)[1])
                    else:
                        if i + 1 >= len(args):
                            self.refuse(f"{name}: --{full} needs a value")
                            return
                        value = args[i + 1]
                        i += 1
                    self.option_value(name, spec.extra.get(full, ""), value, depth, via)
                    if spec.extra.get(full) == "payload":
                        payload = value
                    split_runs |= spec.extra.get(full) == "split" and bool((env_split(value.text) or ([], [""]))[1])
                i += 1
                continue
            if spec.numeric_option and re.fullmatch(r"-\d+", text):
                i += 1
                continue
            if text.startswith("-") and len(text) > 1:
                j = 1
                while j < len(text):
                    ch = text[j]
                    if ch in spec.short_arg:
                        attached = text[j + 1:]
                        if attached:
                            value = literal_word(attached)
                        else:
                            if i + 1 >= len(args):
                                self.refuse(f"{name}: -{ch} needs a value")
                                return
                            value = args[i + 1]
                            i += 1
                        meaning.add(spec.extra.get(ch, ""))
                        self.option_value(name, spec.extra.get(ch, ""), value, depth, via)
                        if spec.extra.get(ch) == "payload":
                            payload = value
                        split_runs |= spec.extra.get(ch) == "split" and bool((env_split(value.text) or ([], [""]))[1])
                        break
                    if ch in spec.optional_attached:
                        break
                    if ch not in spec.short_flag:
                        self.refuse(f"{name}: unknown option -{ch}")
                        return
                    meaning.add(spec.extra.get(ch, ""))
                    j += 1
                i += 1
                continue
            if spec.assignments and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", text, re.S):
                if UNSAFE_ENV.fullmatch(text.split("=", 1)[0]):
                    self.refuse(f"{name} {text.split('=', 1)[0]}=...: injects code or changes what runs")
                i += 1
                continue
            break
        self.wrapped(name, spec, args, args[i:], meaning, payload, split_runs, depth, via)

    def wrapped(self, name: str, spec: Wrapper, args: list[Word], rest: list[Word], meaning: set[str],
                payload: Word | None, split_runs: bool, depth: int, via: str) -> None:
        """What a wrapper runs once :meth:`wrapper` read its options (``rest``: the words after them)."""
        if "unknown" in meaning:
            self.refuse(f"{name}: an option whose meaning depends on the version")
            return
        if "noexec" in meaning or "edit" in meaning:
            return  # sudo -l / -e (sudoedit: operands are files), command -v: nothing else runs
        positional = spec.positional
        if positional == -1:  # su [options] [user [args...]]: args go to the user's shell
            if payload is None:
                self.refuse(f"{name} without -c starts a shell")
            elif len(rest) > 1:
                self.refuse(f"{name}: extra arguments are passed to the user's shell")
            return
        if len(rest) < positional:
            if spec.no_command == "shell" or (payload is None and positional):
                self.refuse(f"{name}: incomplete command") if spec.no_command != "shell" else \
                    self.refuse(f"{name} without a command starts a shell")
            return
        for w in rest[:positional]:
            if not w.literal:
                self.refuse(f"{name}: the word {w.text!r} is not fixed")
                return
        rest = rest[positional:]
        if payload is not None:
            if rest and name == "flock":
                self.refuse("flock: both -c and a command")
            return
        if "shell" in meaning and not rest:
            return self.refuse(f"{name} -s/-i without a command starts a shell")
        if not rest:
            if spec.no_command == "shell":
                self.refuse(f"{name} without a command starts a shell")
            if name == "env" and not split_runs:  # (env -S 'cmd' runs the split words; env -S '' or -S 'X=1' prints)
                self.read_env("=", "env without a command")  # (.envreads.ALL)
            return
        if spec.extra.get("join") and "exec" not in meaning:  # watch: the words joined, run by sh -c
            if any(not w.literal for w in rest):
                self.refuse(f"{name}: a command with unknown words")
                return
            self.text(" ".join(w.text for w in rest), depth + 1)
            return
        if name == "xargs" and _replaced_program(args, rest[0]):
            return self.refuse("xargs: the command word is replaced by words from standard input")
        rest = _unmarked(args, rest) if name == "xargs" else rest
        self.resolve(rest, depth + 1, chain(via, name), stdin_args=bool(spec.extra.get("stdin_args")))

    def option_value(self, name: str, meaning: str, value: Word, depth: int, via: str) -> None:
        self.add_paths(value)
        if meaning == "payload":
            if not value.literal:
                self.refuse(f"{name}: the code to run is not a fixed string")
            else:
                self.text(value.text, depth + 1)
        elif meaning == "split":  # env -S 'rm -rf /': split like env does (quotes, no expansions)
            if not value.literal or re.search(r"\$|\\[^\\'\" _tnrfv#]", value.text):
                self.refuse(f"{name} -S with expansions or escapes")
                return
            split = env_split(value.text)
            if split is None:
                return self.refuse(f"{name} -S: unbalanced quotes")
            for a in [a for a in split[0] if UNSAFE_ENV.fullmatch(a)]:  # env -S 'X=1 cmd': assignments first
                self.refuse(f"{name} -S {a}=...: injects code or changes what runs")
            self.resolve([literal_word(p) for p in split[1]], depth + 1, chain(via, name))
        elif meaning in ("cwd", "root"):
            if not value.literal:
                self.refuse(f"{name}: the directory {value.text!r} is not fixed")
            elif meaning == "cwd":
                for form, _ in word_paths(value, self.cwds):
                    self.cwds.append(form) if form not in self.cwds else None
                if len(self.cwds) > MAX_CWDS:
                    self.refuse("too many directory changes to follow")
                    del self.cwds[MAX_CWDS + 1:]
        elif meaning == "search":
            self.refuse(f"{name} -P: the program is looked up in another directory list")
        elif meaning == "assign":
            if UNSAFE_ENV.fullmatch(value.text.split("=", 1)[0]):
                self.refuse(f"{name}: setting {value.text.split('=', 1)[0]} injects code")

    def shell(self, name: str, args: list[Word], depth: int, via: str) -> None:
        code = False
        i = 0
        while i < len(args):
            w = args[i]
            if not w.literal:
                self.refuse(f"{name}: the word {w.text!r} is not fixed")
                return
            text = w.text
            if text in ("--", "-"):
                i += 1
                break
            if text in ("--login", "-l") or (text.startswith("-") and not text.startswith("--") and "l" in text):
                self.refuse(f"{name} {text}: a login shell runs profile files that cannot be read here")
                return
            if text in ("--rcfile", "--init-file"):
                self.refuse(f"{name} {text} runs an unknown file")
                return
            if text.startswith("--"):
                i += 1
                continue
            if (text.startswith("-") or text.startswith("+")) and len(text) > 1:
                letters = text[1:]
                if "c" in letters:
                    code = True
                if "s" in letters or "i" in letters:
                    self.refuse(f"{name} {text} reads commands from standard input")
                    return
                if "o" in letters or "O" in letters:
                    i += 1  # -o option / -O shopt take a value
                i += 1
                continue
            break
        rest = args[i:]
        if not code:
            if rest:
                self.refuse(f"{name} runs the script {rest[0].text!r}, which cannot be read here")
            else:
                self.refuse(f"{name} reads commands from standard input")
            return
        if not rest:
            self.refuse(f"{name} -c without code")
            return
        if name in OTHER_SHELLS:
            self.refuse(f"{name} -c: code in another shell's grammar")
            return
        if not rest[0].literal:
            self.refuse(f"{name} -c: the code to run is not a fixed string")
            return
        saved = self.posix_sh
        self.posix_sh = saved or name != "bash"
        try:
            self.text(rest[0].text, depth + 1)
        finally:
            self.posix_sh = saved


def output_words(name: str, args: list[Word]) -> list[Word]:
    """The words a program of :data:`~.programs.READERS` writes to: every operand after the first of
    :data:`~.programs.OUTPUT_OPERAND` programs (``uniq IN OUT``, ``xxd -r IN OUT``; an option's value read as an
    operand only adds a write), and the value of an :data:`~.programs.OUTPUT_OPTIONS` option (``tree -o F``)."""
    out: list[Word] = []
    if name in OUTPUT_OPERAND:
        operands = [w for w in args if not (w.literal and w.text.startswith("-") and w.text != "-")]
        out += operands[1:]
    opts = OUTPUT_OPTIONS.get(name, ())
    for k, w in enumerate(args):
        if not w.literal:
            continue
        for o in opts:  # an abbreviation ("--log-f F": less 590 wrote F) or a cluster ("-so F") counts (session 20)
            given = w.text.split("=", 1)[0]
            if o.startswith("--") and len(given) > 2 and o.lower().startswith(given.lower()):
                out += [w] if "=" in w.text else args[k + 1:k + 2]
            elif not o.startswith("--") and re.fullmatch(rf"-[A-Za-z#]*{o[1:]}.*", w.text, re.S):
                out += [w] + (args[k + 1:k + 2] if w.text.endswith(o[1:]) else [])  # "-oFILE": the attached value
    return out


def _marks(args: list[Word]) -> list[str]:
    """xargs' replace strings (``-I R``, ``-iR``, ``--replace=R``; ``{}`` always, as by default)."""
    marks = ["{}"]
    for k, a in enumerate(args):
        if a.literal and a.text.startswith(("-I", "-i")):
            marks.append(a.text[2:] or (args[k + 1].text if a.text == "-I" and k + 1 < len(args) else "{}"))
        elif a.literal and a.text.startswith("--replace="):
            marks.append(a.text.split("=", 1)[1])
    return [m for m in marks if m]


def _unmarked(args: list[Word], rest: list[Word]) -> list[Word]:
    """``xargs -I{} env {}``: a word holding a replace string is read from standard input (unknown)."""
    marks = _marks(args)
    return [ANY_WORD if w.literal and any(m in w.text for m in marks) else w for w in rest]


def _replaced_program(args: list[Word], program: Word) -> bool:
    """Whether xargs' replace string is in the program word: then the program is a word read from stdin."""
    return any(m in program.text for m in _marks(args))
