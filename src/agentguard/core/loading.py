"""``module:attr`` import paths, read one way everywhere (configuration factories, extractors,
scorers, state functions, safety-filter factories).

:func:`load_attr` is the plain lookup (the standard library's :func:`pkgutil.resolve_name`, which accepts
``pkg.mod:attr`` and dotted attributes after the colon, plus the one-line error the configuration files promise
and a refusal of the colon-less form, so a typo is not read as a module path). It is for paths the program itself
holds (the guard-type registry).

A path that a **configuration** names (a file a user may copy from anywhere) goes through :func:`load_callable`
instead, the one resolver for every configuration slot that names code (``type = "python"``'s ``factory``, a
policy guard's ``extractor``, a monitor's ``scorer``, ``[recording] state`` and a proactive guard's ``state``, a
safety filter's ``q`` and ``encoder``). What it guarantees, in order:

1. **Before any import**: the path is plain ``ident(.ident)*:ident(.ident)*`` in ASCII (no path separators, no
   leading or doubled dots, no spaces), no part is a dunder (``__main__``, ``__builtins__``, ``__globals__``,
   ``__class__``, ...), and its top-level module is not part of the Python standard library nor ``builtins``
   (:data:`sys.stdlib_module_names`): nothing there builds a guard, and ``subprocess:run``, ``os:system``,
   ``builtins:eval``, ``shutil:rmtree``, ``pickle:loads``, ``tarfile:TarFile`` (a class with ``extract``) are
   refused without being imported.
2. The module is imported (**its top-level code runs**: the packages installed, or found on ``sys.path``, are
   trusted; the file naming them is not), then the attributes are read one by one; a step that passes through a
   module (``agentguard.config:os.system``) is refused, and so is an object defined in the standard library under
   another name (``mypkg:run = subprocess.run``).
3. The object must **declare** what the slot needs (:class:`Builds`): a class with the slot's methods, or a Python
   function (bound method, or an instance whose ``__call__`` is one) whose return annotation names such a class
   (each member of a union), or, for a slot that calls the object at run time (a scorer, a state function), whose
   return annotation is the value the slot reads (``-> float``, ``-> dict[str, Any]``). A builtin, an unannotated
   function, ``-> Any``, a ``functools.partial`` are refused; a scorer or state function must also take exactly
   the two positional arguments the slot passes (``free_port() -> int``, ``read_calibration(path) -> dict`` are
   refused). **Nothing is called here.**

4. What a slot builds is checked once it is built (:func:`built`: an extractor, a Q function or an encoder must
   have the slot's methods; ``config.build_guard``: a guard factory's result must be a Guard), and a monitor's score
   when it is read (a finite number). A state function's value is not checked (the guard reading it fails closed
   on what it cannot read).

**What is not guaranteed** (a configuration names trusted code; these checks keep a copied file from naming the
wrong code, they do not sandbox the right one): importing the module runs its top-level code; a declared class's
``__init__`` or a declared function's body may do anything when the slot calls it (write files, open sockets,
call ``os.system``): an annotation is a declaration, not a proof, and nothing here inspects a body. A package
installed in the environment, or a module on ``sys.path`` (the working directory included when Python put it
there), is trusted as a whole.

Before session 21 ``factory = "subprocess:run"`` with ``args = ["sh", "-c", "..."]`` ran a command while the file
was loaded, and ``extractor = "os:abort"`` ended the process; before session 22 ``scorer``, ``state``, ``q`` and
``encoder`` still took any callable (``q = "os:abort"`` was called while the file loaded; ``scorer =
"subprocess:run"`` ran each monitored step's text as a command). Every refusal is one line naming the slot.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import numbers
import pkgutil
import re
import sys
import types
import typing
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from .errors import InputError

__all__ = ["Builds", "EXTRACTOR", "GUARD", "SCORER", "STATE", "built", "check_factory", "load_attr", "load_callable",
           "plain_path", "read_json_file", "requiring_verified", "verified_required"]


def load_attr(path: Any, what: str = "object") -> Any:
    """The object named by ``"package.module:attribute"`` (``attribute`` may be dotted).

    Raises :class:`~agentguard.core.errors.InputError` with one line naming ``what`` on a malformed
    path, a module that cannot be imported or a missing attribute. No check of what the object is: a path that a
    configuration file names goes through :func:`load_callable`.
    """
    if not isinstance(path, str) or path.count(":") != 1 or not all(path.split(":")):
        raise InputError(f"{what} must be 'package.module:attribute', got {path!r}")
    try:
        return pkgutil.resolve_name(path)
    except ImportError as exc:
        raise InputError(f"{what} {path!r}: cannot import {exc.name or path.split(':')[0]!r} ({exc})") from None
    except AttributeError as exc:
        raise InputError(f"{what} {path!r}: no such attribute ({exc})") from None
    except (ValueError, TypeError) as exc:
        raise InputError(f"{what} {path!r}: {exc}") from None


@dataclass(frozen=True)
class Builds:
    """What a configuration slot needs the named object to declare.

    ``methods``: the slot calls the object to build something that has these methods (a class with them, or a
    function annotated to return one). ``returns``: the slot keeps the object and calls it later for a value of
    one of these types (a function annotated ``-> float``). ``what`` names it in errors (``"a guard"``)."""

    what: str
    methods: tuple[str, ...] = ()
    returns: tuple[type, ...] = ()
    #: for ``returns``: the positional arguments the slot calls it with (its signature must take exactly these)
    arity: int | None = None


#: a guard factory (``type = "python"``)
GUARD = Builds("a guard", methods=("check", "acheck"))
#: a policy guard's argument extractor factory
EXTRACTOR = Builds("an extractor", methods=("extract",))
#: a monitor's scorer ``scorer(step_text, context) -> float`` (``-> int`` is refused: ``free_port() -> int`` and
#: ``write_parquet(path, traces) -> int`` are no scores, and the step text is the agent's)
SCORER = Builds("a score", returns=(float,), arity=2)
#: a state function ``(context, proposal) -> state`` (a mapping, as :func:`agentguard.spec.history.history_state`)
STATE = Builds("a state", returns=(Mapping,), arity=2)

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_PLAIN = re.compile(rf"{_IDENT}(?:\.{_IDENT})*:{_IDENT}(?:\.{_IDENT})*")
_REFUSED_TOP = frozenset(sys.stdlib_module_names) | {"builtins", "__main__", "__mp_main__"}


def _top(module: Any) -> str:
    return str(module or "").split(".")[0]


def plain_path(path: Any, what: str) -> tuple[str, list[str]]:
    """``(module, [attribute, ...])`` of a configuration's ``"package.module:attr"`` when it is a plain name outside
    the standard library (step 1 of the module doc); InputError (one line) otherwise. Imports nothing."""
    if not isinstance(path, str) or _PLAIN.fullmatch(path) is None:
        raise InputError(f"{what} must be 'package.module:attribute' (ASCII identifiers joined by dots), "
                         f"got {str(path)[:120]!r}")
    module, _, attrs = path.partition(":")
    parts = module.split(".") + attrs.split(".")
    if any(p.startswith("__") for p in parts):
        raise InputError(f"{what} {path!r}: a dunder name (__main__, __builtins__, __globals__, ...) is refused")
    if _top(module) in _REFUSED_TOP:
        raise InputError(f"{what} {path!r}: {_top(module)!r} is part of the Python standard library, which has nothing "
                         "a configuration may name: refused before it is imported")
    return module, attrs.split(".")


def _resolve(path: str, what: str) -> Any:
    module, attrs = plain_path(path, what)
    try:
        obj: Any = importlib.import_module(module)
    except ImportError as exc:
        raise InputError(f"{what} {path!r}: cannot import {exc.name or module!r} ({exc})") from None
    except Exception as exc:  # noqa: BLE001 - a module whose top-level code fails: one line, fail closed
        raise InputError(f"{what} {path!r}: importing {module!r} failed ({type(exc).__name__}: {exc})") from None
    for i, name in enumerate(attrs):
        try:
            obj = getattr(obj, name)
        except AttributeError as exc:
            raise InputError(f"{what} {path!r}: no such attribute ({exc})") from None
        if isinstance(obj, types.ModuleType):  # mypkg:os.system reaches another module through an import
            raise InputError(f"{what} {path!r}: {'.'.join(attrs[:i + 1])!r} is a module (name the module itself "
                             "before the colon)")
    routine = inspect.isclass(obj) or inspect.isroutine(obj)
    home = getattr(obj, "__module__", None) if routine else type(obj).__module__
    if callable(obj) and (not isinstance(home, str) or _top(home) in _REFUSED_TOP):  # data: refused in step 3
        qual = getattr(obj, "__qualname__", None) if routine else type(obj).__qualname__
        raise InputError(f"{what} {path!r} is {home}.{qual} of the Python standard library under another name: "
                         "refused")
    return obj


def _has_methods(cls: Any, methods: tuple[str, ...]) -> bool:
    return inspect.isclass(cls) and all(callable(getattr(cls, m, None)) for m in methods)


def _return_members(obj: Any) -> tuple[Any, ...] | None:
    """The members of the return annotation of the Python function ``obj`` stands for (the function, a bound
    method's function, an instance's ``__call__``); None when it is none of these or declares no return."""
    if inspect.ismethod(obj):
        fn: Any = obj.__func__
    elif inspect.isfunction(obj):
        fn = obj
    elif not inspect.isclass(obj) and inspect.isfunction(getattr(type(obj), "__call__", None)):
        fn = type(obj).__call__
    else:
        return None
    try:
        ret = typing.get_type_hints(fn).get("return")
    except Exception:  # noqa: BLE001 - an annotation that does not resolve declares nothing
        return None
    if ret is None:
        return None
    return typing.get_args(ret) if typing.get_origin(ret) in (typing.Union, types.UnionType) else (ret,)


def _returns_value(member: Any, kinds: tuple[type, ...]) -> bool:
    cls = typing.get_origin(member) or member
    try:
        return inspect.isclass(cls) and not issubclass(cls, bool) and issubclass(cls, kinds)
    except TypeError:  # a TypedDict refuses class checks: it is a dict
        return Mapping in kinds and isinstance(getattr(cls, "__annotations__", None), dict) and \
            dict in getattr(cls, "__mro__", ())


def declares(obj: Any, builds: Builds) -> bool:
    """Whether ``obj`` declares it builds (``methods``) or returns (``returns``) what ``builds`` names."""
    if builds.methods and _has_methods(obj, builds.methods):
        return True
    members = _return_members(obj)
    if not members:
        return False
    if builds.methods:
        return all(_has_methods(typing.get_origin(m) or m, builds.methods) for m in members)
    return all(_returns_value(m, builds.returns) for m in members) and _takes(obj, builds.arity)


def _takes(obj: Any, arity: int | None) -> bool:
    """Whether ``obj`` takes exactly ``arity`` positional arguments (more only with defaults; no ``*args``)."""
    if arity is None:
        return True
    try:
        params = list(inspect.signature(obj).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in params if p.default is p.empty and p.kind is not p.VAR_KEYWORD]
    return (not any(p.kind is p.VAR_POSITIONAL for p in params) and len(positional) >= arity
            and len(required) == arity and all(p in positional[:arity] for p in required))


def _refusal(path: str, what: str, builds: Builds) -> InputError:
    if builds.methods:
        need = (f"a class with {', '.join(builds.methods)}, or a function annotated to return one")
    else:
        need = (f"a function of {builds.arity} positional arguments annotated to return "
                f"{' or '.join(t.__name__ for t in builds.returns)}")
    return InputError(f"{what} {path!r} is not declared to build {builds.what} ({need}): refused before it is "
                      "called")


def load_callable(path: Any, what: str, builds: Builds) -> Any:
    """The object a configuration names by ``"package.module:attribute"``, when it passes the three steps of the
    module doc for ``builds``; one-line InputError naming ``what`` otherwise. Nothing is called."""
    obj = _resolve(path, what)
    if not declares(obj, builds):
        raise _refusal(path, what, builds)
    return obj


def built(factory: Any, what: str, builds: Builds, *args: Any, **kwargs: Any) -> Any:
    """``factory(*args, **kwargs)`` (an object :func:`load_callable` returned for a slot with ``methods``) when what it
    made has every one of the slot's methods; a one-line InputError otherwise (step 4 of the module doc: the factory
    declared it builds one, this checks what it built before the slot uses it)."""
    made = factory(*args, **kwargs)
    missing = [m for m in builds.methods if not callable(getattr(made, m, None))]
    if missing:
        raise InputError(f"{what} built {type(made).__name__}, not {builds.what} (no {', '.join(missing)}): refused")
    return made


def check_factory(obj: Any, path: str, what: str, methods: tuple[str, ...]) -> Any:
    """``obj`` (already resolved from ``path``) when it is declared to build objects with ``methods`` (step 3 of
    the module doc only); InputError (one line) otherwise. Nothing is called here."""
    builds = Builds("one", methods=methods)
    if not declares(obj, builds):
        raise _refusal(path, what, builds)
    return obj


_REQUIRE_VERIFIED: ContextVar[bool] = ContextVar("agentguard_require_verified", default=False)


def verified_required() -> bool:
    """Whether the configuration being built said ``require_verified = true`` (``[stack]``, the service's setting,
    ``load_stack(..., require_verified=True)``): a policy it names must then pin a matching ``verified_digest``."""
    return _REQUIRE_VERIFIED.get()


@contextlib.contextmanager
def requiring_verified(on: bool) -> Iterator[None]:
    """Within the block, :func:`verified_required` is true when ``on`` is (or an enclosing block said so: a
    nested ``False`` never switches it off)."""
    token = _REQUIRE_VERIFIED.set(bool(on) or _REQUIRE_VERIFIED.get())
    try:
        yield
    finally:
        _REQUIRE_VERIFIED.reset(token)


def read_json_file(path: Any, what: str, *, max_depth: int = 200) -> Any:
    """The data of a JSON file a configuration names (a calibration, a tool set, a grant lexicon, an MCP tool
    list), read as strictly as every other configuration format: a duplicate key (``{"threshold": 0.1,
    "threshold": 0.9}`` read as 0.9 by ``json.loads`` while a reviewer reads 0.1; TOML refuses it, and
    :mod:`.strict_yaml` too), ``NaN``/``Infinity`` (not JSON), a lone surrogate, nesting deeper than ``max_depth``
    and text that is not UTF-8 are one-line InputErrors, through :func:`~agentguard.core.strict_json.loads_strict`.
    """
    from pathlib import Path

    from .strict_json import StrictJSONError, loads_strict

    try:
        raw = Path(str(path)).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {what} {path}: {exc.strerror}") from None
    try:
        return loads_strict(raw, max_depth=max_depth)
    except StrictJSONError as exc:
        raise InputError(f"{what} {path} is not JSON: {exc}") from None
