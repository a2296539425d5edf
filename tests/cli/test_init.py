import subprocess
import sys


def run(*args):
    return subprocess.run([sys.executable, "-m", "agentguard", *args], capture_output=True, text=True)


def test_help_and_version():
    r = run("--help")
    assert r.returncode == 0 and "bench" in r.stdout
    assert run("version").stdout.strip()


def test_typer_exit_code_is_kept():
    import typer

    from agentguard import cli

    @cli.app.command("_exit-probe", hidden=True)
    def probe() -> None:
        raise typer.Exit(5)

    import pytest

    with pytest.raises(SystemExit) as e:
        cli.main(["_exit-probe"])
    assert e.value.code == 5


# --- a new user's first contact: help that prints as written, usage errors on one line -----------------------

import re  # noqa: E402

import pytest  # noqa: E402


def _main(capsys, *args):
    from agentguard import cli

    try:
        cli.main(list(args))
        code = 0
    except SystemExit as e:
        code = e.code
    out = capsys.readouterr()
    return code, out.out, out.err


def _commands():
    """Every command of the tree with its path (``["serve"]``, ``["bench", "household"]``, ...)."""
    import typer

    from agentguard import cli

    todo = [([], typer.main.get_command(cli.app))]
    while todo:
        path, cmd = todo.pop()
        yield path, cmd
        todo.extend((path + [name], sub) for name, sub in getattr(cmd, "commands", {}).items())


def test_bracketed_words_in_help_print_as_written(capsys, monkeypatch):
    """Rich markup once swallowed "[server]" ("the config file's  table"): every bracketed word a command's
    or option's help says is in the printed help."""
    monkeypatch.setenv("COLUMNS", "200")
    checked = 0
    for path, cmd in _commands():
        texts = [cmd.help or ""] + [getattr(p, "help", None) or "" for p in cmd.params]
        words = {w for t in texts for w in re.findall(r"\[[A-Za-z_][A-Za-z_.]*\]", t)}
        if not words or getattr(cmd, "hidden", False):
            continue
        code, out, _ = _main(capsys, *path, "--help")
        assert code == 0
        missing = [w for w in words if w not in out]
        assert not missing, (path, missing)
        checked += 1
    assert checked >= 2  # serve ([server]) and mcp-proxy ([recording]) at least


def test_serve_help_names_the_server_table(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    _, out, _ = _main(capsys, "serve", "--help")
    assert "the config file's [server] token" in out and "TOML file with a [server] table" in out


@pytest.mark.parametrize("args, names", [
    (["decide", "--wrong"], "--wrong"), (["nosuch"], "nosuch"), (["decide"], "config"),
    (["check", "x", "--engine"], "--engine"), (["demo", "--threshold", "2"], "--threshold"),
    (["demo", "--threshold", "abc"], "--threshold"), (["learn", "t.jsonl"], "--spec"),
])
def test_usage_errors_are_one_line(capsys, args, names):
    """A wrong flag, a missing argument, a value out of range: one line ``error: ...`` naming it and the help
    to read, exit status 2 (click's three-line usage block used to come instead)."""
    code, out, err = _main(capsys, *args)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and names in lines[0], err
    assert "--help'" in lines[0] and "Traceback" not in err


def test_a_bare_group_still_prints_its_help(capsys):
    code, out, err = _main(capsys, "bench")
    assert "household" in out + err and "error:" not in err


def test_a_path_that_cannot_be_used_is_one_line_exit_2(capsys, tmp_path):
    """An OSError naming a file given on the command line was 'error: unexpected FileNotFoundError' (exit 3)."""
    from agentguard import cli

    repo = __import__("pathlib").Path(__file__).resolve().parents[2]
    code, out, err = _main(capsys, "learn", str(repo / "examples/microwave_traces.jsonl"), "--spec",
                           str(repo / "examples/microwave_spec.yaml"), "--out", str(tmp_path / "m.json"),
                           "--prism", str(tmp_path / "no-such-folder" / "m.prism"))
    assert code == 2 and err.strip().splitlines()[-1] == (
        f"error: cannot use {tmp_path / 'no-such-folder' / 'm.prism'}: No such file or directory "
        "(check the path given on the command line)")
    assert "unexpected" not in err
    assert cli.input_failure(PermissionError(13, "Permission denied", "/x")) and cli.input_failure(OSError("socket")) is None


def test_demo_refuses_a_file_as_its_output_folder_before_any_work(capsys, tmp_path):
    f = tmp_path / "report"
    f.write_text("x")
    code, out, err = _main(capsys, "demo", "--out", str(f))
    assert code == 2 and out == "" and err.strip() == (
        f"error: --out {f} is a file: give a folder for the report files (created if missing)")


@pytest.mark.parametrize("argv", [
    ["decide", "{dir}", "{{}}"], ["check-config", "{dir}"], ["verify", "{dir}"], ["laws", "{dir}"],
    ["monitor-eval", "{dir}"], ["report", "shadow", "--audit", "{dir}"], ["check", "{dir}", "-p", "P=? [F s=1]"],
    ["learn", "{repo}/examples/microwave_traces.jsonl", "--spec", "{dir}", "--out", "{dir}/m.json"],
])
def test_a_folder_where_a_file_is_expected_is_one_clear_line(argv, capsys, tmp_path):
    """A new user's most common slip (a folder for a file): one line naming the folder, exit 2, no errno."""
    repo = __import__("pathlib").Path(__file__).resolve().parents[2]
    code, out, err = _main(capsys, *[a.format(dir=tmp_path, repo=repo) for a in argv])
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and str(tmp_path) in lines[0], err
    assert "Errno" not in err and "unexpected" not in err
    if argv[0] in ("laws", "monitor-eval"):  # said "not found" / "[Errno 21] Is a directory: '...'" before
        assert "is a folder" in lines[0] or lines[0].endswith(": Is a directory"), lines[0]
