"""The size-checked operations of the bounded policy language (see :mod:`agentguard.policies.sandbox`).

Each refuses, *before* computing, a result that would exceed the language's bounds, so one operation costs
at most O(MAX_SEQ) time and memory whatever its operands: ``+``/``*`` on strings, lists and tuples give at
most :data:`MAX_SEQ` cells (elements plus the characters of the strings inside: see :func:`cells`), ints
stay within :data:`MAX_INT_BITS` bits, ``%`` is arithmetic only (no string formatting, so no
``'%0500000000d' % x``), ``//`` and ``%`` need a positive divisor (Nagini proves them with Euclidean division,
CPython floors), and list/tuple displays stay flat.

Where Nagini 1.2.0's model of an operation and CPython disagree (session 18, each measured with Nagini: see
:mod:`agentguard.policies.nagini_semantics`), the helper refuses the operands on which they differ (PolicyError:
the guard fails closed), so a value the run time computes is always the one the proof reasoned about:

- ``seq * n`` (:func:`mul`): Nagini's ``list___mul__`` says element ``i`` of the result is ``seq[i // n]``
  (``[3, 0] * 2`` is ``[3, 3, 0, 0]`` to the proof, ``[3, 0, 3, 0]`` to CPython): refused for a sequence of two or
  more elements repeated more than once (where the two agree: fewer elements, or ``n <= 1``, it runs);
- bools in sequences (:func:`flat`, :func:`contains`): Nagini compares sequence elements as boxed references,
  and ``True`` (a bool box) is never the int box ``1`` (``True in [1, 2]`` and ``1 in [True]`` are False to the
  proof, True to CPython; ``max([True, 0])`` is 0 to the proof): a list/tuple never holds a bool, and ``in``
  refuses a bool on either side;
- ``int(b)`` of a bool (:func:`to_int`): Nagini's ``int___int__`` returns its argument, so ``int(True)`` stays
  the bool box to the proof (never ``in [1]``): the run time's ``int`` returns the bool unchanged as well.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import PolicyError

__all__ = ["MAX_INT_BITS", "MAX_SEQ", "RUNTIME_HELPERS", "add", "cells", "contains", "flat", "floordiv", "mod", "mul",
           "no_return", "sub", "to_int"]

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


def cells(v: Any) -> int:
    """The size of a value in the language's unit: a string's characters; a list's/tuple's elements plus the
    characters of the strings in it (``[s] * 10**4`` of a 10**4-character ``s`` is 10**8 cells, not 10**4), so a
    value of at most MAX_SEQ cells holds at most MAX_SEQ characters whatever its shape; 1 for anything else."""
    if isinstance(v, str):
        return len(v)
    if isinstance(v, (list, tuple)):
        return len(v) + sum(len(x) for x in v if isinstance(x, str))
    return 1


def _check_cells(n: int) -> None:
    if n > MAX_SEQ:
        raise _size_error(f"a value larger than {MAX_SEQ} cells (elements plus the characters of strings in it)")


def add(a: Any, b: Any) -> Any:
    if isinstance(a, _SEQ) and isinstance(b, _SEQ):
        _check_cells(cells(a) + cells(b))
    return _check_int(a + b)


def sub(a: Any, b: Any) -> Any:
    return _check_int(a - b)


def _semantic_error(what: str) -> PolicyError:
    return PolicyError(f"policy refused at run time: {what} (Nagini's model and CPython disagree here, so the "
                       "proof is not about this value)")


def mul(a: Any, b: Any) -> Any:
    for x, n in ((a, b), (b, a)):
        if isinstance(x, _SEQ) and isinstance(n, int):
            _check_cells(cells(x) * max(n, 0))
            if not isinstance(x, str) and len(x) > 1 and n > 1:
                raise _semantic_error(f"repeating a {len(x)}-element {type(x).__name__} {n} times (Nagini proves "
                                      "element i of seq * n is seq[i // n], CPython makes seq[i % len(seq)])")
    if type(a) is int and type(b) is int and a.bit_length() + b.bit_length() > MAX_INT_BITS:
        raise _size_error(f"an int wider than {MAX_INT_BITS} bits")
    return a * b


def _positive_divisor(b: Any, op: str) -> None:
    """Nagini 1.2.0 proves ``//`` and ``%`` with the SMT solver's Euclidean division, CPython floors: with a
    negative divisor they differ (``7 // -2`` is -4 to CPython and -3 to the proof, ``7 % -2`` is -1 and 1), so a
    policy "verified" on them could allow at run time what its contract forbids (session 13, measured with
    Nagini). With a positive divisor both agree; anything else is refused (PolicyError: the guard fails closed)."""
    if type(b) is not int or b <= 0:
        raise PolicyError(f"{op} needs a positive int divisor (Nagini's Euclidean division and CPython's floor "
                          f"division differ for a negative one), got {b!r}")


def mod(a: Any, b: Any) -> Any:
    if not (isinstance(a, (int, float)) and isinstance(b, (int, float))):
        raise _size_error("% is arithmetic only (no string formatting)")
    _positive_divisor(b, "%")
    return a % b


def floordiv(a: Any, b: Any) -> Any:
    _positive_divisor(b, "//")
    return a // b


def flat(seq: Any) -> Any:
    for x in seq:
        if isinstance(x, (list, tuple)):
            raise _size_error("lists/tuples may not contain lists/tuples")
        if type(x) is bool:
            raise _semantic_error("a list/tuple holding a bool (to Nagini True is never the element 1)")
    _check_cells(cells(seq))
    return seq


def contains(item: Any, container: Any) -> bool:
    """``item in container`` as Nagini proves it: for a list/tuple, neither side may be a bool (Nagini compares
    elements as boxed references: ``True in [1]`` is False to the proof, True to CPython)."""
    # only an item equal to a bool (the ints 0 and 1) can meet one among the elements; lists/tuples hold no bools
    # anyway (flat, the load-time checks, exact-int arguments), so the scan is a second line that costs nothing on
    # other items (a 10,000-element `in` stays one C-level scan)
    if isinstance(container, (list, tuple)) and (type(item) is bool or (
            type(item) is int and (item == 0 or item == 1) and any(type(x) is bool for x in container))):
        raise _semantic_error("a bool in a list/tuple membership test (to Nagini True is never the element 1)")
    return item in container


def to_int(value: Any) -> Any:
    """``int(value)`` as Nagini proves it: its ``int___int__`` returns the argument itself, so ``int(True)`` is still
    the bool ``True`` here too (arithmetic on it is the same either way; in a list/tuple or an ``in`` test the
    bool is refused, and an int policy returning it fails closed). Anything else: CPython's ``int``."""
    if type(value) is bool:
        return value
    return _check_int(int(value))  # int('9' * 4000) is a 13,000-bit int: the language's ints stay within MAX_INT_BITS


def no_return(function: str) -> None:
    """What the end of every function body runs: a policy function that falls off its end returns None to CPython,
    while Nagini may have read the last conditional ``return`` of a @Pure function as unconditional (measured in
    session 18: ``if x > 5: return 1`` alone proves the result is 1 for every x). Refused (the guard fails closed)."""
    raise PolicyError(f"policy refused at run time: function {function} ended without a return")


#: the helpers the sandbox's run-time rewriter routes operators and displays to (name in the policy namespace)
RUNTIME_HELPERS = {"_ag_add": add, "_ag_sub": sub, "_ag_mul": mul, "_ag_mod": mod, "_ag_fdiv": floordiv,
                   "_ag_flat": flat, "_ag_in": contains, "_ag_no_return": no_return}
