"""Programs that run code given as arguments (issue 25): interpreters, ``awk``, ``sed``, ``find``.

Inline code of a non-shell interpreter (``python -c``, ``perl -e``, ``php -r``) or code read from standard
input is unresolvable; ``python -m NAME`` runs a named module and ``--version``/``-V`` run no code (the
allow list decides). An ``awk`` program that can run commands or write files, a ``sed`` script with
``e``/``w``/``r``, are unresolvable. ``find -exec/-execdir/-ok/-okdir`` run a command (resolved in turn)
and ``-delete`` is read as ``rm -r -f`` of the start points.
"""

from __future__ import annotations

import re

from .globs import intersects
from .model import ANY_WORD, DASH_ANY, Command, WalkerBase, chain
from .programs import INFO_OPTIONS
from .words import Word, literal_word

__all__ = ["PayloadReader", "sed_danger"]


class PayloadReader(WalkerBase):
    """The payload readers (see the module docstring)."""

    def interpreter(self, name: str, code_opts: str, args: list[Word]) -> None:
        valued = _VALUED.get(name.rstrip("0123456789"), ())
        skip = False
        for w in args:
            if skip:  # the value of an option (python -W c -c CODE: "c" is -W's value, not a script)
                skip = False
                continue
            if w.literal and w.text in valued:
                skip = True
                continue
            if not w.literal:
                self.refuse(f"{name}: the word {w.text!r} is not fixed")
                return
            text = w.text
            if text in ("-m",) and name.startswith(("python", "pypy")):
                return  # runs a named module: the allow list decides on the module's name
            if text in ("--version", "--help") or text in INFO_OPTIONS.get(name, ()):
                return  # prints the version or the usage and exits: no code runs
            if text.startswith("--eval") or text.startswith("--print") or text == "--":
                self.refuse(f"{name}: inline code cannot be resolved")
                return
            if text.startswith("-") and not text.startswith("--") and len(text) > 1:
                if any(ch in code_opts for ch in text[1:]):
                    self.refuse(f"{name} {text}: inline code cannot be resolved")
                    return
                if text == "-":
                    break
                continue
            if text.startswith("--"):
                continue
            return  # a script file: the allow list decides on the program
        self.refuse(f"{name} reads code from standard input")

    def awk(self, name: str, args: list[Word]) -> None:
        i = 0
        program: Word | None = None
        while i < len(args):
            text = args[i].text
            if not args[i].literal:
                self.refuse(f"{name}: the word {text!r} is not fixed")
                return
            if text in ("-f", "--file", "-i", "--include", "-l", "--load", "-E", "--exec") or \
                    text.startswith(("--file=", "--include=", "--load=", "--exec=")):
                self.refuse(f"{name} {text}: a program from a file")
                return
            if text in ("-e", "--source"):
                program = args[i + 1] if i + 1 < len(args) else None
                i += 2
                continue
            if text in ("-v", "-F", "--assign", "--field-separator"):
                i += 2
                continue
            if text.startswith("-") and len(text) > 1 and text != "--":
                i += 1
                continue
            if text == "--":
                i += 1
            break
        if program is None:
            program = args[i] if i < len(args) else None
        if program is None:
            self.refuse(f"{name} without a program")
        elif re.search(r"system|\||>|getline|@load|@include|ENVIRON\[|PROCINFO", program.text):
            self.refuse(f"{name}: the program can run commands or write files")

    def sed(self, args: list[Word]) -> None:
        """GNU sed's options (long ones abbreviable), then each script read by :func:`sed_danger`."""
        scripts: list[str] = []
        positional: list[Word] = []
        i = 0
        ended = False
        while i < len(args):
            w, i = args[i], i + 1
            if ended or not (w.literal and w.text.startswith("-") and len(w.text) > 1):
                if not w.literal and not ended and intersects(w.tokens, DASH_ANY):
                    self.refuse(f"sed: the word {w.text!r} could be an option (-e/-f)")
                    return
                positional.append(w)
                continue
            text = w.text
            if text == "--":
                ended = True
                continue
            if text.startswith("--"):
                opt, eq, value = text[2:].partition("=")
                full = [n for n in _SED_LONG if n.startswith(opt)]
                if opt in _SED_LONG:
                    full = [opt]
                if len(full) != 1:
                    self.refuse(f"sed: unknown or ambiguous option --{opt}")
                    return
                if full[0] == "file":
                    self.refuse("sed --file: a script from a file")
                    return
                if full[0] in ("expression", "line-length") and not eq:
                    if i >= len(args) or not args[i].literal:
                        self.refuse(f"sed --{full[0]}: its value is missing or not fixed")
                        return
                    value, i = args[i].text, i + 1
                if full[0] == "expression":
                    scripts.append(value)
                continue
            for j, ch in enumerate(text[1:], start=1):
                if ch in "nrEsuz":
                    continue
                if ch == "i":
                    break  # -i[SUFFIX]
                if ch == "f":
                    self.refuse("sed -f: a script from a file")
                    return
                if ch in "el":
                    value = text[j + 1:]
                    if not value:
                        if i >= len(args) or not args[i].literal:
                            self.refuse(f"sed -{ch}: its value is missing or not fixed")
                            return
                        value, i = args[i].text, i + 1
                    if ch == "e":
                        scripts.append(value)
                    break
                self.refuse(f"sed: unknown option -{ch}")
                return
        if not scripts:
            if not positional or not positional[0].literal:
                self.refuse("sed: the script is missing or not fixed")
                return
            scripts.append(positional[0].text)
        for script in scripts:
            why = sed_danger(script)
            if why is not None:
                self.refuse(f"sed: {why}")
                return

    def find(self, name: str, args: list[Word], depth: int, via: str) -> None:
        i = 0
        starts: list[Word] = []
        while i < len(args) and args[i].literal and args[i].text in ("-H", "-L", "-P") or \
                (i < len(args) and args[i].literal and args[i].text.startswith(("-D", "-O"))):
            i += 2 if args[i].text == "-D" else 1
        while i < len(args) and not (args[i].literal and (args[i].text.startswith("-") or args[i].text in "()!,")):
            starts.append(args[i])
            i += 1
        while i < len(args):
            w = args[i]
            if not w.literal:
                i += 1
                continue
            if w.text in ("-exec", "-execdir", "-ok", "-okdir"):
                j = i + 1
                while j < len(args) and not (args[j].literal and args[j].text in (";", "+")):
                    j += 1
                # "{}" is a found path: as the program word it runs whatever file matched (unknown)
                inner = [ANY_WORD if (x.literal and "{}" in x.text) else x
                         for k, x in enumerate(args[i + 1:j], start=i + 1)]
                if j >= len(args):
                    self.refuse(f"{name} {w.text} without ';' or '+'")
                if inner:
                    self.resolve(inner, depth + 1, chain(via, f"{name} {w.text}"))
                i = j + 1
                continue
            if w.text == "-delete":
                targets = starts or [literal_word(".")]
                self.out.commands.append(Command("rm", ("rm", "-r", "-f", *[t.text for t in targets]),
                                                 frozenset({"r", "f"}), tuple(t.text for t in targets), True,
                                                 chain(via, f"{name} -delete"), tuple(targets)))
            i += 1


