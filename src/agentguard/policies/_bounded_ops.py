"""The size-checked operations of the bounded policy language (see :mod:`agentguard.policies.sandbox`).

Each refuses, *before* computing, a result that would exceed the language's bounds, so one operation costs
at most O(MAX_SEQ) time and memory whatever its operands: ``+``/``*`` on strings, lists and tuples give at
most :data:`MAX_SEQ` elements, ints stay within :data:`MAX_INT_BITS` bits, ``%`` is arithmetic only (no
string formatting, so no ``'%0500000000d' % x``), and list/tuple displays stay flat.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import PolicyError

__all__ = ["MAX_INT_BITS", "MAX_SEQ", "add", "flat", "mod", "mul", "sub"]

#: the longest string/list/tuple a policy may build or hold as a constant (elements or characters)
MAX_SEQ = 10_000
#: the widest int a policy may build (bits); arguments are at most 64 bits
MAX_INT_BITS = 256
_SEQ = (str, list, tuple)


def _size_error(what: str) -> PolicyError:
    return PolicyError(f"policy refused at run time: {what}")


def _check_int(v: Any) -> Any:
    if type(v) is int and v.bit_length() > MAX_INT_BITS:
        raise _size_error(f"an int wider than {MAX_INT_BITS} bits")
    return v


def add(a: Any, b: Any) -> Any:
    if isinstance(a, _SEQ) and isinstance(b, _SEQ) and len(a) + len(b) > MAX_SEQ:
        raise _size_error(f"a sequence longer than {MAX_SEQ}")
    return _check_int(a + b)


def sub(a: Any, b: Any) -> Any:
    return _check_int(a - b)


def mul(a: Any, b: Any) -> Any:
    for x, n in ((a, b), (b, a)):
        if isinstance(x, _SEQ) and isinstance(n, int) and len(x) * max(n, 0) > MAX_SEQ:
            raise _size_error(f"a sequence longer than {MAX_SEQ}")
    if type(a) is int and type(b) is int and a.bit_length() + b.bit_length() > MAX_INT_BITS:
        raise _size_error(f"an int wider than {MAX_INT_BITS} bits")
    return a * b


def mod(a: Any, b: Any) -> Any:
    if not (isinstance(a, (int, float)) and isinstance(b, (int, float))):
        raise _size_error("% is arithmetic only (no string formatting)")
    return a % b


def flat(seq: Any) -> Any:
    for x in seq:
        if isinstance(x, (list, tuple)):
            raise _size_error("lists/tuples may not contain lists/tuples")
    return seq


