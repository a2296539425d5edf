"""Files a program writes under a name it derives from an operand: names the command never spells.

Session 17's red-team found them writing start-up files past the config-file check (``CONFIG_FILES``), which
read only the words of the command:

- what ``cp``/``mv``/``ln``/``install`` write into a target directory, TARGET/basename(SOURCE)
  (:func:`into_directory`, session 11);
- a **backup** of the destination of ``cp``/``mv``/``ln``/``install`` (GNU coreutils): with ``-b``/``--backup``
  or a suffix (``-S SUF``/``--suffix=SUF`` alone turns backups on, as ``cp -S rc new ~/.bash`` shows), the file
  that was at DEST is renamed to DEST+SUF (default ``~``): ``cp -b -S rc x ~/.bash`` writes ``~/.bashrc`` with the
  old ``~/.bash``, which an earlier allowed call wrote;
- a **compressor**'s output NAME+SUF (gzip, bzip2, xz, zstd, lz4, compress: :data:`COMPRESSORS`; gzip's default
  ``.gz``): ``gzip -S rc ~/.bash`` writes ``~/.bashrc``, and deflate stores incompressible input verbatim, so lines
  of it survive;
- a **decompressor**'s output (``gunzip``, ``bunzip2``, ``unxz``, ``gzip -d``...): NAME without its suffix, and NAME
  itself when NAME has none (gunzip then reads NAME.gz): ``gunzip ~/.bashrc.gz`` and ``gunzip ~/.bashrc`` both write
  ``~/.bashrc`` with any content;
- ``split``'s pieces, PREFIX + generated letters or digits + ``--additional-suffix``;
- the directory ``git clone URL`` (and ``git submodule add URL``) names after the URL, and the file ``curl -O URL``
  and ``wget URL`` name after it (``wget -P /usr/local/bin https://x/ls``); a name the server chooses (``curl -J``,
  ``wget -r``, ``--content-disposition``) is refused, as ``tar -x`` is.

:func:`derived_outputs` returns those names as words for the caller to check as writes (``add_paths(writes=True)``),
or a reason to refuse when a name it derives from is not fixed, or comes from a tree (``gunzip -r``, ``gzip -r -S``,
``cp -r -b``: the names are the tree's). The option grammar is GNU getopt's (short clusters, a value attached or in
the next word, long options by any prefix of at least three letters); reading an option's value as an operand only
adds names to check. Writing to standard output (``-c``), testing or listing (``-t``, ``-l``) derive nothing. The suffix of ``SIMPLE_BACKUP_SUFFIX`` is the environment's: assigning it is
refused with the other variables that change what a command does (:data:`~.programs.UNSAFE_ENV`).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

from .words import Word, literal_word

__all__ = ["BACKUPS", "COMPRESSORS", "GZIP_SUFFIXES", "derived_outputs", "into_directory"]

#: programs that back up a destination they replace, with their short options that take a value
BACKUPS: dict[str, str] = {"cp": "St", "mv": "St", "ln": "St", "install": "Stgmo"}
#: the suffixes gunzip strips when no ``-S`` is given (and ``.tgz``/``.taz``, which become ``.tar``)
GZIP_SUFFIXES = (".gz", "-gz", ".z", "-z", "_z", ".Z")
#: compressors that name their output after the input (gzip's rule): program -> (its suffix, the suffixes its
#: decompression strips, archive suffixes that become ``.tar``, the names that decompress, short options with a
#: value). bzip2/xz/zstd/lz4/compress (their manuals); zstd's and lz4's ``-o FILE`` name the file (an operand)
COMPRESSORS: dict[str, tuple[str, tuple[str, ...], tuple[str, ...], frozenset[str], str]] = {
    "gzip": (".gz", GZIP_SUFFIXES, (".tgz", ".taz"), frozenset({"gunzip", "zcat"}), "S"),
    "bzip2": (".bz2", (".bz2", ".bz"), (".tbz2", ".tbz"), frozenset({"bunzip2", "bzcat"}), ""),
    "xz": (".xz", (".xz", ".lzma"), (".txz", ".tlz"), frozenset({"unxz", "xzcat", "unlzma"}), "S"),
    "zstd": (".zst", (".zst", ".zstd"), (".tzst",), frozenset({"unzstd", "zstdcat"}), "o"),
    "lz4": (".lz4", (".lz4",), (), frozenset({"unlz4", "lz4cat"}), ""),
    "compress": (".Z", (".Z",), (".taZ",), frozenset({"uncompress"}), ""),
}
_PROGRAM = {n: base for base, spec in COMPRESSORS.items() for n in {base, *spec[3]}}


def _inside(target: str, sources: list[str]) -> list[str]:
    """TARGET/basename(SOURCE) for each source: where a copy, move or link into the directory TARGET lands."""
    return [target.rstrip("/") + "/" + (posixpath.basename(s.rstrip("/")) or s) for s in sources]


def into_directory(name: str, args: list[Word]) -> list[Word]:
    """The files ``cp``/``mv``/``ln``/``install`` write when the target is a directory: TARGET/basename(SOURCE).

    The target (last operand, or ``-t DIR``) may be a directory: ``cp authorized_keys d/.ssh`` wrote
    ``d/.ssh/authorized_keys`` while only ``d/.ssh`` was checked (session 11). Option values read as operands
    only add writes to check; ``-T`` (the target is a file) adds none. ``cp --parents`` also writes TARGET/SOURCE,
    the source's whole path.
    """
    if name not in ("cp", "mv", "ln", "install") or not all(w.literal for w in args):
        return []
    texts = [w.text for w in args]
    if "-T" in texts or "--no-target-directory" in texts:
        return []
    target = next((t[2:] or (texts[k + 1] if k + 1 < len(texts) else "") for k, t in enumerate(texts)
                   if t.startswith("-t")), None)
    target = target or next((t.split("=", 1)[1] for t in texts if t.startswith("--target-directory=")), None)
    operands = [t for k, t in enumerate(texts) if not t.startswith("-") and not (k and texts[k - 1] == "-t")]
    if target is None:
        if len(operands) < 2:
            return []
        target, operands = operands[-1], operands[:-1]
    # cp --parents keeps each source's whole path below TARGET: "cp --parents autostart/x.desktop ~/.config" wrote
    # ~/.config/autostart/x.desktop (GNU cp 9.1; session 18). "--pa" is the shortest prefix cp reads as --parents
    parents = name == "cp" and any(len(t) >= 4 and "--parents".startswith(t) for t in texts)
    kept = [target.rstrip("/") + "/" + s.lstrip("/") for s in operands] if parents else []
    return [literal_word(t) for t in _inside(target, operands) + kept]



@dataclass
class _Options:
    shorts: str = ""
    longs: list[tuple[str, str | None]] = field(default_factory=list)  # (name, value)
    values: dict[str, str] = field(default_factory=dict)  # short option -> its value (the last one)
    operands: list[str] = field(default_factory=list)

    def long(self, full: str) -> list[str | None]:
        """Values of every long option spelled as a prefix (3+ letters) of ``full``."""
        return [v for n, v in self.longs if len(n) >= 3 and full.startswith(n)]


def _parse(texts: list[str], with_value: str, long_values: tuple[str, ...]) -> _Options:
    o = _Options()
    i = 0
    while i < len(texts):
        t = texts[i]
        if t == "--":
            o.operands += texts[i + 1:]
            break
        if t.startswith("--"):
            name, eq, value = t[2:].partition("=")
            if not eq and len(name) >= 3 and any(f.startswith(name) for f in long_values) and i + 1 < len(texts):
                value, eq = texts[i + 1], "="
                i += 1
            o.longs.append((name, value if eq else None))
        elif t.startswith("-") and t != "-":
            for k, ch in enumerate(t[1:], 1):
                o.shorts += ch
                if ch in with_value:
                    rest = t[k + 1:]
                    if not rest and i + 1 < len(texts):
                        rest = texts[i + 1]
                        i += 1
                    o.values[ch] = rest
                    break
        else:
            o.operands.append(t)
        i += 1
    return o


def _backups(name: str, texts: list[str]) -> list[str] | str:
    o = _parse(texts, BACKUPS[name], ("suffix", "target-directory"))
    suffixes = [v for v in o.long("suffix") if v is not None] + ([o.values["S"]] if "S" in o.values else [])
    if not ("b" in o.shorts or o.long("backup") or suffixes):
        return []
    if set(o.shorts) & set("rRa") or o.long("recursive") or o.long("archive"):
        return f"{name} backs up files of a copied tree under names those files choose"
    target = o.values.get("t") or next((v for v in o.long("target-directory") if v), None)
    sources = o.operands if target is not None else o.operands[:-1]
    dests = [] if target is not None or not o.operands else [o.operands[-1]]
    if target is None and len(o.operands) >= 2:
        target = o.operands[-1]  # the destination may be a directory: each source lands inside it
    if target is not None:
        dests += _inside(target, sources)
    return [d + s for d in dests for s in (suffixes or ["~"])]


def _compressed(name: str, texts: list[str]) -> list[str] | str:
    base = _PROGRAM[name]
    own, strips, tars, decompressors, with_value = COMPRESSORS[base]
    o = _parse(texts, with_value, ("suffix",))
    if name.endswith("cat") or set(o.shorts) & set("ctl") or "o" in o.values or any(
            o.long(f) for f in ("stdout", "to-stdout", "test", "list")):
        return []  # standard output, testing, listing, or a named output file (an operand)
    suffixes = [v for v in o.long("suffix") if v is not None] + ([o.values["S"]] if "S" in o.values else [])
    decompress = name in decompressors or "d" in o.shorts or bool(o.long("decompress") or o.long("uncompress"))
    if ("r" in o.shorts or o.long("recursive")) and (decompress or suffixes):
        return f"{name} -r writes files under names the tree's files choose"
    out: list[str] = []
    for op in (x for x in o.operands if x != "-"):
        if not decompress:
            out += [op + s for s in (suffixes or [own])]
            continue
        out.append(op)  # no suffix: gunzip reads op.gz (and the others) and writes op
        for s in (*suffixes, *strips):
            if s and op.endswith(s) and len(op) > len(s):
                out.append(op[: -len(s)])
        for t in tars:
            if op.endswith(t):
                out.append(op[: -len(t)] + ".tar")
    return out


#: ``git clone`` options whose value is the next word (``-b main``), from ``git help clone``
_CLONE_VALUES = frozenset({"-b", "--branch", "-o", "--origin", "--depth", "--shallow-since", "--shallow-exclude",
                           "--reference", "--reference-if-able", "-j", "--jobs", "--filter", "--bundle-uri",
                           "--revision", "--server-option", "--separate-git-dir", "--template", "-c", "--config",
                           "-u", "--upload-pack"})


def _clone_dir(texts: list[str]) -> list[str] | str:
    """``git clone URL`` with no directory: the directory git names after the URL (``clone.c``'s
    ``git_url_basename``: the last component of the path, a trailing ``/`` and ``/.git``, then ``.git`` or
    ``.bundle`` dropped): ``cd ~/.config && git clone https://h/autostart`` writes ``~/.config/autostart``."""
    at = next((k for k, t in enumerate(texts) if not t.startswith("-")), None)
    if at is None or texts[at] not in ("clone", "submodule"):
        return []
    rest, operands, i = texts[at + 1:], [], 0
    if texts[at] == "submodule":
        if not rest or rest[0] != "add":
            return []
        rest = rest[1:]
    while i < len(rest):
        t = rest[i]
        if t == "--":
            operands += rest[i + 1:]
            break
        if t in _CLONE_VALUES:
            i += 2
            continue
        if not t.startswith("-"):
            operands.append(t)
        i += 1
    if len(operands) != 1:
        return []  # no URL, or the directory is named (an operand, checked as written)
    url = operands[0].rstrip("/")
    url = url[:-5] if url.endswith("/.git") else url
    base = url.rstrip("/").replace(":", "/").rsplit("/", 1)[-1]
    for suffix in (".git", ".bundle"):
        base = base[: -len(suffix)] if base.endswith(suffix) else base
    return [base] if base else f"git {texts[at]} names its directory after a URL with no name in it"


