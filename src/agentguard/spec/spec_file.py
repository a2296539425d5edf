"""Reading a spec file (YAML or JSON) into plain data, refusing what a spec never needs and an attacker uses.

YAML goes through :func:`~agentguard.core.strict_yaml.loads_strict_yaml` (the reader the guard-stack
configuration uses too): PyYAML's ``SafeLoader`` (no tag builds an object or runs code: ``!!python/object`` is an
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
from ..core.strict_yaml import StrictYAMLError, loads_strict_yaml

__all__ = ["MAX_SPEC_CHARS", "read_document"]

#: the longest spec file read (characters): a spec is a few predicates, not data
MAX_SPEC_CHARS = 1_000_000


def read_document(text: str, path: str, *, yaml: bool) -> Any:
    """The data of a spec file's ``text`` (YAML when ``yaml``, else JSON); ParseError naming ``path`` if refused."""
    if len(text) > MAX_SPEC_CHARS:
        raise ParseError(f"spec {path} is longer than {MAX_SPEC_CHARS} characters")
    if yaml:
        try:
            return loads_strict_yaml(text)
        except StrictYAMLError as exc:
            raise ParseError(f"spec {path} is not valid YAML: {exc}") from None
    try:  # the one strict reader: duplicate keys (a second "unsafe" would win), NaN, depth, surrogates
        return loads_strict(text)
    except StrictJSONError as exc:
        raise ParseError(f"spec {path} is not valid JSON: {exc}") from None