#: interpreter options whose value is the next word (so it is not the script): python -W/-X, node -r/--import,
#: ruby -I/-r, perl -I/-M (man python, node --help, ruby --help, perlrun)
_VALUED: dict[str, tuple[str, ...]] = {
    "python": ("-W", "-X", "-Q", "--check-hash-based-pycs"), "pypy": ("-W", "-X", "-Q"),
    "node": ("-r", "--require", "--import", "--loader", "--experimental-loader", "-C", "--conditions",
             "--input-type", "--env-file"),
    "nodejs": ("-r", "--require", "--import", "--loader", "-C", "--conditions", "--input-type"),
    "ruby": ("-I", "-r", "-C", "-E", "-F", "--encoding"), "perl": ("-I", "-M", "-m", "-C", "-x"),
    "php": ("-d", "-c", "-z", "-t"), "lua": ("-l",), "deno": (), "bun": ("-r", "--preload"),
}
_SED_LONG = ("quiet", "silent", "debug", "expression", "file", "follow-symlinks", "in-place", "line-length", "posix",
             "regexp-extended", "separate", "sandbox", "unbuffered", "null-data", "help", "version", "zero-terminated")


def _delimited(text: str, i: int, delim: str) -> int:
    """The index just past the next unescaped ``delim`` from ``i`` (GNU sed's match_slash); -1 if none."""
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == delim:
            return i + 1
        if ch == "\n" and delim != "\n":
            return -1
        i += 1
    return -1


