"""The one YAML reader for files that configure guards (``agentguard.yaml``) and spec files (``*.yaml``).

PyYAML's ``SafeLoader`` (no tag builds an object or runs code: ``!!python/object`` is an error; a maintained
parser rather than a hand-written one), with two refusals a configuration never needs and an attacker uses:

- **duplicate mapping keys**: PyYAML keeps the last one silently, so a second ``deny: []`` under a guard, or a
  second ``guards:`` appended to a file, replaced what the first said (TOML refuses a duplicate key; JSON goes
  through :func:`~agentguard.core.strict_json.loads_strict`, which refuses them too);
- **aliases** (``*a``): nine nested lists of nine aliases are 9**9 items once a value is read as text (a billion
  laughs); a configuration writes each value where it is used.

Every refusal is a :class:`StrictYAMLError` whose message is one line naming the line of the file.

Plain (unquoted) scalars are typed by the **YAML 1.2 core schema**, not PyYAML's YAML 1.1 one, so a value means
what it says: ``yes``/``no``/``on``/``off``/``y``/``n`` are text (1.1 read ``deny_commands: [yes]`` as ``[True]``
and ``name: no`` as ``False``, which ``str()`` turned into ``"False"``), ``0777`` is the decimal 777 (1.1: octal
511; ``0o777`` is octal), ``1:20`` is text (1.1: sexagesimal 80), ``1_000`` is text, ``2024-01-01`` is text (1.1: a
``datetime.date`` no guard reads); ``true``/``false``, ``null``/``~``, ints, floats, ``.inf`` and ``.nan`` as in 1.2
(and :mod:`agentguard.core.limits` refuses a ``nan`` where a number is read).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["StrictYAMLError", "loads_strict_yaml"]


class StrictYAMLError(ValueError):
    """The text is not YAML, or uses a duplicate key or an alias (one-line message)."""


#: the YAML 1.2 core schema's implicit types (https://yaml.org/spec/1.2.2/#1032-tag-resolution)
_CORE = [
    ("tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"), [*"~nN", ""]),
    ("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")),
    ("tag:yaml.org,2002:int", re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"), list("-+0123456789")),
    ("tag:yaml.org,2002:float", re.compile(
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"),
     list("-+.0123456789")),
]


def _core_int(loader: Any, node: Any) -> int:
    value = loader.construct_scalar(node)
    if value.startswith(("0o", "0x")):
        return int(value, 0)
    return int(value, 10)  # 0777 is 777, as in YAML 1.2 (1.1 and PyYAML: octal 511)


def _core_float(loader: Any, node: Any) -> float:
    value = str(loader.construct_scalar(node))
    low = value.lower()
    if low.endswith(".inf"):
        return float("-inf") if low.startswith("-") else float("inf")
    if low == ".nan":
        return float("nan")
    return float(value)


def loads_strict_yaml(text: str) -> Any:
    """The data of the YAML document ``text``; StrictYAMLError (one line) when it is refused."""
    import yaml

    class _Loader(yaml.SafeLoader):
        yaml_implicit_resolvers: dict[Any, Any] = {}  # the 1.2 core schema only (module doc), set below

        def compose_node(self, parent: Any, index: Any) -> Any:  # type: ignore[override]
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise yaml.YAMLError(f"aliases are not allowed (line {event.start_mark.line + 1})")
            return super().compose_node(parent, index)

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: list[Any] = []
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                if key in seen:  # a list, not a set: an unhashable key is PyYAML's own error below
                    raise yaml.YAMLError(f"duplicate key {key!r} (line {key_node.start_mark.line + 1})")
                seen.append(key)
            return super().construct_mapping(node, deep)

    for tag, regexp, starts in _CORE:
        _Loader.add_implicit_resolver(tag, regexp, starts)
    _Loader.add_constructor("tag:yaml.org,2002:int", _core_int)
    _Loader.add_constructor("tag:yaml.org,2002:float", _core_float)
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        first = (str(getattr(exc, "problem", None) or exc).splitlines() or ["not YAML"])[0]
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise StrictYAMLError(f"{first}{at}") from None
    except (ValueError, TypeError, RecursionError) as exc:  # an unhashable key, a too-deep document
        raise StrictYAMLError(f"{type(exc).__name__}") from None
