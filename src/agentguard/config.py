"""Guard-stack configuration: in code, or from one ``agentguard.toml`` (or YAML) file.

A stack in code is just ``GuardStack([guard, ...])``. The same stack from a file::

    [stack]                      # optional
    name = "prod"
    on_error = "halt"            # what a guard that raises yields: reject | escalate | halt
    timeout_s = 0.5              # per-guard time limit (optional)
    short_circuit = true
    require_verified = true      # every policy must pin a matching verified_digest (default false)
    mode = "enforce"             # or "shadow": every guard observes only (the outcome is always ALLOW)

    [telemetry]                  # optional: OpenTelemetry spans and metrics (docs/observability.md)
    enabled = true               # exporters from the standard OTEL_* environment variables

    [recording]                  # optional: where adapters append the traces they see
    path = "traces.jsonl"
    state = "history"            # the recorded state: "history" (the call history) or "pkg.mod:attr"

    [[guards]]
    type = "tool-rules"          # a registered guard type (see GUARD_TYPES)
    name = "no-deletes"
    deny = ["delete_*"]

    [[guards]]
    type = "tool-rules"
    name = "candidate"
    mode = "shadow"              # decides and is audited, never changes the outcome (agentguard.core.shadow)
    deny = ["send_*"]

    [[guards]]
    type = "python"              # any factory by import path
    factory = "mypkg.guards:make_guard"
    threshold = 0.9              # every other key is passed to the factory as a keyword

Every key except ``type``, ``mode`` (and ``factory`` for ``python``) is passed to the guard's factory as a
keyword argument; a relative file path among them (a policy file, a model) is resolved against the
configuration file's folder when that file exists; one that is missing there but exists relative to the process's
working directory is refused (it would read a file the configuration does not name). A factory that is a class with a
``from_config(params)`` classmethod gets the
params through it instead (mechanisms use this to load models from paths).

The registry maps type names to factories. Mechanism guards are registered by import path and
imported only when a file uses them, so ``import agentguard.config`` stays light. Errors in a file
are one line naming the file and the offending key (``agentguard.toml: guards[1].type: unknown
guard type 'polcy' (known: ...)``) and are :class:`~agentguard.core.errors.InputError`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from .core.errors import AgentGuardError, DependencyError, InputError
from .core.guard import Guard, GuardStack
from .core import telemetry
from .core.limits import declared_scalars, time_limit
from .core.loading import GUARD, load_attr, load_callable, requiring_verified
from .core.shadow import MODES, Shadowed
from .core.types import Decision

__all__ = [
    "GUARD_TYPES",
    "GuardSpec",
    "SCHEMA",
    "StackConfig",
    "build_guard",
    "build_stack",
    "load_config",
    "load_stack",
    "parse_config",
    "register_guard",
]

Factory = Callable[..., Guard]
_FILE_SUFFIXES = (".py", ".json", ".jsonl", ".prism", ".toml", ".yaml", ".yml", ".pt", ".npz", ".txt")

#: guard type name -> factory, or "module:attribute" imported lazily on first use.
GUARD_TYPES: dict[str, Factory | str] = {
    "tool-rules": "agentguard.policies.rules:ToolRuleGuard",
    "flow-rules": "agentguard.policies.flow:FlowGuard",  # sequence rules over the run's calls
    "network-rules": "agentguard.policies.networks:NetworkGuard",  # no destination off the public internet
    "run-budget": "agentguard.policies.budget:RunBudgetGuard",  # limits over a run's calls taken together
    "secret-leak": "agentguard.policies.secret_guard:SecretLeakGuard",  # detect-secrets + PII on outgoing calls
    "policy": "agentguard.policies:ToolCallGuard",  # VeriGuard verified policy; uncovered tools: deny
    "provenance": "agentguard.policies:ProvenanceGuard",  # grants from the request, data-flow labels (issue 27)
    "proactive": "agentguard.predictive:ProactiveGuard",  # Pro2Guard runtime guard over a DTMC file
    "traffic-law": "agentguard.predictive:TrafficLawGuard",  # LawBreaker STL law x driving DTMC
    "threshold-monitor": "agentguard.calibration:ThresholdMonitor",  # calibrated Eq. 1 monitor
    "safety-filter": "agentguard.control:SafetyFilter",  # ReGuard safety filter over a learned Q
}

#: The file schema (JSON-Schema style, documented in docs/integrations.md and enforced by parse_config).
SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["guards"],
    "properties": {
        "stack": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "name": {"type": "string"},
                "on_error": {"enum": ["reject", "escalate", "halt"]},
                "timeout_s": {"type": "number", "exclusiveMinimum": 0, "maximum": 60},  # finite
                "short_circuit": {"type": "boolean"},
                "mode": {"enum": list(MODES)},
                "require_verified": {"type": "boolean"},  # every policy pins a matching verified_digest
            },
        },
        "telemetry": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"enabled": {"type": "boolean"}},
        },
        "recording": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"path": {"type": "string"}, "state": {"type": "string"}},
        },
        "guards": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["type"],
                "properties": {
                    "type": {"type": "string"},
                    "name": {"type": "string"},
                    "factory": {"type": "string"},
                    "mode": {"enum": list(MODES)},
                },
                "additionalProperties": True,
            },
        },
    },
}


def register_guard(type_name: str, factory: Factory | str, *, replace: bool = False) -> None:
    """Register a guard type: a factory (callable returning a Guard) or a lazy "module:attr" path."""
    if not isinstance(type_name, str) or not type_name:
        raise InputError("a guard type name must be a non-empty string")
    if type_name in GUARD_TYPES and not replace:
        raise InputError(f"guard type '{type_name}' is already registered (pass replace=True)")
    if not (callable(factory) or (isinstance(factory, str) and ":" in factory)):
        raise InputError(f"factory for '{type_name}' must be callable or 'module:attribute'")
    GUARD_TYPES[type_name] = factory


def _import(path: str, what: str, *, configured: bool = False) -> Any:
    """``load_attr`` for guard factories (``load_callable(path, what, GUARD)`` for one a file names,
    ``configured``): a path that names a module or attribute this installation lacks is a
    :class:`DependencyError` (the mechanism is not installed); a malformed or refused path stays an InputError."""
    try:
        return load_callable(path, f"{what}: factory", GUARD) if configured else load_attr(path, what)
    except InputError as exc:
        cause = exc.__context__     # load_attr raises from None; the ImportError/AttributeError is kept here
        if isinstance(cause, ImportError):
            raise DependencyError(f"{what}: cannot import {cause.name or path.partition(':')[0]} ({cause})") from None
        if isinstance(cause, AttributeError):
            raise DependencyError(f"{what}: {path!r} is not available in this installation ({cause})") from None
        raise


@dataclass
class GuardSpec:
    """One ``[[guards]]`` entry: its type, its name (optional), the factory's keyword arguments and its
    ``mode`` (``"enforce"`` or ``"shadow"``)."""

    type: str
    params: dict[str, Any] = field(default_factory=dict)
    where: str = "guards[0]"
    mode: str = "enforce"


@dataclass
class StackConfig:
    """A parsed configuration: the guard specs, the stack options, the recording path and whether
    OpenTelemetry is on (``[telemetry] enabled``; None: not said, the environment decides)."""

    guards: list[GuardSpec]
    name: str = "stack"
    on_error: Decision = Decision.HALT
    timeout_s: float | None = None
    short_circuit: bool = True
    recording_path: str | None = None
    source: str = "<dict>"
    mode: str = "enforce"
    telemetry: bool | None = None
    recording_state: str | None = None  # a state function name (agentguard.spec.history.state_function)
    require_verified: bool = False  # [stack] require_verified: a policy without a pinned, matching digest refuses

    def build(self) -> GuardStack | Shadowed:
        return build_stack(self)


#: top-level tables of agentguard.toml that belong to other components and are ignored here
SHARED_TABLES = frozenset({"server"})


def _mode(where: str, value: Any) -> str:
    if value not in MODES:
        raise InputError(f"{where}: mode must be one of {', '.join(MODES)}, not {value!r}")
    return str(value)


def _telemetry(source: str, data: Mapping[str, Any]) -> bool | None:
    tel = data.get("telemetry", {})
    if not isinstance(tel, Mapping):
        raise _type_error(f"{source}: telemetry", "a table", tel)
    unknown = set(tel) - {"enabled"}
    if unknown:
        raise InputError(f"{source}: telemetry: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
    on = tel.get("enabled")
    if on is not None and not isinstance(on, bool):
        raise _type_error(f"{source}: telemetry.enabled", "true or false", on)
    return on


def _type_error(where: str, expected: str, value: Any) -> InputError:
    return InputError(f"{where}: expected {expected}, got {type(value).__name__} {value!r}")


def parse_config(data: Mapping[str, Any], source: str = "<dict>") -> StackConfig:
    """Validate a configuration mapping against :data:`SCHEMA`; one-line InputError on the first problem."""
    if not isinstance(data, Mapping):
        raise InputError(f"{source}: the configuration must be a table/mapping, got {type(data).__name__}")
    known = set(SCHEMA["properties"])
    # tables read by other parts of agentguard (the service's [server] settings) may share the file
    unknown = set(data) - known - SHARED_TABLES
    if unknown:
        raise InputError(
            f"{source}: unknown top-level key(s) {', '.join(sorted(map(str, unknown)))} "
            f"(expected {', '.join(sorted(known))})"
        )
    stack = data.get("stack", {})
    if not isinstance(stack, Mapping):
        raise _type_error(f"{source}: stack", "a table", stack)
    unknown = set(stack) - set(SCHEMA["properties"]["stack"]["properties"])
    if unknown:
        raise InputError(f"{source}: stack: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
    name = stack.get("name", "stack")
    if not isinstance(name, str) or not name:
        raise _type_error(f"{source}: stack.name", "a non-empty string", name)
    try:
        on_error = Decision.parse(stack.get("on_error", "halt"))
    except InputError as exc:
        raise InputError(f"{source}: stack.on_error: {exc}") from None
    if not on_error.refuses:
        raise InputError(
            f"{source}: stack.on_error must be reject, escalate or halt (fail closed), "
            f"not {on_error.name.lower()}"
        )
    timeout = stack.get("timeout_s")
    if timeout is not None:  # finite, positive, at most a minute: nan or inf would be no limit at all
        timeout = time_limit(timeout, f"{source}: stack.timeout_s")
    sc = stack.get("short_circuit", True)
    if not isinstance(sc, bool):
        raise _type_error(f"{source}: stack.short_circuit", "true or false", sc)
    require_verified = stack.get("require_verified", False)
    if not isinstance(require_verified, bool):
        raise _type_error(f"{source}: stack.require_verified", "true or false", require_verified)
    rec = data.get("recording", {})
    if not isinstance(rec, Mapping):
        raise _type_error(f"{source}: recording", "a table", rec)
    unknown = set(rec) - {"path", "state"}
    if unknown:
        raise InputError(f"{source}: recording: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
    rec_path = rec.get("path")
    if rec_path is not None and (not isinstance(rec_path, str) or not rec_path):
        raise _type_error(f"{source}: recording.path", "a non-empty string", rec_path)
    rec_state = rec.get("state")
    if rec_state is not None and (not isinstance(rec_state, str) or not rec_state):
        raise _type_error(f"{source}: recording.state", "'history' or 'package.module:attr'", rec_state)
    if rec_state is not None and ":" not in rec_state:  # a name that is no built-in was accepted until recording
        from .spec.history import BUILTIN_STATES

        if rec_state not in BUILTIN_STATES:
            raise InputError(f"{source}: recording.state: unknown state function {rec_state!r}: use one of "
                             f"{', '.join(BUILTIN_STATES)} or 'package.module:attr'")
    if "guards" not in data:
        raise InputError(f"{source}: no guards: add at least one [[guards]] table with a 'type'")
    guards = data["guards"]
    if not isinstance(guards, list) or not guards:
        raise InputError(f"{source}: 'guards' must be a non-empty array of tables ([[guards]])")
    specs = []
    for i, g in enumerate(guards):
        where = f"guards[{i}]"
        if not isinstance(g, Mapping):
            raise _type_error(f"{source}: {where}", "a table", g)
        t = g.get("type")
        if not isinstance(t, str) or not t:
            raise InputError(
                f"{source}: {where}: missing 'type' (one of {', '.join(sorted(GUARD_TYPES))}, or python)"
            )
        if t != "python" and t not in GUARD_TYPES:
            raise InputError(
                f"{source}: {where}.type: unknown guard type {t!r} "
                f"(known: {', '.join(sorted(GUARD_TYPES))}, python)"
            )
        if t == "python" and not (isinstance(g.get("factory"), str) and ":" in g["factory"]):
            raise InputError(f"{source}: {where}: type 'python' needs factory = \"module:attribute\"")
        if "name" in g and (not isinstance(g["name"], str) or not g["name"]):
            raise _type_error(f"{source}: {where}.name", "a non-empty string", g["name"])
        mode = _mode(f"{source}: {where}", g.get("mode", "enforce"))
        specs.append(GuardSpec(t, {k: v for k, v in g.items() if k not in ("type", "mode")}, f"{source}: {where}",
                               mode))
    return StackConfig(
        specs, name, on_error, float(timeout) if timeout is not None else None, sc, rec_path, source,
        _mode(f"{source}: stack", stack.get("mode", "enforce")), _telemetry(source, data), rec_state,
        require_verified,
    )


def _known_keys(factory: Any, exc: TypeError) -> str:
    """For a misspelt key (``allw``): the keys the guard's constructor accepts and the nearest one, read from
    its signature (``inspect``); empty when the error is another one or the constructor takes ``**kwargs``."""
    import difflib
    import inspect
    import re

    m = re.search(r"unexpected keyword argument '([^']+)'", str(exc))
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return ""
    if m is None or any(p.kind is p.VAR_KEYWORD for p in params):
        return ""
    known = sorted(p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))
    near = difflib.get_close_matches(m.group(1), known, n=1)
    return (f" (did you mean {near[0]!r}?" if near else " (") + f" known keys: {', '.join(known)})"


def build_guard(spec: GuardSpec) -> Guard:
    """Instantiate one guard from its spec (lazy import of its class); clear errors on bad params."""
    params = dict(spec.params)
    if spec.type == "python":  # only what declares it builds a guard is called (core.loading.load_callable)
        path = params.pop("factory")
        factory: Any = _import(path, spec.where, configured=True)
    else:
        f = GUARD_TYPES[spec.type]
        factory = _import(f, f"{spec.where} (type {spec.type!r})") if isinstance(f, str) else f
    declared_scalars(factory, params, spec.where)  # decode = 0, max_runs = 1.9, threshold = "0.5": refused
    try:
        if isinstance(factory, type) and hasattr(factory, "from_config"):
            guard = factory.from_config(params)
        else:
            guard = factory(**params)
    except AgentGuardError as exc:
        raise InputError(f"{spec.where}: {exc}") from None
    except TypeError as exc:
        raise InputError(f"{spec.where}: bad parameters for {spec.type!r}: {exc}{_known_keys(factory, exc)}") from None
    except Exception as exc:  # noqa: BLE001 - int("0.5"), int(nan), a table where a string is read: one line
        raise InputError(f"{spec.where}: bad parameters for {spec.type!r}: {type(exc).__name__}: "
                         f"{str(exc).splitlines()[0] if str(exc) else ''}"[:400]) from None
    if not isinstance(guard, Guard):
        raise InputError(
            f"{spec.where}: factory returned {type(guard).__name__}, not a Guard (needs name, check, acheck)"
        )
    return guard


def build_stack(config: StackConfig | Mapping[str, Any], *, require_verified: bool = False) -> GuardStack | Shadowed:
    """The GuardStack a configuration describes (guards asked in file order, strictest verdict wins).

    With guards in ``mode = "shadow"`` (or ``[stack] mode = "shadow"``: all of them) it is a
    :class:`~agentguard.core.shadow.Shadowed`: the stack of the enforcing guards decides exactly as it would
    alone, and the shadow guards' would-be verdicts ride along in ``details["shadow"]``.

    With ``require_verified`` (or ``[stack] require_verified = true``; either one suffices, the file cannot switch
    off what the caller asks) every policy the configuration names (``ToolCallGuard.from_config``, whatever guard
    type reaches it) must pin a ``verified_digest`` its source matches; one that does not refuses to load
    (one-line :class:`~agentguard.policies.model.PolicyError`)."""
    if not isinstance(config, StackConfig):
        config = parse_config(config)
    with requiring_verified(require_verified or config.require_verified):
        guards = [build_guard(s) for s in config.guards]
    names = [g.name for g in guards]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise InputError(
            f"{config.source}: guard names must be unique, repeated: {', '.join(sorted(dup))} "
            "(set 'name' on each)"
        )
    if config.telemetry and telemetry.active() is None:
        telemetry.enable()  # [telemetry] enabled = true: OpenTelemetry for every Pipeline of the process
    everything = config.mode == "shadow"
    modes = ["shadow" if everything else s.mode for s in config.guards]
    enforced = [g for g, m in zip(guards, modes) if m == "enforce"]
    shadow = [g for g, m in zip(guards, modes) if m == "shadow"]
    stack = GuardStack(
        enforced,
        name=config.name,
        on_error=config.on_error,
        timeout_s=config.timeout_s,
        short_circuit=config.short_circuit,
    ) if enforced else None
    if not shadow and stack is not None:
        return stack
    return Shadowed(stack, shadow, name=config.name, on_error=config.on_error, timeout_s=config.timeout_s)


def load_config(path: str | os.PathLike[str]) -> StackConfig:
    """Read and validate ``agentguard.toml`` (tomllib) or a ``.yaml``/``.yml`` file."""
    path = os.fspath(path)
    try:
        raw = open(path, "rb").read()
    except OSError as exc:
        raise InputError(f"cannot read configuration {path}: {exc.strerror}") from None
    if path.endswith((".yaml", ".yml")):  # duplicate keys and aliases refused, as TOML refuses a duplicate key
        from .core.strict_yaml import StrictYAMLError, loads_strict_yaml

        try:
            data = loads_strict_yaml(raw.decode("utf-8"))
        except StrictYAMLError as exc:
            raise InputError(f"{path}: not valid YAML ({exc})") from None
        except UnicodeDecodeError:
            raise InputError(f"{path}: not UTF-8 text") from None
        if data is None:
            data = {}
    else:
        import tomllib

        try:
            data = tomllib.loads(raw.decode("utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"{path}: not valid TOML ({exc})") from None
        except UnicodeDecodeError:
            raise InputError(f"{path}: not UTF-8 text") from None
        except RecursionError:  # tomllib recurses per nesting level: [[[[...]]]] 100000 deep
            raise InputError(f"{path}: not valid TOML (nested too deeply)") from None
    cfg = parse_config(data, path)
    base = os.path.dirname(os.path.abspath(path))
    if cfg.recording_path and not os.path.isabs(cfg.recording_path):
        cfg.recording_path = os.path.join(base, cfg.recording_path)
    for spec in cfg.guards:  # relative file paths in guard parameters are relative to this file
        for k, v in spec.params.items():
            if isinstance(v, str) and not os.path.isabs(v) and ("/" in v or v.endswith(_FILE_SUFFIXES)):
                candidate = os.path.join(base, v)
                if os.path.exists(candidate):
                    spec.params[k] = candidate
                elif os.path.exists(v) and os.path.realpath(v) != os.path.realpath(candidate):
                    # not next to this file, but in the process's working directory: the guard would read a file
                    # the configuration does not name (another folder's policy or model); fail closed
                    raise InputError(f"{spec.where}.{k}: {v!r} is not in {base} (relative paths are relative to "
                                     "the configuration file); a file of that name in the working directory is "
                                     "not used: give its absolute path")
    return cfg


def load_stack(path: str | os.PathLike[str], *, require_verified: bool = False) -> GuardStack | Shadowed:
    """``build_stack(load_config(path), require_verified=require_verified)``."""
    return build_stack(load_config(path), require_verified=require_verified)
