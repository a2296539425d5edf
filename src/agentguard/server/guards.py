"""Which guards the service runs, behind the common :class:`agentguard.core.Guard` interface.

The service needs three guards, one per endpoint, and accepts any :class:`~agentguard.core.Guard`
for each (a :class:`~agentguard.core.GuardStack` included):

- ``tool``: ``check(context, ToolCall)`` for ``POST /v1/check`` (a verified-policy guard);
- ``step``: ``check(context, Step)`` for ``POST /v1/runs/{id}/steps`` (the proactive guard); the
  context's trace holds the run's previous steps;
- ``signal``: ``check(context, Step(signals=...))`` for ``POST /v1/runs/{id}/signals`` (a calibrated
  monitor).

Numbers a verdict carries (``probability``/``risk``, ``score``/``value``, ``threshold``) are what the
dashboard draws. ``model`` (a DTMC) and ``calibration`` (curves) are optional extras the dashboard
shows when present.

The built-in defaults here are small deterministic guards so the service runs with nothing else
installed; :func:`default_guards` prefers the real mechanisms when they are importable.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from pathlib import Path

from ..core.errors import InputError
from ..core.guard import BaseGuard, Guard, GuardStack, arun_guard, run_guard
from ..core.runs import RunMemory, walk_guards
from ..core.types import Context, Step, ToolCall, Verdict
from .models import RUN_ID_PATTERN

__all__ = [
    "GuardSource",
    "PerRunCopy",
    "ServiceGuards",
    "StepToolGuard",
    "default_guards",
    "load_guards",
]


class StepToolGuard(BaseGuard):
    """Step guard that applies a tool-call guard to the step's action when it is a tool call."""

    def __init__(self, tool_guard: Guard, name: str = "step-tool") -> None:
        self.tool_guard = tool_guard
        self.name = name

    def __repr__(self) -> str:
        return f"StepToolGuard({self.tool_guard!r}, name={self.name!r})"

    def check(self, context: Context, proposal: Any) -> Verdict:
        if not isinstance(proposal, (Step, ToolCall)):  # fail closed on what it cannot read
            return Verdict.reject(f"cannot read a proposal of type {type(proposal).__name__} (not a step)",
                                  self.name)
        action = proposal.action if isinstance(proposal, Step) else proposal
        if isinstance(action, ToolCall):
            return self.tool_guard.check(context, action)
        return Verdict.allow(self.name, "no tool call in this step")


class StepsAndTools(GuardStack):
    """The stack :func:`with_tool_rules` builds: ``[step guards, StepToolGuard(tool guards)]``. A step without a tool
    call is decided by the step guards alone (their verdict unchanged: the tool guards have nothing to read); with
    one, by both, the members' own verdicts listed flat in ``details["verdicts"]`` and every shadow report
    (``details["shadow"]``) kept whichever member's verdict wins."""

    def _alone(self, proposal: Any) -> bool:
        return isinstance(proposal, Step) and not isinstance(proposal.action, ToolCall)

    def _combine(self, verdicts: list[Verdict]) -> Verdict:
        v = super()._combine(verdicts)
        trail: list[Any] = []
        for m in verdicts:
            inner = m.details.get("verdicts")
            trail.extend(inner if isinstance(inner, list) and inner else [m.to_dict()])
        details = {**dict(v.details), "verdicts": trail}
        shadow = [e for m in verdicts for e in (m.details.get("shadow") or [])]
        if shadow:
            details["shadow"] = shadow
        return Verdict(v.decision, v.reason, v.guard, v.numbers, v.action, details)

    def check(self, context: Context, proposal: Any) -> Verdict:
        if self._alone(proposal):
            return run_guard(self.guards[0], context, proposal, timeout_s=self.timeout_s, on_error=self.on_error)
        return super().check(context, proposal)

    async def acheck(self, context: Context, proposal: Any) -> Verdict:
        if self._alone(proposal):
            return await arun_guard(self.guards[0], context, proposal, timeout_s=self.timeout_s, on_error=self.on_error)
        return await super().acheck(context, proposal)


