"""The one YAML reader for files that configure guards (``agentguard.yaml``) and spec files (``*.yaml``).

PyYAML's ``SafeLoader`` (no tag builds an object or runs code: ``!!python/object`` is an error; a maintained
parser rather than a hand-written one), with two refusals a configuration never needs and an attacker uses:

- **duplicate mapping keys**: PyYAML keeps the last one silently, so a second ``deny: []`` under a guard, or a
  second ``guards:`` appended to a file, replaced what the first said (TOML refuses a duplicate key; JSON goes
  through :func:`~agentguard.core.strict_json.loads_strict`, which refuses them too);
- **aliases** (``*a``): nine nested lists of nine aliases are 9**9 items once a value is read as text (a billion
  laughs); a configuration writes each value where it is used.

Every refusal is a :class:`StrictYAMLError` whose message is one line naming the line of the file.
"""

from __future__ import annotations

from typing import Any

__all__ = ["StrictYAMLError", "loads_strict_yaml"]


class StrictYAMLError(ValueError):
    """The text is not YAML, or uses a duplicate key or an alias (one-line message)."""


def loads_strict_yaml(text: str) -> Any:
    """The data of the YAML document ``text``; StrictYAMLError (one line) when it is refused."""
    import yaml

    class _Loader(yaml.SafeLoader):
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

    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        first = (str(getattr(exc, "problem", None) or exc).splitlines() or ["not YAML"])[0]
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise StrictYAMLError(f"{first}{at}") from None
    except (ValueError, TypeError, RecursionError) as exc:  # an unhashable key, a too-deep document
        raise StrictYAMLError(f"{type(exc).__name__}") from None