def _url_names(url: str) -> list[str]:
    """The file names a downloader takes from ``url``: its path's last component, as written and decoded."""
    from urllib.parse import unquote, urlsplit

    try:
        last = urlsplit(url).path.rsplit("/", 1)[-1]
    except ValueError:
        return [url]
    return list(dict.fromkeys([last, unquote(last)]))


def _urls(texts: list[str]) -> list[str]:
    return [t for t in texts if "://" in t and not t.startswith("-")]


def _flags(texts: list[str]) -> tuple[str, list[str]]:
    """(short option letters, long option names) of a downloader's words (no value grammar: reading a value as
    options only adds refusals)."""
    return ("".join(t[1:] for t in texts if t.startswith("-") and not t.startswith("--")),
            [t.split("=", 1)[0] for t in texts if t.startswith("--")])


def _values(texts: list[str], *spellings: str) -> list[str]:
    """The values of an option spelled ``--opt=V``, ``--opt V``, ``-oV`` or ``-o V`` (one of ``spellings``)."""
    out: list[str] = []
    for k, t in enumerate(texts):
        for sp in spellings:
            if t == sp and k + 1 < len(texts):
                out.append(texts[k + 1])
            elif sp.startswith("--") and t.startswith(sp + "="):
                out.append(t[len(sp) + 1:])
            elif not sp.startswith("--") and t.startswith(sp) and len(t) > len(sp):
                out.append(t[len(sp):])
    return out


