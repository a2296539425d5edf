"""A light differential oracle for agentguard.policies.shell (session 11): stubs that log, real bash.

Each candidate command runs as ``bash --norc --noprofile -c CMD`` under ``env -i`` with ``PATH`` holding ONLY a
directory of stub programs (each a ``/bin/sh`` script that appends its name and arguments to a log and does
nothing else: ``rm``, ``curl``, ``chmod``, ``python``, ``agpwn``... are all stubs), ``HOME`` and the working
directory in a throwaway directory, stdin from ``/dev/null``, a short time limit, as ``nobody`` when the tests
run as root (writes outside the sandbox fail) and without a network where ``unshare`` allows it. What ran is
read from the stub log (bash's own builtins log nothing, so the comparison is over programs); which files
changed is read from a snapshot of the sandbox before and after.

Unlike ``shell_sandbox.py`` (strace, batches) this needs only bash: it is cheap enough for hypothesis to draw
a few hundred commands in seconds. Never run a candidate outside :meth:`StubBox.run`.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile

from shell_sandbox import unshare_prefix

BASH = "/usr/bin/bash" if os.path.exists("/usr/bin/bash") else shutil.which("bash")
SH = "/bin/sh" if os.path.exists("/bin/sh") else None
#: stubs: every program a candidate may name (allowed or not by the shipped rules); ``agpwn`` is allowed by none
STUBS = ("agpwn", "rm", "curl", "wget", "chmod", "python", "python3", "perl", "ruby", "node", "awk", "sed", "find",
         "xargs", "env", "timeout", "nice", "nohup", "stdbuf", "sudo", "busybox", "git", "tar", "ls", "cat", "cp",
         "mv", "echo", "printf", "grep", "id", "sh", "dash", "ssh", "rsync", "make", "tee", "touch", "mkdir", "ln",
         "head", "less", "sort", "true", "date", "setsid", "ionice", "taskset", "flock", "watch", "strace", "su")


def available() -> str | None:
    """Why the oracle cannot run here, or None."""
    if BASH is None:
        return "bash not installed"
    if SH is None:
        return "/bin/sh missing (the stubs are sh scripts)"
    return None


class StubBox:
    """A throwaway root: ``bin`` (stubs), ``work`` (the working directory), ``home``; see the module docstring."""

    def __init__(self, real: dict[str, str] | None = None) -> None:
        self.root = tempfile.mkdtemp(prefix="ag-stub-")
        self.log = os.path.join(self.root, "log")
        for d in ("bin", "work", "home"):
            os.makedirs(os.path.join(self.root, d))
        for name in STUBS:
            self._stub(name)
        for name, path in (real or {}).items():  # a real program where a test needs one (bash for bash -c)
            target = os.path.join(self.root, "bin", name)
            os.remove(target) if os.path.lexists(target) else None
            os.symlink(path, target)
        for dirpath, _, _ in os.walk(self.root):
            os.chmod(dirpath, 0o777)
        self.user = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"] \
            if os.geteuid() == 0 and shutil.which("setpriv") else []
        self.unshare = unshare_prefix()

    def _stub(self, name: str) -> None:
        path = os.path.join(self.root, "bin", name)
        with open(path, "w") as fh:  # fields separated by US (\037), records by RS (\036)
            fh.write(f"#!{SH}\n{{ printf '%s' {name}; for a in \"$@\"; do printf '\\037%s' \"$a\"; done; "
                     f"printf '\\036'; }} >> {self.log}\n")
        os.chmod(path, 0o755)

    def _snapshot(self) -> dict[str, tuple[int, int]]:
        out: dict[str, tuple[int, int]] = {}
        for base in ("work", "home"):
            top = os.path.join(self.root, base)
            for dirpath, dirs, files in os.walk(top):
                for f in files + dirs:
                    p = os.path.join(dirpath, f)
                    try:
                        st = os.lstat(p)
                    except OSError:
                        continue
                    out[os.path.relpath(p, self.root)] = (st.st_mtime_ns, st.st_size)
        return out

    def reset(self) -> None:
        for base in ("work", "home"):
            top = os.path.join(self.root, base)
            for name in os.listdir(top):
                p = os.path.join(top, name)
                shutil.rmtree(p) if os.path.isdir(p) and not os.path.islink(p) else os.remove(p)
        if os.path.exists(self.log):
            os.remove(self.log)

    def run(self, command: str, timeout: float = 5.0) -> tuple[list[tuple[str, ...]], list[str]]:
        """Run ``command`` in the sandbox: (programs that ran as (name, *argv), files created or changed)."""
        self.reset()
        before = self._snapshot()
        env = ["env", "-i", f"PATH={self.root}/bin", f"HOME={self.root}/home"]
        proc = subprocess.Popen([*self.unshare, *self.user, *env, BASH, "--norc", "--noprofile", "-c", command],
                                cwd=os.path.join(self.root, "work"), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
        finally:  # the whole session: a backgrounded child must not outlive its command
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
        ran: list[tuple[str, ...]] = []
        if os.path.exists(self.log):
            with open(self.log, "rb") as fh:
                data = fh.read().decode("utf-8", "surrogateescape")
            ran = [tuple(rec.split("\037")) for rec in data.split("\036") if rec]
        after = self._snapshot()
        changed = sorted(p for p, v in after.items() if before.get(p) != v)
        return ran, changed

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
