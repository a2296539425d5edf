"""Reading a spec file (YAML or JSON) into plain data, refusing what a spec never needs and an attacker uses.

YAML goes through PyYAML's ``SafeLoader`` (no tag builds an object or runs code: ``!!python/object`` is an
error), with two more refusals: **aliases** (``*a``; nine nested lists of nine aliases are 9**9 items once a
value is read as text: a billion laughs) and **duplicate keys** (a second ``unsafe:`` appended to a file would
silently win). JSON is read by the one strict reader (:func:`~agentguard.core.strict_json.loads_strict`: duplicate
keys, NaN, depth, lone surrogates refused). A file longer than :data:`MAX_SPEC_CHARS`
is refused before it is parsed. Every refusal is a one-line :class:`~agentguard.core.errors.ParseError`.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import ParseError
from ..core.strict_json import StrictJSONError, loads_strict

__all__ = ["MAX_SPEC_CHARS", "read_document"]

#: the longest spec file read (characters): a spec is a few predicates, not data
MAX_SPEC_CHARS = 1_000_000


def _load_yaml(text: str, path: str) -> Any:
    """YAML through PyYAML's SafeLoader (no tags that build objects or run code), refusing what a spec never needs
    and an attacker uses: aliases (``*a``: a billion laughs expands to 9**9 items when read as text) and
    duplicate mapping keys (the last ``unsafe:`` would silently win)."""
    import yaml

    class _Loader(yaml.SafeLoader):
        def compose_node(self, parent: Any, index: Any) -> Any:  # type: ignore[override]
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise yaml.YAMLError(f"aliases are not allowed in a spec (line {event.start_mark.line + 1})")
            return super().compose_node(parent, index)

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:  # type: ignore[override]
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                if key in seen:
                    raise yaml.YAMLError(f"duplicate key {key!r} (line {key_node.start_mark.line + 1})")
                seen.add(key)
            return super().construct_mapping(node, deep)

    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise ParseError(f"spec {path} is not valid YAML: {str(exc).splitlines()[0]}") from None
    except (ValueError, TypeError, RecursionError) as exc:  # an unhashable key, a too-deep document
        raise ParseError(f"spec {path} is not valid YAML: {type(exc).__name__}") from None


def read_document(text: str, path: str, *, yaml: bool) -> Any:
    """The data of a spec file's ``text`` (YAML when ``yaml``, else JSON); ParseError naming ``path`` if refused."""
    if len(text) > MAX_SPEC_CHARS:
        raise ParseError(f"spec {path} is longer than {MAX_SPEC_CHARS} characters")
    if yaml:
        return _load_yaml(text, path)
    try:  # the one strict reader: duplicate keys (a second "unsafe" would win), NaN, depth, surrogates
        return loads_strict(text)
    except StrictJSONError as exc:
        raise ParseError(f"spec {path} is not valid JSON: {exc}") from None