def with_tool_rules(step: Guard, tool: Guard) -> Guard:
    """The step guards ``step`` and, after them, the tool guards ``tool`` on the step's tool call
    (:class:`StepToolGuard`), in one stack (the strictest verdict wins; the step stack's strategy, name and
    ``on_error`` kept).

    Guaranteed: a tool call that ``/v1/check`` refuses is never ALLOWed as the action of a step. Before (session 21
    red team), configured ``step_guards`` replaced the tool guards for steps, so an agent whose ``rm_all`` was
    REJECTed by ``/v1/check`` sent it as ``{"action": {"name": "rm_all"}}`` to ``/v1/runs/{id}/steps`` and the
    proactive guard answered ALLOW with ``execute: true``. The step guards come first so the ones with per-run
    memory see every step (a stack stops early only on HALT)."""
    out = StepsAndTools([step, StepToolGuard(tool)], name=str(getattr(step, "name", "steps")),
                        on_error=getattr(step, "on_error", None) or "HALT")
    own = getattr(step, "strategy", None)  # a stack's or a Shadowed's own strategy
    if own is not None:
        out.strategy = own  # type: ignore[attr-defined]  # the service reads a stack's own strategy
    return out


@dataclass
class ServiceGuards:
    """The guards the service runs plus optional things for the dashboard."""

    tool: Guard
    step: Guard
    signal: Guard
    model: Any = None  # a agentguard.predictive.DTMC, shown on the dashboard
    calibration: dict[str, Any] = field(default_factory=dict)  # curves for the dashboard
    description: str = ""

    def __post_init__(self) -> None:
        for name in ("tool", "step", "signal"):
            g = getattr(self, name)
            if not isinstance(g, Guard):
                from ..core.errors import InputError

                raise InputError(f"ServiceGuards.{name} is not a Guard: {g!r}")


EXAMPLES = Path(__file__).with_name("examples")


def default_guards(settings: Any = None) -> ServiceGuards:
    """The service's guards when no guard files are configured.

    - tool calls: the verified Mind2Web-SC access policy (``examples/mind2web_sc.toml``: the
      Nagini-proved ``agentguard/policies/library/mind2web_sc.py`` through a
      :class:`~agentguard.policies.ToolCallGuard`; user facts from ``metadata.user_info``);
    - steps: the same policy on the step's tool call (no DTMC configured, so no prediction);
    - signals: the Eq. 1 :class:`~agentguard.calibration.ThresholdMonitor` on signal ``score`` at
      ``settings.monitor_threshold`` (one instance; its per-run state is keyed by run id).
    """
    from ..calibration import ThresholdMonitor
    from ..config import load_stack

    tool = load_stack(EXAMPLES / "mind2web_sc.toml",  # pinned: loads under require_verified too
                      require_verified=getattr(settings, "require_verified", False) is True)
    threshold = float(getattr(settings, "monitor_threshold", 0.5))
    return ServiceGuards(
        tool=tool,
        step=StepToolGuard(tool),
        signal=ThresholdMonitor(threshold),
        description="default: verified Mind2Web-SC policy; threshold monitor on 'score'",
    )


def find_attr(guard: Any, attr: str) -> Any:
    """``attr`` of ``guard`` or of the first guard inside it (:func:`~agentguard.core.runs.walk_guards`)
    that has it as a non-callable value."""
    for g in walk_guards(guard):
        v = getattr(g, attr, None)
        if v is not None and not callable(v):
            return v
    return None


def needs_copy(guard: Any) -> bool:
    """True when ``guard`` cannot be shared across runs: a guard inside it keeps per-sequence state in
    itself (it has ``reset()``) but has no ``end_run(run_id)``, so its state is not keyed by run id.
    Such third-party guards get a per-run copy (:class:`PerRunCopy`); every guard with ``end_run`` is shared."""
    return any(callable(getattr(g, "reset", None)) and not callable(getattr(g, "end_run", None))
               for g in walk_guards(guard))


