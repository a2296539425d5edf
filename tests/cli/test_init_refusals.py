"""Values any ``agentguard`` command must refuse in one line (exit 2) instead of failing later, or not at all.

Numbers: every integer option declares its range, every float option is finite, so a value out of range is one
usage line naming the option, before the command does any work.

Before: ``--seed -1`` reached numpy (``error: unexpected ValueError: expected non-negative integer``, exit 3; for
``bench driving`` after loading its critics), ``litellm-guardrail --max-body 0`` started serving with a limit no
request can meet, ``report shadow --limit -1`` dropped the last entry silently, ``laws --steps-per-unit 0`` and
``synthesize --rounds 0`` were accepted. The class is fixed in one place per kind: ``min=``/``max=`` on the option
(checked here over the whole command tree) and :func:`agentguard.cli.finite_numbers` for NaN and infinities.

Vocabulary and addresses (:func:`test_a_value_the_command_would_ignore_or_trip_on_is_refused`): a value of an
option that another option made unused (``check --storm-mode nope`` with the native engine) was ignored; an address
or name that failed late was ``unexpected`` (exit 3) or logged on two lines after "serving".

The number cases fail while the options are parsed (no command body runs): a few milliseconds each; the others
fail before serving or benchmarking anything (the slowest, ``bench agentdojo``, imports its package: ~2 s).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from agentguard import cli

from .test_init_badinput import assert_one_line_error, run_cli

REPO = Path(__file__).resolve().parents[2]
TOML = str(REPO / "examples/integrations/agentguard.toml")
TRACES = str(REPO / "examples/microwave_traces.jsonl")
SPEC = str(REPO / "examples/microwave_spec.yaml")

#: integer options whose range the server's settings check (the config file's [server] table sets them too):
#: ``serve --port 70000`` is ``error: port must be in 1..65535, got 70000`` from there.
CHECKED_BY_SETTINGS = {("serve", "port"), ("serve", "workers"), ("serve", "max_body")}


def _leaves(cmd=None, path=()):
    cmd = cmd if cmd is not None else cli.finite_numbers(typer.main.get_command(cli.app))
    subs = getattr(cmd, "commands", None)
    if subs is None:
        yield " ".join(path), cmd
        return
    for name, sub in subs.items():
        yield from _leaves(sub, (*path, name))


def _kinds(param) -> tuple:
    ann = param.type_descriptor.annotation
    return (ann, *getattr(ann, "__args__", ()))


def test_every_integer_option_declares_its_range():
    missing, seeds, ports = [], [], []
    for path, cmd in _leaves():
        for p in cmd.params:
            if int not in _kinds(p) or bool in _kinds(p) or (path, p.name) in CHECKED_BY_SETTINGS:
                continue
            if p.min is None:
                missing.append(f"{path} --{p.name}")
            if p.name.endswith("seed") and p.min != 0:
                seeds.append(f"{path} --{p.name}")
            if p.name == "port" and (p.min, p.max) not in ((0, 65535), (1, 65535)):
                ports.append(f"{path} --{p.name}")
    assert not missing, f"integer options without min= (a count >= 1, a seed >= 0): {missing}"
    assert not seeds and not ports, (seeds, ports)


def test_every_float_option_refuses_non_finite_values():
    floats = [(path, p) for path, cmd in _leaves() for p in cmd.params if float in _kinds(p)]
    assert floats and all(getattr(p, "finite_only", False) for _, p in floats), [
        f"{path} --{p.name}" for path, p in floats if not getattr(p, "finite_only", False)]


@pytest.mark.parametrize("argv, option", [
    (["monitor-eval", "{F}", "--seed", "-1"], "--seed"),  # was: unexpected ValueError (numpy), exit 3
    (["monitor-eval", "{F}", "--splits", "0"], "--splits"),
    (["monitor-eval", "{F}", "--alpha", "nan"], "--alpha"),
    (["monitor-eval", "{F}", "--cal-frac", "inf"], "--cal-frac"),
    (["bench", "driving", "--seed", "-1"], "--seed"),  # was: exit 3 after loading the critics
    (["bench", "driving", "--eval-seed", "-1"], "--eval-seed"),
    (["bench", "driving", "--episodes", "0"], "--episodes"),
    (["bench", "driving", "--iterations", "0"], "--iterations"),
    (["bench", "driving", "--epsilon", "nan"], "--epsilon"),  # was: refused only after loading the critics
    (["bench", "commerce", "--seed", "-1"], "--seed"),
    (["bench", "commerce", "--text-episodes", "0"], "--text-episodes"),
    (["bench", "household", "--seed", "-1"], "--seed"),
    (["bench", "household", "--live-tasks", "0"], "--live-tasks"),
    (["bench", "mind2web-sc", "--seed", "-1"], "--seed"),
    (["bench", "policy-latency", "--n", "0"], "--n"),
    (["litellm-guardrail", "--guards", TOML, "--max-body", "0"], "--max-body"),  # was: served, refusing everything
    (["litellm-guardrail", "--guards", TOML, "--max-concurrency", "0"], "--max-concurrency"),
    (["litellm-guardrail", "--guards", TOML, "--port", "70000"], "--port"),
    (["laws", "{F}", "--steps-per-unit", "0"], "--steps-per-unit"),  # was: accepted
    (["synthesize", "mind2web_sc", "--out", "{D}/p.py", "--rounds", "0"], "--rounds"),  # was: accepted
    (["synthesize", "mind2web_sc", "--out", "{D}/p.py", "--max-tokens", "-1"], "--max-tokens"),
    (["synthesize", "mind2web_sc", "--out", "{D}/p.py", "--timeout", "inf"], "--timeout"),
    (["report", "shadow", "--audit", "{F}", "--limit", "-1"], "--limit"),  # was: the last entry dropped
    (["audit", "verify", "--db", "sqlite:///{F}", "--checkpoint-every", "0"], "--checkpoint-every"),
    (["learn", TRACES, "--spec", SPEC, "--out", "{D}/m.json", "--alpha", "inf"], "--alpha"),
    (["demo", "--out", "{D}/demo", "--threshold", "nan"], "--threshold"),
    (["serve", "--example-guards", "--run-ttl", "inf"], "--run-ttl"),
])
def test_a_number_out_of_range_is_one_line_naming_the_option(tmp_path, monkeypatch, argv, option):
    monkeypatch.setenv("AGENTGUARD_TOKEN", "t" * 32)
    monkeypatch.delenv("AGENTGUARD_LLM_BASE_URL", raising=False)
    f = tmp_path / "input"
    f.write_text("x\n")
    argv = [a.replace("{F}", str(f)).replace("{D}", str(tmp_path)) for a in argv]
    code, out, err = run_cli(argv)
    assert_one_line_error(argv, code, err, out)
    assert code == 2 and f"'{option}'" in err and "unexpected" not in err, err


PRISM = """dtmc
module m
  s : [0..1] init 0;
  [] s=0 -> 0.5:(s'=0) + 0.5:(s'=1);
  [] s=1 -> (s'=1);
endmodule
label "unsafe" = s=1;
"""
LAWS = "law44 = G ((speed > 20) -> F[0,3] (speed < 15.5));\n"


@pytest.mark.parametrize("argv, says", [
    # ignored before: the option mattered only with another one (--engine storm, --model)
    (["check", "{M}", "-p", 'P=? [F "unsafe"]', "--storm-mode", "nope"], "unknown storm mode 'nope'"),
    (["laws", "{L}", "--unknown", "nope"], "unknown --unknown 'nope'"),
    # unexpected ExceptionGroup (exit 3): the task group of the HTTP proxy wrapped the error
    (["mcp-proxy", "--guards", TOML, "--upstream", "a=true", "--http", "nope"], "bad address 'nope'"),
    (["mcp-proxy", "--guards", TOML, "--upstream", "a=true", "--http", "127.0.0.1:70000"], "0..65535"),
    # unexpected MCPError: Connection closed (an upstream that is no MCP server)
    (["mcp-proxy", "--guards", TOML, "--upstream", "a=true", "--prefix"], "upstream 'a' did not answer as an MCP"),
    # unexpected KeyError, after "agentguard serving on ..." had been printed
    (["serve", "--example-guards", "--state-dir", "{D}/state", "--log-level", "nope"], "log_level must be one of"),
    # uvicorn's "ERROR: ..." on a second line after "serving" (a label over 63 characters: refused without DNS)
    (["serve", "--example-guards", "--state-dir", "{D}/state", "--host", "x" * 64 + ".invalid"], "cannot listen on"),
    # unexpected KeyError: 'nope'
    (["bench", "agentdojo", "--suite", "nope"], "nope"),
    # accepted in silence: a misspelt table of the service's config file (it served with none of its settings) ...
    (["serve", "--config", "{C}", "--example-guards", "--state-dir", "{D}/state"], "did you mean [server]?"),
    # ... and a recording state function that is no built-in (refused only once an adapter recorded)
    (["check-config", "{R}"], "recording.state: unknown state function 'nope'"),
])
def test_a_value_the_command_would_ignore_or_trip_on_is_refused(tmp_path, monkeypatch, argv, says):
    monkeypatch.setenv("AGENTGUARD_TOKEN", "t" * 32)
    (tmp_path / "m.prism").write_text(PRISM)
    (tmp_path / "laws.txt").write_text(LAWS)
    (tmp_path / "sever.toml").write_text("[sever]\nport = 8000\n")
    (tmp_path / "rec.toml").write_text('[[guards]]\ntype = "tool-rules"\ndeny = ["x"]\n[recording]\nstate = "nope"\n')
    argv = [a.replace("{M}", str(tmp_path / "m.prism")).replace("{L}", str(tmp_path / "laws.txt"))
            .replace("{C}", str(tmp_path / "sever.toml")).replace("{R}", str(tmp_path / "rec.toml"))
            .replace("{D}", str(tmp_path)) for a in argv]
    code, out, err = run_cli(argv)
    assert_one_line_error(argv, code, err, out)
    assert code == 2 and says in err and "unexpected" not in err, err
    assert not (tmp_path / "state").exists()  # refused before the service created anything


def test_exception_groups_of_one_are_answered_as_their_exception():
    from agentguard.core.errors import InputError, sole_exception

    inner = InputError("bad address")
    assert sole_exception(ExceptionGroup("g", [ExceptionGroup("h", [inner])])) is inner
    two = ExceptionGroup("g", [inner, ValueError("x")])
    assert sole_exception(two) is two and cli.answer(inner) == 2


def test_a_proxy_whose_upstream_exits_ends_without_a_fatal_error_when_stdin_is_dev_null():
    """CI has no standard input (``< /dev/null``): the relay read it in a thread inside the buffered object, and
    when the upstream exited at once the interpreter died at shutdown ("Fatal Python error: could not acquire lock
    for <stdin>", exit 134) in about two runs of five. Two real runs; each ends in well under a few seconds."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "CI": "true"}
    for _ in range(2):
        with open(os.devnull, "rb") as null:
            p = subprocess.run([sys.executable, "-m", "agentguard", "mcp-proxy", "--guards", TOML, "--upstream",
                                "a=true"], stdin=null, capture_output=True, env=env, cwd=REPO, timeout=120)
        assert p.returncode in (0, 2) and b"Fatal Python error" not in p.stderr, (p.returncode, p.stderr[-1500:])
        assert b"Traceback" not in p.stderr and len(p.stderr.splitlines()) <= 1, p.stderr
