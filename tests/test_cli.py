import subprocess
import sys


def run(*args):
    return subprocess.run([sys.executable, "-m", "agentguard", *args], capture_output=True, text=True)


def test_help_and_version():
    r = run("--help")
    assert r.returncode == 0 and "bench" in r.stdout
    assert run("version").stdout.strip()