def fresh_copy(guard: Any) -> Any:
    """A per-run deep copy of a guard that :func:`needs_copy`, with every stateful guard in it reset."""
    import copy

    c = copy.deepcopy(guard)
    for g in walk_guards(c):
        if callable(getattr(g, "reset", None)):
            g.reset()
    return c


class PerRunCopy(BaseGuard):
    """A guard that keeps per-sequence state in itself (``reset()``, no ``end_run``), made shareable: each
    run gets its own reset copy of ``guard``, kept in a :class:`~agentguard.core.runs.RunMemory` keyed by
    run id (``end_run`` forgets it; a copy evicted for capacity raises RunEvicted: the caller rebuilds
    the run by replay, or the verdict is HALT)."""

    def __init__(self, guard: Guard, max_runs: int = 10_000) -> None:
        self.guard = guard
        self.name = str(getattr(guard, "name", "guard"))
        self._copies: RunMemory[Any] = RunMemory(lambda: fresh_copy(guard), max_runs)

    def __repr__(self) -> str:
        return f"PerRunCopy({self.guard!r})"

    def copy_for(self, run_id: str) -> Any:
        return self._copies.get(run_id)

    def check(self, context: Context, proposal: Any) -> Verdict:
        return run_guard(self._copies.get(context.run_id), context, proposal)

    def end_run(self, run_id: str) -> None:
        self._copies.end_run(run_id)


