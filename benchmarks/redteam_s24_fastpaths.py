"""Red team of session 24's fast paths on the ``/v1/check`` decision path: each fast path against the old one.

- ``gate``: raw ASGI requests to :class:`agentguard.server.gate.Gate` with a stub handler (chunked and slow bodies,
  disconnects, Content-Length variants, bearer-token spellings and roles, method and path variants, the concurrency
  limit, a credentials file rewritten under it), answered by each tree; the messages sent and handler calls compared.
- ``stacks``: 300 random GuardStacks (ToolRuleGuard, NetworkGuard, nested stacks; decisions, on_error, short_circuit
  drawn) x 42 tool calls, by ``check`` and ``acheck`` in each tree; decision, reason and deciding guard compared.
- ``checkparse`` (this tree only; the oracle is the strict reader + CheckRequest): hand-written bodies, 3,000
  obfuscated bodies (``tests/server/test_checkparse.py`` ``obfuscated``) and 30,000 near-halfway decimal strings
  (orjson against ``float()``).

    PYTHONPATH=$PWD/src python benchmarks/redteam_s24_fastpaths.py --base /tmp/redbase \\
        --out benchmarks/results/redteam_s24_fastpaths.json

(``--base``: a worktree of the commit before the fast paths, ``git worktree add /tmp/redbase 251ce2c``.)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def child_gate() -> Any:
    import asyncio
    import tempfile

    sys.path.insert(0, str(REPO / "tests" / "server"))
    from svc_roles import AGENT, APPROVER, READER, credentials_file

    from agentguard.server.credentials import CredentialStore
    from agentguard.server.gate import BytesJSON, Gate
    from agentguard.server.metrics import Metrics

    tmp = Path(tempfile.mkdtemp())
    creds = credentials_file(tmp, (AGENT, READER, APPROVER))
    log = []
    block = None
    async def handler(body, principal, headers):
        log.append(("handler", body, principal.identity))
        if block is not None:
            await block.wait()
        return BytesJSON(b'{"ok":1}')
    async def app(scope, receive, send):
        log.append(("app", scope["method"], scope["path"]))
        await send({"type": "http.response.start", "status": 299, "headers": []})
        await send({"type": "http.response.body", "body": b"app"})
    def gate():
        g = Gate(app, token="legacy-tok", max_body=100, metrics=Metrics(), fast={"/v1/check": handler},
                 max_concurrency=1, body_timeout_s=0.3, credentials=CredentialStore(creds, "legacy-tok"), routes=["/v1/check"])
        g.queue_timeout_s = 0.2
        return g
    def scope(method="POST", path="/v1/check", headers=()):
        return {"type": "http", "method": method, "path": path, "raw_path": path.encode(), "query_string": b"", "headers": list(headers), "root_path": "", "scheme": "http", "server": ("t", 80), "client": ("c", 1), "http_version": "1.1", "asgi": {"version": "3.0"}}
    A = [(b"authorization", b"Bearer " + AGENT.token.encode())]
    def receiver(msgs, delays=None):
        msgs = list(msgs)
        async def receive():
            if delays and delays.get(len(msgs)):
                await asyncio.sleep(delays[len(msgs)])
            if not msgs:
                await asyncio.sleep(10)
            return msgs.pop(0)
        return receive
    def fut_receiver(msgs):
        msgs = list(msgs)
        def receive():
            f = asyncio.get_running_loop().create_future(); f.set_result(msgs.pop(0)); return f
        return receive
    async def run(g, sc, receive):
        out = []
        async def send(m): out.append({k: (sorted(v) if k == "headers" else v) for k, v in m.items()})
        try:
            await asyncio.wait_for(g(sc, receive, send), 3)
        except Exception as e:
            out.append(("EXC", type(e).__name__))
        return out
    B = lambda b, more=False: {"type": "http.request", "body": b, "more_body": more}
    cases = {
     "ok": (scope(headers=A), receiver([B(b'{"x":1}')])),
     "chunked_ok": (scope(headers=A), receiver([B(b"a"*40, True), B(b"b"*40, True), B(b"c"*10)])),
     "chunked_over": (scope(headers=A), receiver([B(b"a"*60, True), B(b"b"*60, True), B(b"c")])),
     "single_over": (scope(headers=A), receiver([B(b"a"*101)])),
     "exact_limit": (scope(headers=A), receiver([B(b"a"*100)])),
     "slow_first": (scope(headers=A), receiver([B(b"x")], {1: 1.0})),
     "slow_second": (scope(headers=A), receiver([B(b"x", True), B(b"y")], {1: 1.0})),
     "never": (scope(headers=A), receiver([])),
     "disconnect": (scope(headers=A), receiver([{"type": "http.disconnect"}])),
     "disc_after": (scope(headers=A), receiver([B(b"x", True), {"type": "http.disconnect"}])),
     "future_recv": (scope(headers=A), fut_receiver([B(b"fx")])),
     "cl_bad": (scope(headers=A + [(b"content-length", b"abc")]), receiver([B(b"x")])),
     "cl_neg": (scope(headers=A + [(b"content-length", b"-1")]), receiver([B(b"x")])),
     "cl_over": (scope(headers=A + [(b"content-length", b"101")]), receiver([B(b"x")])),
     "cl_plus": (scope(headers=A + [(b"content-length", b"+5")]), receiver([B(b"x")])),
     "cl_space": (scope(headers=A + [(b"content-length", b" 5 ")]), receiver([B(b"x")])),
     "cl_two": (scope(headers=A + [(b"content-length", b"1"), (b"content-length", b"1000")]), receiver([B(b"x")])),
     "cl_upper": (scope(headers=A + [(b"Content-Length", b"1000")]), receiver([B(b"x")])),
     "noauth": (scope(), receiver([B(b"x")])),
     "badtok": (scope(headers=[(b"authorization", b"Bearer nope")]), receiver([B(b"x")])),
     "legacy": (scope(headers=[(b"authorization", b"Bearer legacy-tok")]), receiver([B(b"x")])),
     "lower": (scope(headers=[(b"authorization", b"bearer " + AGENT.token.encode())]), receiver([B(b"x")])),
     "BEARER": (scope(headers=[(b"authorization", b"BEARER " + AGENT.token.encode())]), receiver([B(b"x")])),
     "spaces": (scope(headers=[(b"authorization", b"Bearer   " + AGENT.token.encode() + b"  ")]), receiver([B(b"x")])),
     "tab": (scope(headers=[(b"authorization", b"Bearer\t" + AGENT.token.encode())]), receiver([B(b"x")])),
     "basic": (scope(headers=[(b"authorization", b"Basic " + AGENT.token.encode())]), receiver([B(b"x")])),
     "two_auth": (scope(headers=A + A), receiver([B(b"x")])),
     "two_auth_case": (scope(headers=A + [(b"Authorization", b"Bearer x")]), receiver([B(b"x")])),
     "auth_upper_only": (scope(headers=[(b"AUTHORIZATION", b"Bearer " + AGENT.token.encode())]), receiver([B(b"x")])),
     "reader": (scope(headers=[(b"authorization", b"Bearer " + READER.token.encode())]), receiver([B(b"x")])),
     "approver": (scope(headers=[(b"authorization", b"Bearer " + APPROVER.token.encode())]), receiver([B(b"x")])),
     "GET": (scope("GET", headers=A), receiver([B(b"")])),
     "HEAD": (scope("HEAD", headers=A), receiver([B(b"")])),
     "PUT": (scope("PUT", headers=A), receiver([B(b"x")])),
     "slash": (scope(path="/v1/check/", headers=A), receiver([B(b"x")])),
     "dslash": (scope(path="//v1/check", headers=A), receiver([B(b"x")])),
     "upper": (scope(path="/V1/check", headers=A), receiver([B(b"x")])),
     "noauth_slash": (scope(path="/v1/check/"), receiver([B(b"x")])),
    }
    async def main():
        res = {}
        for name, (sc, rcv) in cases.items():
            del log[:]
            out = await run(gate(), dict(sc), rcv)
            res[name] = [out, list(log)]
        # concurrency: one blocked in handler, a second one arrives
        nonlocal block
        block = asyncio.Event()
        g = gate()
        del log[:]
        t1 = asyncio.create_task(run(g, scope(headers=A), receiver([B(b"1")])))
        await asyncio.sleep(0.05)
        o2 = await run(g, scope(headers=A), receiver([B(b"2")]))
        block.set(); o1 = await t1
        res["concurrency"] = [o1, o2, list(log), sorted(map(str, g.metrics.requests.items()))]
        block = None
        # revocation
        g = gate(); g.credentials.check_every_s = 0
        o1 = await run(g, scope(headers=A), receiver([B(b"1")]))
        creds.write_text(creds.read_text().replace(AGENT.identity, "agent-renamed") + "\n")
        os.utime(creds, ns=(10**18, 10**18))
        o2 = await run(g, scope(headers=A), receiver([B(b"1")]))
        creds.write_text("")
        o3 = await run(g, scope(headers=A), receiver([B(b"1")]))
        res["revoke"] = [o1[0]["status"], o2[0]["status"], o3[0]["status"], list(log)[-3:]]
        return res
    return asyncio.run(main())


def child_stacks() -> Any:
    import asyncio
    import random

    from agentguard.core.guard import GuardStack
    from agentguard.core.types import Context, ToolCall
    from agentguard.policies.networks import NetworkGuard
    from agentguard.policies.rules import ArgumentRule, ToolRuleGuard

    R = random.Random(7)
    D = ["reject", "halt", "escalate"]
    def tr(i):
        kw = dict(name=f"t{i}", decision=R.choice(D), unresolvable=R.choice(D))
        if R.random() < .5: kw["deny"] = R.sample(["rm_*", "exec", "bash", "curl*"], 2)
        if R.random() < .4: kw["allow"] = R.sample(["read_file", "bash", "exec", "fetch"], 2)
        if R.random() < .3: kw["halt"] = ["exec"]
        if R.random() < .3: kw["escalate"] = ["rm_*", "pay"]
        if R.random() < .4: kw["deny_commands"] = ["rm -rf"]
        if R.random() < .3: kw["deny_paths"] = ["/etc/*"]
        if R.random() < .3: kw["arguments"] = [ArgumentRule("*", "command", forbid="rm", decision=R.choice(D))]
        return ToolRuleGuard(**kw)
    def ng(i):
        return NetworkGuard(name=f"n{i}", allow=["example.com"], decision=R.choice(D)) if True else None
    def member(i, depth=0):
        x = R.random()
        if x < .6: return tr(i)
        if x < .85:
            return ng(i)
        if depth < 2: return GuardStack([member(i*10+j, depth+1) for j in range(R.randint(1,3))], name=f"s{i}", on_error=R.choice(D), short_circuit=R.random()<.5)
        return tr(i)
    calls = [ToolCall(n, a) for n in ["rm_x", "exec", "bash", "curl", "read_file", "fetch", "pay"] for a in
             [{}, {"command": "rm -rf /"}, {"command": "curl http://evil.com"}, {"path": "/etc/passwd"}, {"url": "http://10.0.0.1"}, {"command": "$(x)"}]]
    out = []
    for _ in range(300):
        st = GuardStack([member(i) for i in range(R.randint(2, 4))], on_error=R.choice(D), short_circuit=R.random() < .5)
        for c in calls:
            for v in (st.check(Context(), c), asyncio.run(st.acheck(Context(), c))):
                out.append([v.decision.name, v.reason, v.guard])
    return out


def child_checkparse() -> Any:
    import math
    import random
    import struct
    from collections import Counter
    from decimal import Decimal

    import orjson
    from hypothesis import HealthCheck, given, settings

    sys.path.insert(0, str(REPO / "tests" / "server"))
    from test_checkparse import _full, _typed, obfuscated, read_check

    def compare(raw: bytes, counts: Counter) -> None:
        fast, full = read_check(raw, 200), _full(raw, 200)
        counts[f"fast={fast is not None} full={full is not None}"] += 1
        if fast is not None and (full is None or _typed(fast) != _typed(full)):
            counts["disagree"] += 1
            counts.setdefault("examples", []).append(repr(raw[:200]))  # type: ignore[attr-defined]

    cases = [
     b'{"tool_call":{"name":"a"},"\\u0072un_id":"x","run_id":"y"}',
     b'{"tool_call":{"name":"a","\\u006eame":"b"}}',
     b'{"tool_call":{"name":"a","arguments":{"a":1,"\\u0061":2}}}',
     b'{"tool_call":{"name":"a","arguments":{"s":"\\\\\\"","t":",[{"}}}',
     b'{"tool_call":{"name":"a","arguments":{"s":"\\\\","t":",[{"}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":-0}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":-0.0}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":1E400}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":1e-400}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":-1e-400}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":4.9e-324}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":2.4703282292062328e-324}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":1e2}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":1E+2}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":9223372036854775808}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":18446744073709551615}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":-9223372036854775808}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":-9223372036854775809}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":01}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":1.}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":.5}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":+1}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":"\\udc00\\ud800"}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":"\\ud800\\udc00"}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":"\\ud800"}}}',
     b'{"tool_call":{"name":"a","arguments":{"\\udfff":1}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":"\xed\xa0\x80"}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":"\xc0\x80"}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":"\x00"}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":"\x7f"}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":"\x1f"}}}',
     b'{"tool_call":{"name":"a"}}\x00',
     b'\x00{"tool_call":{"name":"a"}}',
     b'{"tool_call":{"name":"a"}}\x0c',
     b'\x0c{"tool_call":{"name":"a"}}',
     b'{"tool_call":\x0b{"name":"a"}}',
     b'{"tool_call":\xc2\xa0{"name":"a"}}',
     b' \t\r\n{"tool_call" : {"name" :"a" } } \n',
     b'{"tool_call":{"name":"a"},}',
     b'{"tool_call":{"name":"a",}}',
     b'{"tool_call":{"name":"a","arguments":{"x":[1,]}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":[,1]}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":[1,,2]}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":[]}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":{}}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":[ \n ]}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":[ \x0c ]}}}',
     b'{"tool_call":{"name":"a","id":"c","call_id":""}}',
     b'{"tool_call":{"name":"a","id":"","call_id":"c"}}',
     b'{"tool_call":{"name":"a","id":null,"call_id":"c"}}',
     b'{"tool_call":{"name":"a","id":"c","call_id":null}}',
     b'{"tool_call":{"name":"a"},"run_id":"abc\\n"}',
     b'{"tool_call":{"name":"a"},"run_id":"abc\\u0000"}',
     b'{"tool_call":{"name":"a"},"run_id":"\\u0661"}',
     b'{"tool_call":{"name":"a"},"run_id":"\xd9\xa1"}',
     b'{"tool_call":{"name":"\\u0000"}}',
     b'{"tool_call":{"name":"a"},"metadata":null}',
     b'{"tool_call":{"name":"a"},"metadata":"x"}',
     b'{"tool_call":{"name":"a","arguments":null}}',
     b'{"tool_call":{"name":"a","arguments":[]}}',
     b'{"tool_call":{"name":"a"},"run_id":null}',
     b'{"tool_call":{"name":"a"},"extra":null}',
     b'{"tool_call":null}',
     b'[{"tool_call":{"name":"a"}}]',
     b'{"tool_call":{"name":"a"}}{"tool_call":{"name":"a"}}',
     b'{"tool_call":{"name":"a"}} {}',
     b'{"tool_call":{"name":"a","arguments":{"x":true,"y":false,"z":null}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":tRue}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":"\\/\\b\\f\\n\\r\\t\\u00e9\\U00e9"}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":"\\/\\b\\f\\n\\r\\t\\u00E9"}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":"\\a"}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":Infinity}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":-Infinity}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":NaN}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":1' + b'0'*5000 + b'}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":0.' + b'0'*5000 + b'1}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":1.' + b'0'*5000 + b'1}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":9007199254740993.0}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":1.7976931348623157e308}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":1.7976931348623158e308}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":1.7976931348623159e308}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":2.2250738585072011e-308}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":0.1e1}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":1e0}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":-0e0}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":1E-0}}}',
     b'\xef\xbb\xbf{"tool_call":{"name":"a"}}',
     b'\xfe\xff{"tool_call":{"name":"a"}}',
     b'{"tool_call":{"name":"a","arguments":{"\xef\xbb\xbfx":1}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":"\xf4\x90\x80\x80"}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":"\xf0\x9f\x98\x80"}}}',
     b'{"tool_call":{"name":"a","arguments":{"x":"\xe0\x80\xaf"}}}',
    ]
    for d in (63,64,65):
        cases.append(b'{"tool_call":{"name":"a","arguments":{"x":' + b'['*d + b']'*d + b'}}}')
        cases.append(b'{"tool_call":{"name":"a"},"metadata":' + b'{"a":'*(d) + b'1' + b'}'*d + b'}')
        cases.append(b'['*d + b']'*d)
    hand: Counter = Counter()
    for raw in cases:
        compare(raw, hand)
    gen: Counter = Counter()

    @settings(max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(raw=obfuscated())
    def run(raw: bytes) -> None:
        compare(raw, gen)

    run()
    rnd, floats = random.Random(1), Counter()
    for _ in range(30000):
        x = struct.unpack("<d", struct.pack("<Q", rnd.getrandbits(64)))[0]
        if not math.isfinite(x):
            continue
        h = (Decimal(x) + Decimal(math.nextafter(x, math.inf))) / 2
        for t in (repr(x), format(h, ".40e"), format(h, ".17e"), format(h, ".25e")):
            try:
                a, f = orjson.loads(t), float(t)
            except (ValueError, OverflowError):
                continue
            floats["compared"] += 1
            floats["disagree"] += type(a) is float and repr(a) != repr(f)
    return {"hand": dict(hand), "hand_bodies": len(cases), "generated": dict(gen), "floats": dict(floats),
            "orjson": orjson.__version__}


def _child(tree: Path, mode: str) -> Any:
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    got = subprocess.run([sys.executable, __file__, "--child", mode], env=env, capture_output=True, text=True,
                         check=True, cwd=REPO)
    return json.loads(got.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", type=Path)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--child", choices=("gate", "stacks", "checkparse"))
    a = ap.parse_args()
    if a.child:
        fn = {"gate": child_gate, "stacks": child_stacks, "checkparse": child_checkparse}[a.child]
        print(json.dumps(fn(), default=repr, sort_keys=True))
        return
    res: dict[str, Any] = {"command": " ".join(["python", "benchmarks/redteam_s24_fastpaths.py", *sys.argv[1:]])}
    for mode in ("gate", "stacks"):
        old, new = _child(a.base, mode), _child(REPO, mode)
        if mode == "gate":
            res[mode] = {"scenarios": len(new), "differ": sorted(k for k in new if old.get(k) != new[k]),
                         "statuses": {k: [m.get("status") for m in v[0] if isinstance(m, dict) and "status" in m]
                                      for k, v in new.items() if k not in ("concurrency", "revoke")},
                         "revoke": new["revoke"][:3]}
        else:
            res[mode] = {"answers": len(new), "differ": sum(x != y for x, y in zip(old, new)) + abs(len(old) - len(new))}
    res["checkparse"] = _child(REPO, "checkparse")
    text = json.dumps(res, indent=1, sort_keys=True)
    if a.out:
        a.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
