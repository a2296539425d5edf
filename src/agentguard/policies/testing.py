"""Test generation from a policy's schema, run before verification (the "Testing" stage of VeriGuard).

Two kinds of cases, both checked against the policy's own contracts evaluated at run time:

- boundary values: for every ``int`` parameter, the ends of its ``Requires`` domain and their neighbours,
  plus ``c - 1, c, c + 1`` for every constant ``c`` the code compares that parameter with (``age < 18``
  gives 17, 18, 19); both values of every ``bool``; ``[]`` and short lists for ``List[int]``. The
  cartesian product is used when it is small, otherwise one-factor-at-a-time around a base case.
  Values just outside the domain must be refused (the run-time ``Requires`` check fails closed).
- property-based cases with hypothesis: random arguments drawn from the schema's domain.

A case passes when the policy returns a bool/int without error and every ``Ensures`` clause holds with
``Result()`` bound to the returned value (quantifiers and permissions are left to Nagini).
:func:`write_pytest` emits the same cases as a pytest file.
"""

from __future__ import annotations

import ast
import itertools
import random
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from ..core.errors import PolicyError
from .model import Param, Policy, _checked_argument
from .nagini_semantics import rewrite_expression
from .sandbox import PreconditionViolation

__all__ = ["TestFailure", "TestReport", "allow_forbidden_witness", "boundary_cases", "check_case", "run_tests",
           "vacuity_problem", "write_pytest"]

DEFAULT_INT_RANGE = (-1000, 1000)
MAX_PRODUCT = 4096


@dataclass(frozen=True)
class TestFailure:
    """A failing case: the arguments, what went wrong, and which kind of test found it."""

    __test__ = False  # not a pytest class
    args: dict[str, Any]
    message: str
    kind: str  # boundary | outside-domain | property | vacuous

    def describe(self) -> str:
        a = ", ".join(f"{k}={v!r}" for k, v in self.args.items())
        return f"[{self.kind}] {a}: {self.message}"


@dataclass
class TestReport:
    __test__ = False  # not a pytest class
    cases: int = 0
    failures: list[TestFailure] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.failures


class _ResultToName(ast.NodeTransformer):
    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "Result" and not node.args:
            return ast.copy_location(ast.Name("agres", ast.Load()), node)
        return node


def _postcondition(policy: Policy) -> Callable[..., list[bool]]:
    """Compile the Ensures clauses into ``post(*args, agres) -> [bool per clause]`` in the policy namespace."""
    cached = getattr(policy, "_post", None)
    if cached is not None:
        return cached
    # through the run time's checked helpers: a clause is read here as Nagini proves it, or not at all (``x % -2``,
    # ``True in xs``: an error, a failed case), never with a Python meaning the proof does not share
    exprs = [rewrite_expression(_ResultToName().visit(ast.parse(e, mode="eval").body)) for e in policy.ensures]
    fn = ast.FunctionDef(
        name="agpost",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(n) for n in (*policy.param_names, "agres")],
                           vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
        body=[ast.Return(ast.List([ast.Call(ast.Name("bool", ast.Load()), [e], []) for e in exprs], ast.Load()))],
        decorator_list=[], returns=None, type_params=[],
    )
    mod = ast.fix_missing_locations(ast.Module([fn], []))
    assert policy.code is not None
    ns = dict(policy.code.namespace)
    for q in ("Forall", "Exists"):  # in an Ensures a quantifier over a type is Nagini's to prove, not a failed test
        ns[q] = _lenient(ns[q])
    exec(compile(mod, f"<ensures of {policy.id}>", "exec"), ns)  # noqa: S102 - built from validated AST
    post = ns["agpost"]
    object.__setattr__(policy, "_post", post)
    return post


def _lenient(quantifier: Callable[..., bool]) -> Callable[..., bool]:
    def q(*args: Any) -> bool:
        try:
            return quantifier(*args)
        except PreconditionViolation:
            return True
    return q


