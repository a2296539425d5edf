"""docs/recipe.md, run as a user runs it: every ``$`` command of the page, in order, as a subprocess in a
copy of examples/recipe; the output lines the page shows must be printed. Record (a scripted LangChain
agent and an MCP client through `agentguard mcp-proxy`), learn (with the PAC report), deploy the bundle
through TOML in the library and behind `agentguard serve`; the exfiltration is stopped before
`send_email` runs. Then the page's concrete-state HTTP example, sent to the same service."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("langchain")
pytest.importorskip("mcp")
pytest.importorskip("sqlalchemy")
httpx = pytest.importorskip("httpx")

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "recipe.md"
EXAMPLE = REPO / "examples" / "recipe"
GENERATED = ("traces.jsonl", "model.json", "outbox.log", "agentguard-data", "__pycache__")


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC.read_text(), re.S)


def commands() -> list[tuple[str, list[str]]]:
    """``(command, expected output lines)`` of every ``console`` block, in page order."""
    out: list[tuple[str, list[str]]] = []
    for b in blocks("console"):
        for line in b.splitlines():
            if line.startswith("$ "):
                out.append((line[2:], []))
            elif line.strip():
                out[-1][1].append(line)
    return out


def argv(cmd: str, port: int) -> list[str]:
    """The words a shell would pass, with ``python``/``agentguard`` as this interpreter, on a free port."""
    words: list[str] = []
    for w in shlex.split(cmd.replace("8787", str(port))):
        if w == "python":
            words.append(sys.executable)
        elif w == "agentguard":
            words += [sys.executable, "-m", "agentguard"]
        else:
            words.append(re.sub(r"(^|=)python(?= )", lambda m: m.group(1) + sys.executable, w))
    return words


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_health(url: str, proc: subprocess.Popen) -> None:
    for _ in range(300):
        if proc.poll() is not None:
            raise AssertionError(f"agentguard serve exited: {proc.stderr.read().decode() if proc.stderr else ''}")
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise AssertionError("agentguard serve did not come up")


def test_the_page_shows_the_example_files():
    """The spec and the guard files the page shows are the example's files, byte for byte."""
    yaml_blocks = blocks("yaml")
    assert yaml_blocks == [(EXAMPLE / "spec.yaml").read_text()]
    toml_blocks = blocks("toml")
    assert toml_blocks[0] in (EXAMPLE / "record.toml").read_text()
    assert toml_blocks[1] in (EXAMPLE / "deploy.toml").read_text()


@pytest.mark.timeout(600)
def test_recipe_end_to_end(tmp_path):
    work = tmp_path / "recipe"
    shutil.copytree(EXAMPLE, work, ignore=shutil.ignore_patterns(*GENERATED))
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]),
           "COLUMNS": "120", "PYTHONWARNINGS": "ignore"}
    env.pop("AGENTGUARD_TOKEN", None)
    background: list[subprocess.Popen] = []
    seen: dict[str, str] = {}
    try:
        for cmd, expected in commands():
            if cmd.startswith("export "):
                k, _, v = cmd[len("export "):].partition("=")
                env[k] = v
                continue
            if cmd.endswith(" &"):
                p = subprocess.Popen(argv(cmd[:-2], port), cwd=work, env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, start_new_session=True)
                background.append(p)
                wait_health(f"http://127.0.0.1:{port}", p)
                continue
            r = subprocess.run(argv(cmd, port), cwd=work, env=env, capture_output=True, text=True, timeout=120)
            assert r.returncode == 0, f"{cmd}\n{r.stdout}\n{r.stderr}"
            lines = [ln.rstrip() for ln in r.stdout.splitlines()]
            for want in expected:
                assert want in lines, f"{cmd}: the page shows {want!r}; the command printed:\n{r.stdout}"
            seen[cmd.split()[1]] = r.stdout
        # what the page claims, checked on the artefacts
        traces = [json.loads(ln) for ln in (work / "traces.jsonl").read_text().splitlines()]
        assert len(traces) == 32 and all(s["state"] is not None for t in traces for s in t["steps"])
        assert {t["labels"]["adapter"] for t in traces} == {"langchain", "mcp"}
        assert "PAC report" in seen["learn"]
        outbox = (work / "outbox.log").read_text().splitlines()
        recorded_leaks = sum("drop@evil.example" in ln for ln in outbox)
        assert recorded_leaks == 10  # 9 LangChain + 1 MCP episodes while recording; none when deployed
        assert sum("team@corp.example" in ln for ln in outbox) == 15 + 2  # the report runs went through
        # the page's concrete state, and a step without one (the bundle computes the history)
        http = blocks("http")[0]
        path = http.split()[1]
        body = json.loads(http[http.index("{"):])
        head = {"Authorization": f"Bearer {env['AGENTGUARD_TOKEN']}"}
        base = f"http://127.0.0.1:{port}"
        v = httpx.post(base + path, json=body, headers=head, timeout=10).json()
        assert v["decision"] == "HALT" and round(v["numbers"]["probability"], 2) == 0.42, v
        a = httpx.post(base + "/v1/runs/bare/steps", headers=head, timeout=10,
                       json={"action": {"name": "search_docs", "arguments": {"query": "deploy keys"}}}).json()
        b = httpx.post(base + "/v1/runs/bare/steps", headers=head, timeout=10,
                       json={"action": {"name": "read_secret", "arguments": {"name": "deploy-key"}}}).json()
        assert a["decision"] == "ALLOW" and b["decision"] == "HALT", (a, b)
    finally:
        for p in background:
            os.killpg(p.pid, signal.SIGTERM)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
