"""The lexical half of the PRISM reader: statements, exact arithmetic, guards and updates.

Everything here is text -> numbers with line numbers for errors; :func:`agentguard.predictive.prism.read_prism`
assembles the DTMC. Probabilities are exact (``fractions.Fraction``, or integer pairs
``(numerator, denominator)`` on the fast path of learned models).
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Mapping
from fractions import Fraction

from ..core.errors import ModelError, ParseError

__all__ = [
    "FAST_GUARD",
    "IDENT",
    "STORM_RESERVED_LABELS",
    "boolean_only",
    "eval_num",
    "fast_row",
    "fraction_str",
    "split_updates",
    "statements",
    "subst_consts",
    "update_row",
]

IDENT = r"[A-Za-z_][A-Za-z_0-9]*"
FAST_GUARD = re.compile(rf"^\s*({IDENT})\s*=\s*(\d+)\s*$")
PRISM_NUMBER = re.compile(r"(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")  # PRISM's numeric literals (decimal only)


# --- exact arithmetic on PRISM expressions ----------------------------------------------------
def eval_num(expr: str, env: Mapping[str, Fraction], line: int) -> Fraction:
    """Evaluate an arithmetic PRISM expression exactly (numbers, names in env, + - * /, parentheses)."""
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError:
        raise ParseError(f"line {line}: cannot parse expression {expr.strip()!r}") from None

    def ev(node) -> Fraction:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
                and not isinstance(node.value, bool):
            seg = ast.get_source_segment(expr.strip(), node)
            if seg is None or not PRISM_NUMBER.fullmatch(seg):
                # Python reads 0x1, 0o7, 0b1, 1_000 and 1j; PRISM does not (its literals are decimal)
                raise ParseError(f"line {line}: {seg or node.value!r} is not a PRISM number in {expr.strip()!r} "
                                 "(PRISM numbers are decimal: 1, 0.5, 1e-3)")
            return Fraction(seg)
        if isinstance(node, ast.Name):
            if node.id not in env:
                raise ParseError(f"line {line}: unknown constant or variable {node.id!r} in {expr.strip()!r}")
            return Fraction(env[node.id])
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = ev(node.operand)
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
            a, b = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Add):
                return a + b
            if isinstance(node.op, ast.Sub):
                return a - b
            if isinstance(node.op, ast.Mult):
                return a * b
            if b == 0:
                raise ParseError(f"line {line}: division by zero in {expr.strip()!r}")
            return a / b
        raise ParseError(f"line {line}: unsupported expression {expr.strip()!r}")

    return ev(tree)


def subst_consts(expr: str, consts: Mapping[str, Fraction]) -> str:
    """Replace integer-valued constants in a guard/label expression by their values."""
    if not consts:
        return expr
    return re.sub(rf"\b({IDENT})\b(?!\s*')",
                  lambda m: str(consts[m.group(1)].numerator)
                  if m.group(1) in consts and consts[m.group(1)].denominator == 1 else m.group(1), expr)


def fraction_str(f: Fraction) -> str:
    return str(f.numerator) if f.denominator == 1 else f"{f.numerator}/{f.denominator}"


# --- splitting the text into statements with line numbers --------------------------------------
def statements(text: str) -> list[tuple[int, str]]:
    """Split on ';' and on the keywords that end without one; return (line, statement) pairs."""
    out: list[tuple[int, str]] = []
    buf: list[str] = []
    start = 0
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("//", 1)[0]
        for part in re.split(r"(;)", line):
            if part == ";":
                stmt = " ".join(buf).strip()
                if not stmt:
                    raise ParseError(f"line {lineno}: empty statement")
                out.append((start, stmt))
                buf = []
                continue
            for tok in re.split(r"(\bdtmc\b|\bprobabilistic\b|\bmdp\b|\bctmc\b|\bpta\b|\bmodule\s+"
                                rf"{IDENT}|\bendmodule\b)", part):
                if not tok.strip():
                    continue
                if re.fullmatch(r"dtmc|probabilistic|mdp|ctmc|pta|endmodule|module\s+" + IDENT, tok.strip()):
                    if " ".join(buf).strip():
                        raise ParseError(f"line {start}: statement not terminated by ';' (before {tok.strip()!r} "
                                         f"on line {lineno})")
                    buf = []
                    out.append((lineno, tok.strip()))
                    continue
                if not " ".join(buf).strip():
                    start = lineno
                buf.append(tok)
    if " ".join(buf).strip():
        raise ParseError(f"line {start}: statement not terminated by ';': {' '.join(buf).strip()[:60]!r}")
    return out



# --- updates -------------------------------------------------------------------------------------
def split_updates(upd: str, line: int) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in upd:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "+" and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    if depth != 0:
        raise ParseError(f"line {line}: unbalanced parentheses in {upd.strip()!r}")
    # a top-level '+' also adds inside a probability (``1/4+1/4 : (s'=0)``, as PRISM and Storm read it):
    # a piece with no primed update is the left part of the next piece's probability, not an update
    merged: list[str] = []
    pending = ""
    for part in parts:
        part = f"{pending}+{part}" if pending else part
        pending = part if ("'" not in part and part.strip() != "true") else ""
        if not pending:
            merged.append(part)
    if pending:
        merged.append(pending)  # a trailing piece with no update: update_row names it
    return merged


def update_row(parts: list[str], var: str, lo: int, hi: int, value: int, consts: Mapping[str, Fraction],
         line: int) -> dict[int, tuple[int, int]]:
    """One command's distribution from state ``var=value``: successor index -> (numerator, denominator)."""
    row: dict[int, Fraction] = {}
    env = dict(consts)
    env[var] = Fraction(value)
    for part in parts:
        m = re.fullmatch(rf"\s*(?:(.+?)\s*:\s*)?\(\s*({IDENT})\s*'\s*=\s*(.+?)\s*\)\s*", part, re.DOTALL)
        if m is None:
            if part.strip() != "true":
                raise ParseError(f"line {line}: cannot parse update {part.strip()!r}")
            pr, tgt = Fraction(1), Fraction(value)  # 'true': stay where you are
        else:
            if m.group(2) != var:
                raise ParseError(f"line {line}: update of unknown variable {m.group(2)!r}")
            pr = eval_num(m.group(1), env, line) if m.group(1) else Fraction(1)
            tgt = eval_num(m.group(3), env, line)
        if pr < 0 or pr > 1:
            raise ModelError(f"state {var}={value}: probability {fraction_str(pr)} outside [0, 1] (line {line})")
        if tgt.denominator != 1 or not lo <= int(tgt) <= hi:
            raise ModelError(f"state {var}={value}: successor {var}={tgt} outside [{lo}..{hi}] (line {line})")
        j = int(tgt) - lo
        row[j] = row.get(j, Fraction(0)) + pr
    return {j: (f.numerator, f.denominator) for j, f in row.items()}