def check_case(policy: Policy, args: dict[str, Any]) -> None:
    """Run one case; raise AssertionError naming the broken clause (or the error) if it fails."""
    try:
        res = policy.evaluate(args)
    except PreconditionViolation as exc:
        raise AssertionError(f"in-domain arguments refused: {exc}") from None
    except PolicyError as exc:
        raise AssertionError(f"policy failed: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - any crash is a failed test
        raise AssertionError(f"policy raised {type(exc).__name__}: {exc}") from None
    raw = (res.allow if policy.returns == "bool" else res.code)
    try:
        ok = _postcondition(policy)(*(args[n] for n in policy.param_names), raw)
    except Exception as exc:  # noqa: BLE001
        raise AssertionError(f"could not evaluate the contracts: {type(exc).__name__}: {exc}") from None
    for good, text in zip(ok, policy.ensures):
        if not good:
            raise AssertionError(f"postcondition {text} does not hold (policy returned {raw!r})")


def _constants_compared(policy: Policy) -> dict[str, set[int]]:
    """Int constants each parameter is compared with anywhere in the policy code."""
    tree = ast.parse(policy.source)
    consts = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            try:
                v = ast.literal_eval(node.value)
            except ValueError:
                continue
            if isinstance(v, int) and not isinstance(v, bool):
                consts[node.targets[0].id] = v
    out: dict[str, set[int]] = {p.name: set() for p in policy.params}
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            items = [node.left, *node.comparators]
            for a, b in zip(items, items[1:]):
                for x, y in ((a, b), (b, a)):
                    if isinstance(x, ast.Name) and x.id in out:
                        if isinstance(y, ast.Constant) and isinstance(y.value, int) and not isinstance(y.value, bool):
                            out[x.id].add(y.value)
                        elif isinstance(y, ast.Name) and y.id in consts:
                            out[x.id].add(consts[y.id])
    return out


def _int_range(p: Param) -> tuple[int, int]:
    lo = p.lo if p.lo is not None else DEFAULT_INT_RANGE[0]
    hi = p.hi if p.hi is not None else DEFAULT_INT_RANGE[1]
    return lo, hi


def _values(p: Param, compared: set[int]) -> list[Any]:
    if p.type == "bool":
        return [False, True]
    if p.type == "List[int]":
        return [[], [0], [0, 1], [-1, 5, 7]]
    lo, hi = _int_range(p)
    vals = {lo, min(lo + 1, hi), max(hi - 1, lo), hi}
    if p.lo is None or p.hi is None:
        vals |= {-1, 0, 1}
    for c in compared:
        vals |= {v for v in (c - 1, c, c + 1) if lo <= v <= hi}
    return sorted(vals)


def boundary_cases(policy: Policy) -> list[dict[str, Any]]:
    """Boundary-value cases inside the domain (product when small, else one factor at a time)."""
    compared = _constants_compared(policy)
    axes = [_values(p, compared[p.name]) for p in policy.params]
    names = policy.param_names
    size = 1
    for a in axes:
        size *= len(a)
    if size <= MAX_PRODUCT:
        return [dict(zip(names, combo)) for combo in itertools.product(*axes)]
    base = [a[len(a) // 2] for a in axes]
    cases = []
    for i, a in enumerate(axes):
        for v in a:
            c = list(base)
            c[i] = v
            cases.append(dict(zip(names, c)))
    return cases


def outside_domain_cases(policy: Policy) -> list[dict[str, Any]]:
    """One case per bounded int parameter just below / above its domain (must be refused)."""
    base = boundary_cases(policy)[0] if policy.params else {}
    out = []
    for p in policy.params:
        if p.type == "int":
            if p.lo is not None:
                out.append({**base, p.name: p.lo - 1})
            if p.hi is not None:
                out.append({**base, p.name: p.hi + 1})
    return out


def strategies(policy: Policy) -> dict[str, Any]:
    """hypothesis strategies per schema field."""
    from ..core.errors import require

    st = require("hypothesis.strategies", "policies")
    out = {}
    for p in policy.params:
        if p.type == "bool":
            out[p.name] = st.booleans()
        elif p.type == "List[int]":
            out[p.name] = st.lists(st.integers(*DEFAULT_INT_RANGE), max_size=6)
        else:
            out[p.name] = st.integers(*_int_range(p))
    return out


#: random in-domain cases tried (after the boundary cases) when looking for a case that satisfies the Requires
WITNESS_SAMPLES = 2000
#: seconds the witness search may take (contracts may call the policy's @Pure functions)
WITNESS_BUDGET_S = 5.0


def _precondition(policy: Policy) -> Callable[..., bool]:
    """The entry point's Requires as one Python predicate ``pre(*args) -> bool`` in the policy namespace, read
    through the run time's checked helpers (as the run-time Requires check reads them)."""
    cached = getattr(policy, "_pre", None)
    if cached is not None:
        return cached
    fn = next(n for n in ast.parse(policy.source).body if isinstance(n, ast.FunctionDef) and n.name == policy.entry)
    clauses = [st.value.args[0] for st in fn.body if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call)
               and isinstance(st.value.func, ast.Name) and st.value.func.id == "Requires" and st.value.args]
    test: ast.expr = ast.BoolOp(ast.And(), [ast.Call(ast.Name("bool", ast.Load()), [rewrite_expression(c)], [])
                                            for c in clauses]) if clauses else ast.Constant(True)
    if isinstance(test, ast.BoolOp) and len(test.values) == 1:
        test = test.values[0]
    body = ast.FunctionDef(
        name="agpre",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(n) for n in policy.param_names], vararg=None,
                           kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
        body=[ast.Return(test)], decorator_list=[], returns=None, type_params=[])
    assert policy.code is not None
    ns = dict(policy.code.namespace)
    exec(compile(ast.fix_missing_locations(ast.Module([body], [])), f"<requires of {policy.id}>", "exec"), ns)  # noqa: S102
    pre = ns["agpre"]
    object.__setattr__(policy, "_pre", pre)
    return pre


def _candidates(policy: Policy, samples: int) -> Iterator[dict[str, Any]]:
    """Boundary cases, then ``samples`` seeded random cases of the schema's domain (lists up to 12 elements)."""
    yield from boundary_cases(policy)
    if any(p.type == "int" and _int_range(p)[0] > _int_range(p)[1] for p in policy.params):
        return  # the bounds the Requires state are empty by themselves
    rnd = random.Random(0)
    for _ in range(samples):
        case: dict[str, Any] = {}
        for p in policy.params:
            if p.type == "bool":
                case[p.name] = rnd.random() < 0.5
            elif p.type == "List[int]":
                case[p.name] = [rnd.randint(*DEFAULT_INT_RANGE) for _ in range(rnd.randint(0, 12))]
            else:
                case[p.name] = rnd.randint(*_int_range(p))
        yield case


def allow_forbidden_witness(policy: Policy, samples: int = WITNESS_SAMPLES,
                            budget_s: float | None = None) -> dict[str, Any] | None:
    """Arguments that show the contract constrains the policy: the run time accepts them (exact types, ints of at
    most 64 bits), every Requires holds on them, and some Ensures is false when the verdict is allow (0, or True).
    None when no boundary case and none of ``samples`` seeded random in-domain cases is one, or when the search
    runs past ``budget_s`` (default :data:`WITNESS_BUDGET_S`; a contract calling a slow @Pure function: the policy's tick stops it; fail closed).
    The contract alone is evaluated (the entry point's body never runs), so it holds for a policy that allows
    everything."""
    allow: Any = True if policy.returns == "bool" else 0
    pre, post = _precondition(policy), _postcondition(policy)
    assert policy.code is not None
    tick = policy.code.tick
    end = time.perf_counter() + (WITNESS_BUDGET_S if budget_s is None else budget_s)
    tick.deadline = end
    try:
        for args in _candidates(policy, samples):
            if time.perf_counter() > end:
                return None
            try:
                for p in policy.params:
                    _checked_argument(policy.id, p, args)   # an argument the guard would refuse is no call at all
                values = [args[n] for n in policy.param_names]
                if pre(*values) is True and not all(post(*values, allow)):
                    return args
            except Exception:  # noqa: BLE001 - a clause that cannot be evaluated here is not evidence of constraint
                continue
        return None
    finally:
        tick.deadline = float("inf")


def vacuity_problem(policy: Policy) -> str | None:
    """Why the contract proves nothing about the policy a guard runs (None when it does): no argument the run time
    accepts satisfies every Requires and makes an Ensures forbid the allow verdict (:func:`allow_forbidden_witness`).
    That covers ``Requires(False)``, contradictory or unreachable preconditions (``Requires(x > 2**64)``: no int a
    guard passes), ``Ensures(True)``/``Ensures(Result() >= 0)``/``Implies(False, ...)``, and a constraint only
    outside the Requires. Nagini proves such a contract of every policy, the one that allows everything included.
    A check of the contract alone (the entry point never runs), made by every verification path
    (:meth:`~.nagini.NaginiVerifier.verify_source`, ``agentguard verify --no-tests``, :func:`run_tests`).
    Fails closed: a precondition satisfiable only where neither the boundary cases nor the seeded random cases
    reach (``Requires(x % 1000003 == 5)`` over a wide range) is reported vacuous too; bound the domain then."""
    if allow_forbidden_witness(policy) is not None:
        return None
    return ("the contract never forbids allowing (it constrains nothing): no argument the guard accepts satisfies "
            "every Requires and makes an Ensures forbid allowing (Requires never satisfiable, or Ensures that hold for the allow verdict "
            "everywhere the Requires hold); Nagini proves such a contract of a policy that allows everything")


def run_tests(policy: Policy, *, examples: int = 200, seed: int = 0) -> TestReport:
    """Run boundary, outside-domain and hypothesis cases in process; collect the failures."""
    report = TestReport()
    for args in boundary_cases(policy):
        report.cases += 1
        try:
            check_case(policy, args)
        except AssertionError as exc:
            report.failures.append(TestFailure(args, str(exc), "boundary"))
            if len(report.failures) >= 5:
                return report
    vacuous = vacuity_problem(policy) if not report.failures else None
    if vacuous:
        report.failures.append(TestFailure({}, vacuous, "vacuous"))
        return report
    for args in outside_domain_cases(policy):
        report.cases += 1
        try:
            policy.evaluate(args)
        except PreconditionViolation:
            continue
        except Exception as exc:  # noqa: BLE001
            report.failures.append(TestFailure(args, f"raised {type(exc).__name__} instead of refusing", "outside-domain"))
            continue
        report.failures.append(TestFailure(args, "arguments outside the Requires domain were not refused",
                                           "outside-domain"))
    if report.failures or not policy.params or examples <= 0:
        return report
    from ..core.errors import require

    hyp = require("hypothesis", "policies")
    last: dict[str, Any] = {}

    @hyp.settings(max_examples=examples, deadline=None, database=None, derandomize=True,
                  suppress_health_check=list(hyp.HealthCheck), phases=[hyp.Phase.generate, hyp.Phase.shrink])
    @hyp.given(**strategies(policy))
    def prop(**args: Any) -> None:
        report.cases += 1
        try:
            check_case(policy, args)
        except AssertionError:
            last.clear()
            last.update(args)
            raise

    try:
        prop()
    except AssertionError:
        try:
            check_case(policy, dict(last))
        except AssertionError as exc:
            report.failures.append(TestFailure(dict(last), str(exc), "property"))
    return report


def write_pytest(policy: Policy, policy_path: str, *, examples: int = 200) -> str:
    """The generated cases as a pytest module (text) that loads the policy file and checks each case."""
    names = policy.param_names
    strat = []
    for p in policy.params:
        if p.type == "bool":
            strat.append(f"{p.name}=st.booleans()")
        elif p.type == "List[int]":
            strat.append(f"{p.name}=st.lists(st.integers({DEFAULT_INT_RANGE[0]}, {DEFAULT_INT_RANGE[1]}), max_size=6)")
        else:
            lo, hi = _int_range(p)
            strat.append(f"{p.name}=st.integers({lo}, {hi})")
    cases = boundary_cases(policy)
    lines = [
        f'"""Generated by agentguard from {policy_path} (policy {policy.id} v{policy.version}, {policy.digest})."""',
        "import pytest",
        "from hypothesis import given, settings, strategies as st",
        "from agentguard.policies.model import load_policy",
        "from agentguard.policies.sandbox import PreconditionViolation",
        "from agentguard.policies.testing import check_case",
        "",
        f"POLICY = load_policy({policy_path!r})",
        f"BOUNDARY = {cases!r}",
        f"OUTSIDE = {outside_domain_cases(policy)!r}",
        "",
        "",
        '@pytest.mark.parametrize("args", BOUNDARY)',
        "def test_boundary(args):",
        "    check_case(POLICY, args)",
        "",
        "",
        '@pytest.mark.parametrize("args", OUTSIDE)',
        "def test_outside_domain_refused(args):",
        "    with pytest.raises(PreconditionViolation):",
        "        POLICY.evaluate(args)",
        "",
        "",
        f"@settings(max_examples={examples}, deadline=None)",
        f"@given({', '.join(strat)})",
        f"def test_property({', '.join(names)}):",
        f"    check_case(POLICY, dict({', '.join(f'{n}={n}' for n in names)}))",
        "",
    ]
    return "\n".join(lines)