def _downloads(texts: list[str], dirs: list[str], default: str = "") -> list[str]:
    """DIR/NAME for each URL of ``texts`` (NAME: its path's last component, ``default`` for none), below each of
    ``dirs`` (the working directory without one)."""
    names = [n or default for u in _urls(texts) for n in _url_names(u)]
    return [d.rstrip("/") + "/" + n for d in (dirs or ["."]) for n in names]


def _curl(texts: list[str]) -> list[str] | str:
    """``curl -O URL`` writes the URL's last path component (``--output-dir DIR``: below DIR); ``-J`` lets the
    server name it, ``-K`` reads options from a file: refused."""
    shorts, longs = _flags(texts)
    if "J" in shorts or "K" in shorts or any(n in ("--remote-header-name", "--config") for n in longs):
        return "curl writes under a name the server (or a config file) chooses"
    if not ("O" in shorts or any(n in ("--remote-name", "--remote-name-all") for n in longs)):
        return []
    return _downloads(texts, _values(texts, "--output-dir"))


def _wget(texts: list[str]) -> list[str] | str:
    """``wget URL`` writes the URL's last path component (``index.html`` for none; ``-P DIR``: below DIR) unless
    ``-O`` names the file; recursion, page requisites, server-given names or URLs read from a file: refused."""
    shorts, longs = _flags(texts)
    chosen = ("--recursive", "--mirror", "--page-requisites", "--content-disposition", "--trust-server-names",
              "--input-file", "--force-directories", "--base", "--execute", "--config")
    if set(shorts) & set("rmpixBe") or any(n in chosen for n in longs):  # -e/--execute, --config: wgetrc commands
        return "wget writes under names the server, an input file or a wgetrc command chooses"
    if "O" in shorts or "--output-document" in longs or "--spider" in longs:
        return []  # the file is named (an operand checked as written), standard output, or nothing
    return _downloads(texts, _values(texts, "-P", "--directory-prefix"), "index.html")