def load_guards(settings: Any = None) -> ServiceGuards:
    """The guards a service process runs for ``settings`` (every worker builds the same ones).

    Guard-stack files are read with :func:`agentguard.config.load_stack` (the ``agentguard.toml``
    format); a missing setting keeps the built-in default for that endpoint.

    Guaranteed in every configuration of files (none, tool only, step only, both): the step guards decide a
    step's tool call together with the tool guards that ``/v1/check`` runs (:func:`with_tool_rules`, or
    :class:`StepToolGuard` when no step guards are configured), so a step is never less strict than
    ``/v1/check`` on the same call. Guards handed in as a :class:`ServiceGuards` object are run as given.
    """
    base = default_guards(settings)
    if settings is None:
        return base
    tool, step, signal = base.tool, base.step, base.signal
    verified = getattr(settings, "require_verified", False) is True
    desc = []
    if getattr(settings, "tool_guards", None) or getattr(settings, "step_guards", None) or \
            getattr(settings, "signal_guards", None):
        from ..config import load_stack

        if settings.tool_guards:
            tool = load_stack(settings.tool_guards, require_verified=verified)
            step = StepToolGuard(tool)
            desc.append(f"tool: {Path(settings.tool_guards).name}")
        if settings.step_guards:
            # a step's tool call is decided by the tool guards in force too, the built-in ones when no tool_guards
            # are configured (session 21 for configured ones; session 22: with step_guards alone, the built-in
            # Mind2Web-SC tool guard refused a call on /v1/check that the step guards ALLOWed as a step's action)
            step = with_tool_rules(load_stack(settings.step_guards, require_verified=verified), tool)
            desc.append(f"step: {Path(settings.step_guards).name}")
        if settings.signal_guards:
            signal = load_stack(settings.signal_guards, require_verified=verified)
            desc.append(f"signal: {Path(settings.signal_guards).name}")
    model = None
    if getattr(settings, "dtmc", None):
        model = _load_dtmc(settings.dtmc)
        desc.append(f"dtmc: {Path(settings.dtmc).name}")
    calibration: dict[str, Any] = {}
    if getattr(settings, "calibration", None):
        try:
            calibration = json.loads(Path(settings.calibration).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot read calibration curves {settings.calibration}: {exc}") from None
        if not isinstance(calibration, dict):
            raise InputError(f"{settings.calibration}: expected an object of curves")
        desc.append(f"calibration: {Path(settings.calibration).name}")
    if model is None:
        model = find_attr(step, "model")
    if not calibration:
        calibration = find_attr(signal, "curves") or {}
    return ServiceGuards(tool=tool, step=step, signal=signal, model=model, calibration=calibration,
                         description="; ".join(desc) if desc else base.description)


def _load_dtmc(path: str) -> Any:
    """The DTMC at ``path`` through the one DTMC loader, :func:`agentguard.predictive.load_dtmc`."""
    from ..predictive import load_dtmc

    return load_dtmc(path)


def _referenced(toml_path: str) -> list[str]:
    """Files a guard file points at (policy sources, model files and folders, calibration files), so a
    change to any of them is a new guard version and triggers a reload."""
    import tomllib

    try:
        data = tomllib.loads(Path(toml_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    out: list[str] = []

    def visit(key: str, v: Any) -> None:
        if isinstance(v, dict):
            for k, x in v.items():
                visit(k, x)
        elif isinstance(v, list):
            for x in v:
                visit(key, x)
        elif isinstance(v, str) and v:
            cands = [Path(v), Path(toml_path).parent / v]
            if key == "policy" and not Path(v).suffix:
                try:
                    from ..policies import library_path

                    cands.append(library_path(v))
                except Exception:
                    pass
            for c in cands:
                try:
                    if c.is_file():
                        out.append(str(c.resolve()))
                        break
                    if c.is_dir() and key in ("model", "policy", "calibration"):
                        out.extend(str(f.resolve()) for f in sorted(c.iterdir()) if f.is_file())
                        break
                except OSError:
                    continue

    visit("", data)
    return out


def guard_files(settings: Any) -> list[str]:
    """Every file the guards in force are built from: the configured files and what they reference."""
    files = [p for p in (getattr(settings, k, None) for k in
                         ("tool_guards", "step_guards", "signal_guards", "dtmc", "calibration")) if p]
    if not getattr(settings, "tool_guards", None):
        files.insert(0, str(EXAMPLES / "mind2web_sc.toml"))  # the default tool guard's file
    out: list[str] = []
    for f in files:
        out.append(f)
        if str(f).endswith((".toml", ".yaml", ".yml")):
            out.extend(_referenced(f))
    return list(dict.fromkeys(out))


class GuardSource:
    """The guards in force, versioned by the content of their files, hot-reloaded when they change.

    ``get()`` is called on every request; at most every ``reload_s`` seconds it stats the files
    (cheap) and, when one changed, builds the new guards and swaps them in atomically. A change that
    fails to load keeps the previous guards (a broken deploy never silently disables checking) and
    is reported in ``last_error``. ``version`` is a SHA-256 prefix over the files' contents (``custom``
    for guards handed in as objects), recorded with every audited decision.

    Guaranteed (session 21): the guards and their version are one pair, swapped in one assignment
    (:meth:`versioned` reads both at once), and the version is that of the very contents the guards were built
    from: the files are hashed before and after building, and a build during which they changed is not swapped in
    (the previous pair stays; the next tick tries again, since the stamps kept are those from before the build).
    Before, the version was hashed after the build and the stamps taken after it, so a file rewritten while the
    guards were being built left the old content deciding under the new content's version, never reloaded.
    """

    def __init__(self, settings: Any = None, guards: ServiceGuards | None = None,
                 clock: Any = time.monotonic) -> None:
        self.settings = settings
        self.files = guard_files(settings) if guards is None else []
        self.reload_s = float(getattr(settings, "reload_s", 0) or 0)
        self.clock = clock
        self._stamp: tuple[tuple[str, int | None, int | None], ...] = ()
        if guards is not None:
            self._pair: tuple[ServiceGuards, str] = (guards, "custom")
        else:
            built = None
            for _ in range(3):  # the files changed while they were read: read them again
                built = self._build()
                if built[3]:
                    break
            assert built is not None
            g, version, files, stamp, steady = built
            self._pair = (g, version if files else "builtin")
            self.files = files
            self._stamp = stamp if steady else ()  # not steady: the first tick reloads
        self._next = self.clock() + self.reload_s
        self.reloads = 0
        self.last_error: str | None = None
        self._lock = threading.Lock()

    @property
    def current(self) -> ServiceGuards:
        """The guards in force."""
        return self._pair[0]

    @property
    def version(self) -> str:
        """The version of the guards in force."""
        return self._pair[1]

    def versioned(self) -> tuple[ServiceGuards, str]:
        """The guards in force and their version, read together (a reload swaps both in one assignment)."""
        if self.reload_s > 0 and self.files and self.clock() >= self._next:
            self.maybe_reload()
        return self._pair

    @staticmethod
    def _stamps_of(files: list[str]) -> tuple[tuple[str, int | None, int | None], ...]:
        out: list[tuple[str, int | None, int | None]] = []
        for f in files:
            try:
                st = os.stat(f)
                out.append((f, st.st_mtime_ns, st.st_size))
            except OSError:
                out.append((f, None, None))
        return tuple(out)

    def _stamps(self) -> tuple[tuple[str, int | None, int | None], ...]:
        return self._stamps_of(self.files)

    @staticmethod
    def _version_of(files: list[str]) -> str:
        """SHA-256 prefix over the files' places in the list, names and contents, not their folders (session 22):
        replicas that run the same guard files from different folders (another checkout, another virtualenv for
        the built-in guard file) have one version, so an escalation decided on one is answered on another and an
        idempotent retry is replayed there. Before, the absolute paths were hashed: identical guards at two paths
        had two versions, and every such cross-replica approval or replay was refused with 409."""
        h = hashlib.sha256()
        for i, f in enumerate(files):
            h.update(f"{i}:{Path(f).name}".encode("utf-8", "surrogatepass") + b"\0")
            try:
                h.update(Path(f).read_bytes())
            except OSError:
                h.update(b"<missing>")
        return h.hexdigest()[:16]

    def _version(self) -> str:
        return self._version_of(self.files)

    def _build(self) -> tuple[ServiceGuards, str, list[str], tuple[tuple[str, int | None, int | None], ...], bool]:
        """``(guards, version, files, stamps, steady)``: the guards built from the files, the version and stamps of
        the files as they were before the build, and whether their contents were the same after it (raises what
        :func:`load_guards` raises)."""
        files = guard_files(self.settings)
        stamp, version = self._stamps_of(files), self._version_of(files)
        g = load_guards(self.settings)
        after = guard_files(self.settings)
        return g, version, files, stamp, after == files and self._version_of(after) == version

    def get(self) -> ServiceGuards:
        if self.reload_s > 0 and self.files and self.clock() >= self._next:
            self.maybe_reload()
        return self._pair[0]

    def maybe_reload(self) -> bool:
        """Reload if a file changed; True when new guards were swapped in (with the version of the contents they
        were built from; a build during which the files changed is retried on the next tick)."""
        if not self._lock.acquire(blocking=False):
            return False
        try:
            self._next = self.clock() + self.reload_s
            if self._stamps() == self._stamp:
                return False
            try:
                new, version, files, stamp, steady = self._build()
            except Exception as exc:  # keep serving with the previous guards
                self._stamp = self._stamps()  # this content failed: tried again when it changes
                self.last_error = f"{type(exc).__name__}: {exc}"
                logging.getLogger(__name__).warning("guard files not reloaded (the previous guards still decide): %s",
                                                    self.last_error)
                return False
            if not steady:  # rewritten while being read: the guards may be of neither content; next tick
                return False
            self._pair = (new, version)  # one assignment: no reader sees new guards under the old version
            self.files = files
            self._stamp = stamp
            self.reloads += 1
            self.last_error = None
            return True
        finally:
            self._lock.release()


#: the run-id grammar of the request bodies (:data:`.models.RUN_ID_PATTERN`, which pydantic matches with Rust's
#: ``regex``, where ``$`` is the end of the text) without its anchors: matched with ``fullmatch`` here, since
#: Python's ``$`` also matches before a final newline (``re.match`` let ``/v1/runs/r1%0A/steps`` name the run
#: ``"r1\n"``, which every body refuses)
_NAME = re.compile(RUN_ID_PATTERN.removeprefix("^").removesuffix("$"))


def valid_run_id(run_id: Any) -> bool:
    """Run ids are 1..128 characters from ``[A-Za-z0-9_.:-]``, nothing else (no final newline): the path's
    run id is read as the bodies' ``run_id`` is."""
    return type(run_id) is str and _NAME.fullmatch(run_id) is not None
