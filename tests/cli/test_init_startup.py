"""`agentguard --help` and the MCP proxy command import only what they need (issue 18: the CLI used to
import scipy, 2.4 s for --help; the proxy added seconds to an MCP server's start-up)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("scipy", "numpy", "torch", "pandas", "stormpy", "transformers", "sklearn", "mcp", "langchain",
         "agents", "fastapi", "sqlalchemy")


def loaded_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    return {m.split(".")[0] for m in json.loads(out.strip().splitlines()[-1])}


def test_help_imports_no_heavy_package():
    code = ("import agentguard.cli as c, contextlib, io\n"
            "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
            "    c.app(args=['--help'])")
    assert not loaded_after(code) & set(HEAVY)


def test_mcp_upstream_parsing_needs_no_mcp_sdk():
    """The proxy command parses and starts its upstreams before importing the MCP SDK."""
    got = loaded_after("from agentguard.integrations.mcp.upstream import parse_upstream\n"
                       "parse_upstream('time=python -m mcp_server_time')")
    assert "mcp" not in got and "mcp_types" not in got


# -- session 23: Ctrl-C while the console script imports the command line --------------------------------------
# The script pip writes for ``[project.scripts]`` imports the entry point's module before calling it; with
# ``agentguard.cli:main`` a Ctrl-C during ``import agentguard`` printed a KeyboardInterrupt traceback (the process
# died of SIGINT) instead of ``aborted``, exit 130.

def _console_script(entry: str) -> str:
    """The script pip (distlib) writes for ``agentguard = "<module>:<function>"``."""
    module, func = entry.split(":")
    return (f"import sys\nfrom {module} import {func}\nif __name__ == '__main__':\n"
            f"    sys.argv[0] = sys.argv[0].removesuffix('.exe')\n    sys.exit({func}())\n")


def _default_sigint() -> None:
    """In the child: SIGINT as a terminal's process gets it (a shell starts background jobs with it ignored, and
    Python keeps an ignored SIGINT ignored)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt_while_importing(entry: str | None, tmp_path, after: str = "agentguard.core") -> tuple[int, list[str]]:
    """Run the console script of ``entry`` (None: ``python -m agentguard``) and send SIGINT once the module ``after``
    was imported (the interpreter's ``-X importtime`` report on stderr says so), before the command ran."""
    import os
    import signal
    from pathlib import Path

    if entry is None:
        argv = [sys.executable, "-m", "agentguard", "version"]
    else:
        script = tmp_path / "agentguard"
        script.write_text(_console_script(entry))
        argv = [sys.executable, str(script), "version"]
    src = Path(__file__).resolve().parents[2] / "src"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), *sys.path]), "PYTHONPROFILEIMPORTTIME": "1"}
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         preexec_fn=_default_sigint)
    lines: list[str] = []
    assert p.stderr is not None
    for line in p.stderr:
        lines.append(line)
        if line.split("|")[-1].strip() == after:
            p.send_signal(signal.SIGINT)
            break
    rest = p.stderr.read()
    p.wait(timeout=120)
    assert p.stdout is not None and p.stdout.read() == ""  # the command never ran
    return p.returncode, [x for x in (lines + rest.splitlines()) if x.strip() and not x.startswith("import time:")]


def test_ctrl_c_while_the_console_script_imports_is_one_line_and_exit_130(tmp_path):
    import tomllib
    from pathlib import Path

    entry = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]["scripts"]
    rc, err = _interrupt_while_importing(entry["agentguard"], tmp_path)
    assert (rc, err) == (130, ["aborted"]), err


def test_the_entry_point_inside_the_package_shows_the_hole(tmp_path):
    """The old entry point, run the same way: the traceback (so the test above does reach the import)."""
    rc, err = _interrupt_while_importing("agentguard.cli:main", tmp_path)
    assert rc != 130 and "KeyboardInterrupt" in err[-1], err


@pytest.mark.parametrize("after", ["agentguard.core", "agentguard.cli.options"])
def test_ctrl_c_while_python_m_agentguard_imports_is_one_line_and_exit_130(tmp_path, after):
    """``python -m agentguard`` (the docs' spelling): in the package's import and in the command line's."""
    rc, err = _interrupt_while_importing(None, tmp_path, after)
    assert (rc, err) == (130, ["aborted"]), err


def test_importing_the_package_leaves_sigint_alone():
    """Only ``python -m agentguard`` takes SIGINT during the import; a library user's process keeps its handler."""
    out = subprocess.run([sys.executable, "-c", "import signal, agentguard; "
                          "print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"],
                         capture_output=True, text=True, timeout=120, preexec_fn=_default_sigint)
    assert out.stdout.strip() == "True", out.stderr
