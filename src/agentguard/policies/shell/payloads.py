"""Programs that run code given as arguments (issue 25): interpreters, ``awk``, ``sed``, ``find``.

Inline code of a non-shell interpreter (``python -c``, ``perl -e``, ``php -r``) or code read from standard
input is unresolvable; ``python -m NAME`` runs a named module and ``--version``/``-V`` run no code (the
allow list decides). An ``awk`` program that can run commands or write files, a ``sed`` script with
``e``/``w``/``r``, are unresolvable. ``find -exec/-execdir/-ok/-okdir`` run a command (resolved in turn)
and ``-delete`` is read as ``rm -r -f`` of the start points.
"""

from __future__ import annotations

import re

from .model import ANY_WORD, Command, WalkerBase, chain
from .programs import INFO_OPTIONS
from .words import Word, literal_word

__all__ = ["PayloadReader"]


class PayloadReader(WalkerBase):
    """The payload readers (see the module docstring)."""

    def interpreter(self, name: str, code_opts: str, args: list[Word]) -> None:
        for w in args:
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
        scripts = []
        i = 0
        given = False
        while i < len(args):
            text = args[i].text
            if text in ("-e", "--expression") and i + 1 < len(args):
                scripts.append(args[i + 1])
                given = True
                i += 2
                continue
            if text in ("-f", "--file") or text.startswith("--file="):
                self.refuse("sed -f: a script from a file")
                return
            if text.startswith("-") and len(text) > 1:
                i += 1
                continue
            if not given:
                scripts.append(args[i])
            break
        for s in scripts:
            if not s.literal or re.search(r"(^|[;\n}{]|\d|\$|/)\s*[ewWrR]\b|/[gpiImM0-9]*[ew]", s.text):
                self.refuse("sed: the script can run commands or read/write files (e, w, r)")
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
                inner = [ANY_WORD if (x.literal and "{}" in x.text and k > i + 1) else x
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
