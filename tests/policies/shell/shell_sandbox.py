"""Differential harness for agentguard.policies.shell (issue 25): run real bash, compare with the analysis.

Each batch of commands runs in a throwaway root: ``T/bin`` on ``PATH`` holds stubs (``/usr/bin/true``
under the program's name: nothing real runs) plus the few real wrappers whose resolution is under test
(``env``, ``timeout``, ``nice``, ``nohup``, ``stdbuf``, ``setsid``, ``xargs``, ``bash``, ``sh``), each
command runs as ``bash --norc --noprofile -c CMD`` from a driver started with ``env -i PATH=T/bin HOME=T/home`` with stdin from
``/dev/null``, the whole batch under ``strace -f`` (the ground truth: every ``execve`` with its argv, every
file bash itself opens, i.e. redirections, every ``chdir``; with ``--seccomp-bpf`` where strace has it, so
only those calls stop the tracee), with a hard time limit, as ``nobody`` when
run as root (writes outside ``T`` fail), and in a new network namespace when ``unshare`` allows it.

A discrepancy is a program that ran, an argv word it got, a path a stub was handed (stubs stand for
programs that open their operands) or a file bash opened that the analysis did not see, on a command
the analysis did not refuse as unresolvable. Words are compared with :func:`intersects` (a glob or an
unknown part the guard saw covers what it expands to).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

from agentguard.policies.shell import analyse, intersects, literal_tokens, program_name

REAL = {"env": "/usr/bin/env", "timeout": "/usr/bin/timeout", "nice": "/usr/bin/nice", "nohup": "/usr/bin/nohup",
        "stdbuf": "/usr/bin/stdbuf", "setsid": "/usr/bin/setsid", "xargs": "/usr/bin/xargs",
        "bash": "/usr/bin/bash", "sh": "/usr/bin/dash"}
STUBS = ["rm", "ls", "cat", "cp", "mv", "grep", "sort", "uniq", "find", "awk", "sudo", "doas", "chroot",
         "strace", "busybox", "curl", "git", "head", "tail", "wc", "touch", "mkdir", "tee", "python", "chmod",
         "dd", "mkfs.ext4", "shred", "id", "date", "whoami"]
_STARTUP = ("/etc/ld.so", "/lib", "/usr/lib", "/dev/tty", "/proc/", "/sys/", "/etc/nsswitch.conf",
            "/etc/passwd", "/etc/group", "/etc/host.conf", "/usr/share/locale", "/etc/localtime", "/dev/null")
_LINE = re.compile(r"^(\d+)\s+(\w+)\((.*)\)\s+=\s+(-?\d+|\?)")
_STR = re.compile(r'"((?:\\x[0-9a-f]{2})*)"')


def available() -> str | None:
    """Why the harness cannot run here, or None."""
    for tool in ("strace", "bash"):
        if shutil.which(tool) is None:
            return f"{tool} not installed"
    for p in REAL.values():
        if not os.path.exists(p):
            return f"{p} missing"
    return None


def _hex(s: str) -> str:
    return bytes.fromhex(s.replace("\\x", "")).decode("utf-8", "surrogateescape")


@dataclass
class Discrepancy:
    command: str
    what: str


def unshare_prefix() -> list[str]:
    """``unshare -n`` (``-r -n`` when not root) where this machine allows a new network namespace, else []."""
    if shutil.which("unshare") is None:
        return []
    flag = ["-n"] if os.geteuid() == 0 else ["-r", "-n"]
    try:
        ok = subprocess.run(["unshare", *flag, "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    return ["unshare", *flag] if ok else []


class Sandbox:
    def __init__(self) -> None:
        self.root = tempfile.mkdtemp(prefix="ag-shell-")
        os.chmod(self.root, 0o777)
        for d in ("bin", "work", "home", "home/.ssh"):
            os.makedirs(os.path.join(self.root, d), exist_ok=True)
            os.chmod(os.path.join(self.root, d), 0o777)
        for f in ("work/a.txt", "work/shadow", "work/-rf", "home/.ssh/id_rsa", "work/notes.md", "work/.env", "home/.netrc"):
            with open(os.path.join(self.root, f), "w") as fh:
                fh.write("x\n")
            os.chmod(os.path.join(self.root, f), 0o666)
        for name, real in REAL.items():
            os.symlink(real, os.path.join(self.root, "bin", name))
        for name in STUBS:
            os.symlink("/usr/bin/true", os.path.join(self.root, "bin", name))
        self.unshare = unshare_prefix()
        self.seccomp = self._probe_seccomp()

    @staticmethod
    def _probe_seccomp() -> list[str]:
        """``--seccomp-bpf`` (strace >= 5.3): stop only on the traced calls, several times faster."""
        try:
            ok = subprocess.run(["strace", "-f", "--seccomp-bpf", "-qq", "-e", "trace=execve", "-o", "/dev/null",
                                 "/usr/bin/true"], capture_output=True, timeout=10).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            ok = False
        return ["--seccomp-bpf"] if ok else []

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def run(self, commands: list[str], timeout: float = 600.0) -> list[list[tuple[str, ...]]]:
        """Per command, the events: ("exec", prog, *argv, cwd) and ("open", path)."""
        t = self.root
        with open(os.path.join(t, "cmds"), "wb") as fh:
            for c in commands:
                fh.write(c.encode("utf-8", "surrogateescape") + b"\0")
        os.chmod(os.path.join(t, "cmds"), 0o666)
        # the driver runs with only PATH and HOME set (env -i), so each command's bash inherits just those;
        # each command is killed after 10 s (a hung command must not take its batch down)
        driver = (f'cd {t}/work; i=0; while IFS= read -r -d "" c; do : > {t}/mark.$i; '
                  f'/usr/bin/timeout -s KILL 10 /usr/bin/bash --norc --noprofile -c "$c" '
                  f'</dev/null >/dev/null 2>&1; cd {t}/work; i=$((i+1)); done < {t}/cmds')
        log = os.path.join(t, "trace")
        user = ["-u", "nobody"] if os.geteuid() == 0 else []
        cmd = [*self.unshare, "strace", "-f", *self.seccomp, "-qq", "-xx", "-v", "-s", "65535", *user, "-o", log,
               "-e", "trace=execve,openat,open,creat,chdir,clone,clone3,fork,vfork",
               "/usr/bin/env", "-i", f"PATH={t}/bin", f"HOME={t}/home",
               "/usr/bin/bash", "--norc", "--noprofile", "-c", driver]
        subprocess.run(cmd, env={"PATH": "/usr/bin:/bin"}, capture_output=True, timeout=timeout, check=False)
        return self._parse(log, len(commands))

    def _parse(self, log: str, n: int) -> list[list[tuple[str, ...]]]:
        t = self.root
        events: list[list[tuple[str, ...]]] = [[] for _ in range(n)]
        cur = -1
        driver = None
        kind: dict[int, str] = {}   # pid -> "driver" | "harness" | "shell" | "stub" | "real"
        cwd: dict[int, str] = {}
        idx: dict[int, int] = {}    # pid -> the command it belongs to (by lineage: a backgrounded
                                    # process that outlives its command is still attributed to it)
        with open(log, encoding="utf-8", errors="surrogateescape") as fh:
            raw_lines = fh.readlines()
        lines: list[str] = []
        pending: dict[str, tuple[int, str]] = {}
        for line in raw_lines:  # join "<unfinished ...>" calls with their "<... resumed>" ends, in call order
            m = re.match(r"^(\d+)\s+(.*) <unfinished \.\.\.>$", line.rstrip("\n"))
            if m:
                pending[m.group(1)] = (len(lines), m.group(2))
                lines.append("")
                continue
            m = re.match(r"^(\d+)\s+<\.\.\. \w+ resumed>(.*)$", line.rstrip("\n"))
            if m:
                if m.group(1) in pending:
                    at, head = pending.pop(m.group(1))
                    lines[at] = f"{m.group(1)} {head}{m.group(2)}"
                continue
            lines.append(line)
        parent: dict[int, int] = {}  # strace -f may log a child's first call before the parent's clone returns
        for line in lines:
            m = _LINE.match(line)
            if m and m.group(2) in ("clone", "clone3", "fork", "vfork") and m.group(4).isdigit():
                parent.setdefault(int(m.group(4)), int(m.group(1)))
        if True:
            for line in lines:
                m = _LINE.match(line)
                if not m:
                    continue
                pid, call, args, ret = int(m.group(1)), m.group(2), m.group(3), m.group(4)
                if pid not in kind and pid in parent:
                    p = parent[pid]
                    idx[pid] = cur if kind.get(p) == "driver" else idx.get(p, cur)
                    kind[pid] = "harness" if kind.get(p) == "driver" else kind.get(p, "harness")
                    cwd[pid] = cwd.get(p, t + "/work")
                if driver is None and call == "execve":
                    driver = pid
                    kind[pid] = "driver"
                    cwd[pid] = t + "/work"
                    continue
                if call in ("clone", "clone3", "fork", "vfork"):
                    if ret.isdigit() and int(ret) > 0 and int(ret) not in kind:
                        child = int(ret)
                        idx[child] = cur if kind.get(pid) == "driver" else idx.get(pid, cur)
                        kind[child] = "harness" if kind.get(pid) == "driver" else kind.get(pid, "harness")
                        cwd[child] = cwd.get(pid, t + "/work")
                    continue
                strs = [_hex(s) for s in _STR.findall(args)]
                if call == "chdir":
                    if ret == "0" and strs:
                        cwd[pid] = os.path.normpath(os.path.join(cwd.get(pid, "/"), strs[0]))
                    continue
                if call == "execve":
                    if ret != "0" or not strs:
                        continue
                    arr = re.search(r"\[([^\]]*)\]", args)
                    path, argv = strs[0], [_hex(x) for x in _STR.findall(arr.group(1))] if arr else []
                    if kind.get(pid) == "driver":  # env -i exec'ing the driver's bash
                        continue
                    if kind.get(pid) == "harness":
                        if path == "/usr/bin/bash" and argv[1:3] == ["--norc", "--noprofile"]:
                            kind[pid] = "shell"
                        continue
                    base = os.path.basename(path)
                    target = os.path.realpath(path)
                    kind[pid] = "shell" if target in ("/usr/bin/bash", "/usr/bin/dash") else (
                        "stub" if target == "/usr/bin/true" else "real")
                    at = idx.get(pid, cur)
                    if 0 <= at < n:
                        events[at].append(("exec", base, *argv[1:], cwd.get(pid, "/")))
                    continue
                if call in ("openat", "open", "creat") and strs:
                    path = strs[0]
                    if kind.get(pid) == "driver":
                        mm = re.fullmatch(re.escape(t) + r"/mark\.(\d+)", path)
                        if mm:
                            cur = int(mm.group(1))
                        continue
                    at = idx.get(pid, cur)
                    if kind.get(pid) != "shell" or not (0 <= at < n):
                        continue
                    full = os.path.normpath(os.path.join(cwd.get(pid, "/"), path))
                    if full.startswith(_STARTUP) and not full.startswith("/proc/self/root"):
                        continue
                    events[at].append(("opendir" if "O_DIRECTORY" in args else "open", full))
        return events

    def guard_paths(self, full: str) -> list[str]:
        """The spellings the guard may see a path under: relative to the workspace (the guard does not know
        where that is, so a path outside it reached by climbing is also relative), ``~`` for the home."""
        t = self.root
        rel = os.path.relpath(full, t + "/work")
        if full == t + "/home" or full.startswith(t + "/home/"):
            return ["~" + full[len(t) + 5:], rel]
        if full == t or full.startswith(t + "/"):
            return [rel]
        return [full, rel]


def compare(box: Sandbox, commands: list[str]) -> tuple[list[Discrepancy], int, int]:
    """Run ``commands`` and list what the analysis missed; also (#resolved, #refused as unresolvable)."""
    out: list[Discrepancy] = []
    refused = 0
    for cmd, events in zip(commands, box.run(commands)):
        a = analyse(cmd)
        if a.unresolvable:
            refused += 1
            continue
        by_prog: dict[str, list] = {}
        for c in a.commands:
            by_prog.setdefault(c.program, []).extend(w.tokens for w in c.words)
        paths = a.paths
        for ev in events:
            if ev[0] == "exec":
                prog, argv, cwd = program_name(ev[1]), ev[2:-1], ev[-1]
                if prog not in by_prog:
                    out.append(Discrepancy(cmd, f"program {prog!r} ran, the guard saw {sorted(by_prog)}"))
                    continue
                for word in argv:
                    home = box.root + "/home"
                    shown = "~" + word[len(home):] if word == home or word.startswith(home + "/") else word
                    lt = literal_tokens(shown)
                    if not any(intersects(lt, w) for w in by_prog[prog]):
                        out.append(Discrepancy(cmd, f"{prog} got {word!r}, not a word the guard saw"))
                    if os.path.realpath(os.path.join(box.root, "bin", ev[1])) == "/usr/bin/true" and word:
                        rel = os.path.normpath(os.path.join(os.path.relpath(cwd, box.root + "/work"), word))
                        _check_path(box, cmd, box.guard_paths(os.path.normpath(os.path.join(cwd, word))) + [rel],
                                    paths, out)
            elif ev[0] == "opendir":  # bash listing a directory to expand a glob the guard saw
                _check_path(box, cmd, box.guard_paths(ev[1]), paths, out, directory=True)
            else:
                _check_path(box, cmd, box.guard_paths(ev[1]), paths, out)
    return out, len(commands) - refused, refused


def _check_path(box: Sandbox, cmd: str, spellings: list[str], paths, out: list[Discrepancy],
                directory: bool = False) -> None:
    for path in spellings:
        lt = literal_tokens(path)
        if directory:
            lt = literal_tokens("" if path == "." else path.rstrip("/") + "/") + [("*", (True, frozenset()))]
        for text, tokens in paths:
            if text == path or intersects(lt, tokens if tokens is not None else literal_tokens(text)):
                return
    out.append(Discrepancy(cmd, f"path {spellings[0]!r} touched, the guard saw {[p for p, _ in paths][:8]}"))
