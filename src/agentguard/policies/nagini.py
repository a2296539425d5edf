"""Formal verification of policies with the real Nagini verifier, out of process and warm.

Nagini 1.2.0 pins pytest 7.0, mypy 0.900 and z3 4.8.7, so it lives in its own virtual environment
(``.nagini-venv`` at the repository root, made by ``agentguard setup nagini`` (:mod:`.nagini_setup`); or the folder named by
``AGENTGUARD_NAGINI_VENV``). :class:`NaginiVerifier` starts ONE worker process there
(:mod:`agentguard.policies._nagini_worker`: Nagini's own ``--server`` loop over a pipe) and sends it one
file per request, so a batch pays the JVM start-up and the Viper prelude once; each result carries the
seconds Nagini spent on that file.

Nagini's report is parsed into :class:`VerificationResult`: ``status`` is ``verified``, ``failed`` (with one
:class:`VerificationError` per failed assertion, each with the ``--counterexample`` model as a dict:
the inputs from Nagini's "Old store" and the returned value), ``invalid`` (Nagini refused to translate
the file: type error or unsupported construct; or the sandbox refused it, so the guard would never run it),
``vacuous`` (the contract constrains nothing: refused before Nagini, which proves such a contract of any
policy), ``timeout`` (no answer within ``request_timeout_s``) or ``crashed``. Only ``verified`` is a proof, and
every caller gets the same checks: :meth:`NaginiVerifier.verify_source` is the one path (see its docstring).
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable

from ..core.errors import DependencyError, InputError, PolicyError

__all__ = [
    "NaginiVerifier", "VerificationError", "VerificationResult", "find_nagini_venv", "parse_nagini_output", "verify",
]

WORKER = Path(__file__).with_name("_nagini_worker.py")


@dataclass(frozen=True)
class VerificationError:
    """One assertion Nagini could not prove, with its counterexample (when Silicon produced one)."""

    message: str
    line: int | None = None
    inputs: dict[str, Any] = field(default_factory=dict)
    result: Any = None
    raw: str = ""

    @property
    def has_counterexample(self) -> bool:
        return bool(self.inputs)

    def describe(self) -> str:
        s = self.message
        if self.inputs:
            args = ", ".join(f"{k}={v!r}" for k, v in self.inputs.items())
            s += f"\n  counterexample: {args}"
            if self.result is not None:
                s += f" -> returns {self.result!r}"
        return s

    def to_dict(self) -> dict[str, Any]:
        return {"message": self.message, "line": self.line, "inputs": dict(self.inputs), "result": self.result}


@dataclass(frozen=True)
class VerificationResult:
    """Nagini's verdict on one file."""

    path: str
    status: str  # verified | failed | invalid | crashed | vacuous | timeout
    errors: tuple[VerificationError, ...] = ()
    seconds: float = 0.0
    output: str = ""
    #: SHA-256 of the source text verified (``Policy.digest`` of the same text; pin it as ``verified_digest``)
    digest: str = ""

    @property
    def verified(self) -> bool:
        return self.status == "verified"

    @property
    def counterexample(self) -> VerificationError | None:
        """The first error that carries a counterexample (None if none does)."""
        return next((e for e in self.errors if e.has_counterexample), None)

    def describe(self) -> str:
        if self.verified:
            pin = f" (pin verified_digest = \"{self.digest}\")" if self.digest else ""
            return f"{self.path}: verified by Nagini in {self.seconds:.2f}s{pin}"
        head = f"{self.path}: {self.status}"
        body = "\n".join(e.describe() for e in self.errors) or self.output.strip()
        return head + "\n" + body

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "status": self.status, "seconds": round(self.seconds, 3), "digest": self.digest,
                "errors": [e.to_dict() for e in self.errors]}


_LOC = re.compile(r"\((?P<file>[^()@]+)@(?P<line>\d+)\.\d+(?:--\d+\.\d+)?\)\.?\s*$")
_BINDING = re.compile(r"^\s+(?P<name>[^\s].*?) -> (?P<value>.*?),?\s*$")


def _value(text: str) -> Any:
    t = text.strip().rstrip(",")
    if t in ("True", "False"):
        return t == "True"
    if re.fullmatch(r"-?\d+", t):
        return int(t)
    if re.fullmatch(r"\(-\s*\d+\)", t):
        return -int(t.strip("()- "))
    return t


