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