def _address(text: str, i: int) -> int:
    """Past one sed address at ``i`` (a number, ``first~step``, ``$``, ``/re/``, ``\\cREc``, ``+N``, ``~N``)."""
    n = len(text)
    if i < n and text[i] in "+~" :
        i += 1
    if i < n and text[i].isdigit():
        while i < n and (text[i].isdigit() or text[i] == "~"):
            i += 1
        return i
    if i < n and text[i] == "$":
        return i + 1
    if i < n and text[i] in "/\\":
        delim = "/" if text[i] == "/" else (text[i + 1] if i + 1 < n else "")
        if not delim or delim in "\n\\":
            return -1
        i = _delimited(text, i + (1 if text[i] == "/" else 2), delim)
        while 0 <= i < n and text[i] in "IM":
            i += 1
        return i
    return i


def sed_danger(script: str) -> str | None:
    """Why a GNU sed script can run a command or read/write a file, or None (read as GNU sed parses it).

    Commands ``e``, ``r``, ``R``, ``w``, ``W`` and the ``s`` flags ``e`` and ``w`` are refused; anything this
    reader does not understand (an unknown command, an unterminated ``s``/``y``) is refused too.
    """
    i, n = 0, len(script)
    while i < n:
        while i < n and script[i] in " \t\n;":
            i += 1
        if i >= n:
            break
        if script[i] == "#":
            while i < n and script[i] != "\n":
                i += 1
            continue
        i = _address(script, i)
        if 0 <= i < n and script[i] == ",":
            i = _address(script, i + 1)
        if i < 0:
            return "an unterminated address"
        while i < n and script[i] in " \t!":
            i += 1
        if i >= n:
            return "an address without a command"
        cmd, i = script[i], i + 1
        if cmd in "ewWrR":
            return f"the command {cmd!r} runs a command or reads/writes a file"
        if cmd in "{}=dDgGhHnNpPxzF":
            continue
        if cmd in "aic":  # text to the end of the line (backslash-newline continues it)
            while i < n and script[i] != "\n":
                i += 2 if script[i] == "\\" else 1
            continue
        if cmd in ":bTtv":  # GNU read_label: blanks skipped, the label ends at a blank, ";" or a newline, and
            while i < n and script[i] in " \t":  # the next command may follow (":a;e id", ":a e id" run id)
                i += 1
            while i < n and script[i] not in " \t\n;":
                i += 1
            continue
        if cmd in "qQlL":
            while i < n and (script[i].isdigit() or script[i] in " \t"):
                i += 1
            continue
        if cmd in "sy":
            delim = script[i] if i < n else ""
            if not delim or delim in "\n\\":
                return f"an {cmd!r} command without a usable delimiter"
            i = _delimited(script, i + 1, delim)
            i = _delimited(script, i, delim) if i >= 0 else -1
            if i < 0:
                return f"an unterminated {cmd!r} command"
            while cmd == "s" and i < n and script[i] not in ";\n}#":
                if script[i] in "ew":
                    return f"the s flag {script[i]!r} runs a command or writes a file"
                if script[i] not in "gpiImM0123456789 \t":
                    return f"an unknown s flag {script[i]!r}"
                i += 1
            continue
        return f"an unknown command {cmd!r}"
    return None