_STATUS_LINES = frozenset({"Verification successful", "Verification failed", "Translation failed"})


def parse_nagini_output(text: str, path: str = "", seconds: float = 0.0) -> VerificationResult:
    """Turn Nagini's textual report (with or without ``--counterexample``) into a VerificationResult."""
    lines = text.strip().splitlines()
    took = re.search(r"Verification took ([\d.]+) seconds", text)
    if took and not seconds:
        seconds = float(took.group(1))
    marks = {m for m in (line.strip() for line in lines) if m in _STATUS_LINES or m.startswith("Verification crashed")}
    if marks == {"Verification successful"}:
        return VerificationResult(path, "verified", (), seconds, text)
    if "Verification successful" in marks:  # success next to a failure or crash: not a proof (fail closed)
        return VerificationResult(path, "crashed", (VerificationError(
            "conflicting Nagini report: " + ", ".join(sorted(marks))),), seconds, text)
    if any(line.strip() == "Translation failed" for line in lines):
        msgs = [line.strip() for line in lines if line.strip() and line.strip() != "Translation failed"
                and not line.startswith("Verification took")]
        errs = []
        for m in msgs:
            loc = _LOC.search(m)
            errs.append(VerificationError(m, int(loc.group("line")) if loc else None, raw=m))
        return VerificationResult(path, "invalid", tuple(errs), seconds, text)
    if not any(line.strip() == "Verification failed" for line in lines):
        return VerificationResult(path, "crashed", (VerificationError(text.strip()[-500:] or "no output"),),
                                  seconds, text)
    errors: list[VerificationError] = []
    cur: dict[str, Any] | None = None
    section = None

    def flush() -> None:
        if cur is not None:
            errors.append(VerificationError(cur["message"], cur["line"], cur["inputs"], cur["result"],
                                            "\n".join(cur["raw"])))

    started = False
    for line in lines:
        s = line.strip()
        if s == "Errors:":
            started = True
            continue
        if not started or not s or s.startswith("Verification took"):
            continue
        if s.startswith("Old store:"):
            section = "old"
        elif s.startswith("Current store:"):
            section = "current"
        elif s.startswith("Old heap:") or s.startswith("Current heap:"):
            section = None
        elif line.startswith((" ", "\t")) and cur is not None:
            m = _BINDING.match(line)
            if m and section == "old":
                cur["inputs"][m.group("name")] = _value(m.group("value"))
            elif m and section == "current" and m.group("name") == "Result()":
                cur["result"] = _value(m.group("value"))
        else:
            flush()
            loc = _LOC.search(s)
            cur = {"message": s, "line": int(loc.group("line")) if loc else None, "inputs": {}, "result": None,
                   "raw": []}
            section = None
        if cur is not None:
            cur["raw"].append(line)
    flush()
    if not errors:
        errors.append(VerificationError("verification failed (no error text)"))
    return VerificationResult(path, "failed", tuple(errors), seconds, text)


def _candidates() -> Iterable[Path]:
    env = os.environ.get("AGENTGUARD_NAGINI_VENV")
    if env:
        yield Path(env)
        return
    seen = set()
    for start in (Path.cwd(), Path(__file__).resolve().parent):
        for d in (start, *start.parents):
            if d in seen:
                continue
            seen.add(d)
            yield d / ".nagini-venv"


def find_nagini_venv() -> Path | None:
    """The Nagini virtual environment: $AGENTGUARD_NAGINI_VENV, else the nearest ``.nagini-venv`` upwards
    from the working directory or from this package (the repository root in a source checkout)."""
    for c in _candidates():
        if (c / "bin" / "python").exists():
            return c
    return None


class _Timeout(PolicyError):
    """Nagini did not answer one request in time."""