def fast_row(upd: str, var: str, lo: int, hi: int, value: int, line: int) -> dict[int, tuple[int, int]] | None:
    """The common learned-model form ``a/b : (s'=j) + ...`` with integers only, parsed by one regex
    (pure integer arithmetic, no Fraction objects); None when the text has any other form."""
    item = rf"\s*(\d+)(?:\s*/\s*(\d+))?\s*:\s*\(\s*{re.escape(var)}\s*'\s*=\s*(\d+)\s*\)\s*"
    if not re.fullmatch(rf"(?:{item}\+)*{item}", upd):
        return None
    row: dict[int, tuple[int, int]] = {}
    for a, b, t in re.findall(item, upd):
        num, den = int(a), int(b) if b else 1
        if den == 0:
            raise ParseError(f"line {line}: division by zero in {a}/{b}")
        tgt = int(t)
        if not lo <= tgt <= hi:
            raise ModelError(f"state {var}={value}: successor {var}={tgt} outside [{lo}..{hi}] (line {line})")
        if num > den:
            raise ModelError(f"state {var}={value}: probability {a}/{b} outside [0, 1] (line {line})")
        g = math.gcd(num, den)
        num, den = num // g, den // g
        j = tgt - lo
        if j in row:  # the same successor twice: add exactly
            f = Fraction(*row[j]) + Fraction(num, den)
            num, den = f.numerator, f.denominator
        row[j] = (num, den)
    return row


#: names Storm's grammar refuses as a label (``expecting <fresh label name>``; found by running Storm
#: on each keyword in tests/predictive/test_prism_vs_storm.py): the native reader refuses them too,
#: instead of letting ``label "init"`` replace the built-in initial-state label
STORM_RESERVED_LABELS = frozenset({"bool", "ceil", "const", "ctmc", "dtmc", "endinit", "endmodule", "endrewards",
                                   "false", "floor", "init", "int", "ma", "max", "mdp", "min", "module", "pomdp",
                                   "pta", "rewards", "smg", "true"})


def boolean_only(formula: object, what: str, line: int) -> None:
    """A guard or label definition is a Boolean expression over the variable, as Storm requires: no
    label (labels cannot refer to labels in a model file) and no bare integer read as ``!= 0``."""
    bad = sorted(name for kind, name in formula.names() if kind in ("label", "ident"))  # type: ignore[attr-defined]
    if bad:
        raise ParseError(f"line {line}: {what}: {bad[0]!r} is not a Boolean expression over the variable "
                         "(compare it, e.g. s=1; labels cannot be used here)")