#: split's short options with a value (``-a N``, ``-b SIZE``, ``-C``, ``-l``, ``-n``, ``-t SEP``)
_SPLIT_VALUES = "abClnt"
_SUFFIX_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")


def _split(args: list[Word]) -> list[Word] | str:
    """``split [FILE [PREFIX]]`` writes PREFIX (default ``x``) followed by generated letters or digits and the
    ``--additional-suffix``: ``split -l 1 -a 1 f ~/.bashr`` writes ``~/.bashrc`` as its third piece. The pieces are
    one glob word, PREFIX + any run of ``[a-z0-9]`` + SUFFIX, checked as written."""
    if not all(w.literal for w in args):
        return "split writes under a name derived from a word that is not fixed"
    o = _parse([w.text for w in args], _SPLIT_VALUES, ("additional-suffix",))
    suffix = next((v for v in reversed(o.long("additional-suffix")) if v is not None), "")
    prefix = o.operands[1] if len(o.operands) > 1 else "x"
    tokens = (*literal_word(prefix).tokens, ("*", (False, _SUFFIX_CHARS)), *literal_word(suffix).tokens)
    return [Word(prefix + "*" + suffix, tokens, literal=False)]


def derived_outputs(name: str, args: list[Word]) -> list[Word] | str:
    """The files ``name`` writes under names derived from its operands (see the module doc), as words; a
    reason to refuse when a word they derive from is not fixed."""
    if name == "split":
        return _split(args)
    if name in ("git", "curl", "wget"):
        if not all(w.literal for w in args):
            return [] if name == "git" else f"{name} writes under a name derived from a word that is not fixed"
        got = {"git": _clone_dir, "curl": _curl, "wget": _wget}[name]([w.text for w in args])
        return got if isinstance(got, str) else [literal_word(t) for t in got]
    if name not in BACKUPS and name not in _PROGRAM:
        return []
    if not all(w.literal for w in args):  # an unknown word may be an option too ("-Src", quoted or not)
        texts = [w.text for w in args if w.literal]
        if name in _PROGRAM and _compressed(name, texts + ["x"]) == []:
            return []  # writes to standard output (or tests, lists) whatever the unknown words are
        return f"{name} writes a file under a name derived from a word that is not fixed"
    texts = [w.text for w in args]
    got = _backups(name, texts) if name in BACKUPS else _compressed(name, texts)
    return got if isinstance(got, str) else [literal_word(t) for t in got]