def _kill_group(p: subprocess.Popen) -> None:
    """Kill the worker's process group (it runs in its own session: the JVM and the z3 it starts) and reap it."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except OSError:
        p.kill()
    p.wait()


def _policy_problem(source: str, name: str, entry: str) -> tuple[str, str] | None:
    """(status, message) when ``source`` is not a policy the guard would run (``invalid``) or its contract
    constrains nothing (``vacuous``); None when it may go to Nagini."""
    from .model import policy_from_source
    from .testing import vacuity_problem

    try:
        pol = policy_from_source(source, path=name, entry=entry)
    except PolicyError as exc:
        return "invalid", f"not a policy the guard runs: {exc}"
    except Exception as exc:  # noqa: BLE001 - fail closed on anything the loader did not foresee
        return "invalid", f"not a policy the guard runs: {type(exc).__name__}: {exc}"
    try:
        problem = vacuity_problem(pol)
    except Exception as exc:  # noqa: BLE001
        problem = f"the contract could not be checked for vacuity: {type(exc).__name__}: {exc}"
    return ("vacuous", problem) if problem else None


class NaginiVerifier:
    """A warm Nagini worker: one JVM, many files. Use as a context manager or call :meth:`close`.

    ``verify(path)`` -> :class:`VerificationResult`; ``verify_source(text, name)`` writes the text to a
    temporary file first. ``startup_seconds`` records the cold start (JVM + Viper prelude), paid once.
    """

    def __init__(self, venv: str | Path | None = None, *, counterexample: bool = True,
                 startup_timeout_s: float = 900.0, request_timeout_s: float = 600.0) -> None:
        v = Path(venv) if venv else find_nagini_venv()
        if v is None or not (v / "bin" / "python").exists():
            raise DependencyError("Nagini is not installed: run `agentguard setup nagini` (creates .nagini-venv) "
                                  "or set AGENTGUARD_NAGINI_VENV")
        self.venv = v
        self.counterexample = counterexample
        self.startup_timeout_s = startup_timeout_s
        self.request_timeout_s = request_timeout_s
        self.startup_seconds: float | None = None
        self._proc: subprocess.Popen | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._tmp = tempfile.TemporaryDirectory(prefix="agentguard-nagini-")
        self._n = 0
        self._stderr_tail: list[str] = []

    # -- process management
    def start(self) -> "NaginiVerifier":
        if self._proc is not None and self._proc.poll() is None:
            return self
        cache = Path(self._tmp.name) / "cache"
        cache.mkdir(exist_ok=True)
        args = [str(self.venv / "bin" / "python"), str(WORKER)]
        if self.counterexample:
            args.append("--counterexample")
        t0 = time.perf_counter()
        self._proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True, cwd=str(cache), bufsize=1, start_new_session=True)
        self._lines = queue.Queue()
        threading.Thread(target=self._pump, args=(self._proc.stdout, self._lines), daemon=True).start()
        threading.Thread(target=self._drain, args=(self._proc.stderr,), daemon=True).start()
        msg = self._read(self.startup_timeout_s, "start")
        if not msg.get("ready"):
            raise PolicyError(f"Nagini worker did not start: {msg}")
        self.startup_seconds = time.perf_counter() - t0
        return self

    @staticmethod
    def _pump(stream, q: "queue.Queue[str | None]") -> None:
        for line in stream:
            q.put(line)
        q.put(None)

    def _drain(self, stream) -> None:
        for line in stream:
            self._stderr_tail = (self._stderr_tail + [line.rstrip()])[-30:]

    def _read(self, timeout: float, what: str) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            self._kill()
            raise _Timeout(f"Nagini gave no answer to {what} within {timeout:.0f}s: not verified") from None
        if line is None:
            tail = " | ".join(self._stderr_tail[-5:])
            self._proc = None
            raise PolicyError(f"Nagini worker exited during {what}: {tail}")
        return json.loads(line)

    def close(self) -> None:
        p, self._proc = self._proc, None
        if p is not None and p.poll() is None:
            try:
                p.stdin.close()  # type: ignore[union-attr]
                p.wait(timeout=5)
            except Exception:  # noqa: BLE001
                _kill_group(p)

    def _kill(self) -> None:
        """Stop the worker now, with every process it started (the solver Silicon runs keeps going otherwise)."""
        p, self._proc = self._proc, None
        if p is not None and p.poll() is None:
            _kill_group(p)

    def __enter__(self) -> "NaginiVerifier":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()
        self._tmp.cleanup()

    # -- verification
    def verify(self, path: str | Path, *, entry: str = "check") -> VerificationResult:
        """Verify one policy file: its text is read once and a private copy of it is verified, so the result's
        ``digest`` names exactly the source proved (pin it as ``verified_digest``: a file changed during or after
        verification then refuses to load, PolicyError). Restarts the worker once if it died."""
        p = Path(path).resolve()
        if not p.exists():
            raise InputError(f"no such policy file: {p}")
        try:
            source = p.read_text(encoding="utf-8")  # as load_policy reads it: Policy.digest is of this text
        except (OSError, UnicodeError) as exc:
            raise InputError(f"cannot read policy file {p}: {exc}") from None
        r = self.verify_source(source, p.stem, entry=entry)
        return replace(r, path=str(path))

    def _verify_file(self, p: Path) -> VerificationResult:
        """Ask the worker to verify the file ``p`` (a private copy :meth:`verify_source` wrote)."""
        for attempt in (1, 2):
            self.start()
            assert self._proc is not None and self._proc.stdin is not None
            t0 = time.perf_counter()
            try:
                self._proc.stdin.write(json.dumps({"path": str(p)}) + "\n")
                self._proc.stdin.flush()
                msg = self._read(self.request_timeout_s, f"verifying {p.name}")
            except _Timeout as exc:  # not retried: the same file would take as long again
                return VerificationResult(str(p), "timeout", (VerificationError(str(exc)),),
                                          time.perf_counter() - t0, str(exc))
            except (BrokenPipeError, PolicyError):
                if attempt == 2:
                    raise
                self.close()
                continue
            secs = float(msg.get("seconds", time.perf_counter() - t0))
            return parse_nagini_output(msg.get("output", ""), str(p), secs)
        raise PolicyError("unreachable")  # pragma: no cover

    def verify_source(self, source: str, name: str = "policy", *, entry: str = "check") -> VerificationResult:
        """Verify policy text as the guard will run it: the one verification path (``verify``, ``verify_many``,
        the CLI and synthesis all come here).

        1. the text is loaded as a policy (:func:`~.model.policy_from_source`: the sandbox's language, the
           checks where Nagini and CPython disagree): a text the guard would refuse to run is ``invalid``, whatever
           Nagini says of it;
        2. the contract of ``entry`` must constrain it (:func:`~.testing.vacuity_problem`): a ``Requires`` no
           accepted argument satisfies, or ``Ensures`` that hold for the allow verdict wherever the ``Requires``
           hold, is proved of a policy that allows everything, so the result is ``vacuous`` (not verified) and
           Nagini is not asked;
        3. Nagini proves the text (a fresh temporary file with a unique module name); a proof that does not come
           back within ``request_timeout_s`` is ``timeout`` (not verified; the worker is killed and restarted).
        """
        digest = hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()
        problem = _policy_problem(source, name, entry)
        if problem is not None:
            status, message = problem
            return VerificationResult(name, status, (VerificationError(message),), 0.0, message, digest)
        r = self._prove(source, name)
        return VerificationResult(name, r.status, r.errors, r.seconds, r.output, digest)

    def _prove(self, source: str, name: str) -> VerificationResult:
        """Nagini's verdict on ``source`` alone, with NONE of the checks of :meth:`verify_source` (a text the
        sandbox refuses, or a vacuous contract, may come back ``verified``). Only for studying Nagini itself
        (the differential tests that compare its reading with CPython's); never evidence that a policy is safe."""
        self._n += 1
        safe = re.sub(r"[^A-Za-z0-9_]", "_", name) or "policy"
        f = Path(self._tmp.name) / f"{safe}_{self._n}.py"
        f.write_text(source, encoding="utf-8")
        return self._verify_file(f)

    def verify_many(self, paths: Iterable[str | Path]) -> list[VerificationResult]:
        return [self.verify(p) for p in paths]


def verify(path: str | Path, *, venv: str | Path | None = None, counterexample: bool = True) -> VerificationResult:
    """Verify one policy file with Nagini, out of process (a cold worker: start-up paid for this one file).

    For several files use one :class:`NaginiVerifier` (``with NaginiVerifier() as v: v.verify_many(paths)``).
    DependencyError when Nagini is not installed (``agentguard setup nagini``).
    """
    with NaginiVerifier(venv, counterexample=counterexample) as v:
        return v.verify(path)


def main() -> None:  # pragma: no cover - debugging helper: python -m agentguard.policies.nagini FILE...
    with NaginiVerifier() as v:
        for f in sys.argv[1:]:
            print(v.verify(f).describe())
