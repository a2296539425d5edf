"""Session 23: an ssh configuration's aliases, read as ssh reads them (``ssh -G`` is the oracle).

Holes (each allowed by the network guard before, confirmed with ``ssh -G -F cfg HOST``, OpenSSH 9.2): with a config
holding ``Host github.com`` / ``HostName 10.0.0.7``, ``ssh -F cfg github.com``, ``scp -F cfg x github.com:`` and (with
it as ``~/.ssh/config``) ``git fetch github.com:x/y`` connect to 10.0.0.7; ``ProxyJump inner`` with ``Host inner`` /
``HostName 127.0.0.1``, ``Include``d files, ``Host *.corp.example.com`` with ``HostName %h.internal`` and ``Match host
...`` likewise; ``ProxyCommand nc 169.254.169.254 22`` connects from here.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.core.types import Context, ToolCall
from agentguard.policies.network_sshconfig import config_hosts
from agentguard.policies.networks import NetworkGuard

GUARD = NetworkGuard()
SSH = shutil.which("ssh")


def same_host(a: str) -> str:
    """A host as ssh -G prints it (a numeric IPv4 in any inet_aton spelling canonicalised: ``127.1`` is 127.0.0.1)."""
    try:
        return socket.inet_ntoa(socket.inet_aton(a))
    except OSError:
        return a.lower()


def net_refuses(command: str) -> bool:
    return GUARD.check(Context(run_id="s23"), ToolCall("run_command", {"command": command})).decision.refuses


def ssh_g(config: Path, host: str) -> dict[str, str]:
    out = subprocess.run([SSH or "ssh", "-G", "-F", str(config), host], capture_output=True, text=True, timeout=10,
                         stdin=subprocess.DEVNULL).stdout
    return {k: v for k, _, v in (line.partition(" ") for line in out.splitlines())}


@pytest.fixture
def cfg(tmp_path: Path) -> Path:
    (tmp_path / "inc.conf").write_text("Host *.corp.example.com !ok.corp.example.com\n  HostName %h.internal\n"
                                       "Host pc.example.com\n  ProxyCommand nc 169.254.169.254 22\n")
    path = tmp_path / "cfg"
    path.write_text(f"Include {tmp_path}/inc.conf\nHost github.com\n    HostName 10.0.0.7\nHost jumpy.example.com\n"
                    "    ProxyJump inner\nHost inner\n    HostName=127.0.0.1\nMatch host matched.example.com\n"
                    "    HostName 169.254.169.254\n")
    return path


REFUSED = ["ssh -F {c} github.com", "scp -F {c} x github.com:y", "sftp -F {c} github.com", "ssh -F{c} jumpy.example.com",
           "scp -F {c} x a.corp.example.com:", "ssh -F {c} pc.example.com", "ssh -F {c} matched.example.com",
           "rsync -e 'ssh -F {c}' x github.com:", "ssh -F {c}.missing example.org", "ssh -J github.com -F {c} x.org"]
ALLOWED = ["ssh -F {c} ok.corp.example.com", "ssh -F {c} example.org", "scp -F {c} x example.org:y",
           "ssh -F none example.org"]


@pytest.mark.parametrize("command", REFUSED)
def test_configured_destinations_are_refused(cfg: Path, command: str) -> None:
    assert net_refuses(command.format(c=cfg))


@pytest.mark.parametrize("command", ALLOWED)
def test_public_destinations_of_the_same_config_pass(cfg: Path, command: str) -> None:
    assert not net_refuses(command.format(c=cfg))


def test_user_config_is_read_for_git_and_ssh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``git fetch github.com:x/y`` runs ssh with ``~/.ssh/config``: the alias's HostName is read (the guard's home)."""
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".ssh" / "config").write_text("Host github.com\n  HostName 10.0.0.7\n")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert net_refuses("git fetch github.com:x/y") and net_refuses("ssh github.com")
    assert net_refuses("git clone git@github.com:x/y.git") and net_refuses("rsync -a x github.com:y")
    assert not net_refuses("git fetch gitlab.com:x/y")


def test_unreadable_config_refuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".ssh" / "config").write_bytes(b"Host x\n HostName \xff\n")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert config_hosts("example.org") is None and net_refuses("ssh example.org")
    (tmp_path / ".ssh" / "config").write_text("Include ~/.ssh/config\n")   # includes itself: too deep
    assert config_hosts("example.org") is None


@pytest.mark.skipif(SSH is None, reason="needs OpenSSH's ssh (the oracle)")
def test_ssh_g_oracle_on_fixed_config(cfg: Path) -> None:
    for host in ["github.com", "jumpy.example.com", "a.corp.example.com", "ok.corp.example.com", "pc.example.com",
                 "matched.example.com", "example.org"]:
        real = ssh_g(cfg, host)
        reading = config_hosts(host, str(cfg))
        assert reading is not None
        assert same_host(real["hostname"]) in map(same_host, [host, *reading[0]]), host
        if real.get("proxyjump", "none") != "none":
            assert real["proxyjump"] in reading[0]
        if real.get("proxycommand", "none") != "none":
            assert real["proxycommand"] in reading[1]


_LABEL = st.sampled_from(["a", "b", "db", "x1"])
_NAME = st.tuples(_LABEL, st.sampled_from(["example.com", "corp.example.com"])).map(".".join)
_PATTERN = st.one_of(_NAME, _NAME.map(lambda n: "*." + n.split(".", 1)[1]), st.just("*"),
                     _NAME.map(lambda n: "!" + n), st.sampled_from(["?.example.com", "db.*"]))
_BLOCK = st.tuples(st.sampled_from(["Host", "Match host", "Match originalhost", "Match all", "Match !host"]),
                   st.lists(_PATTERN, min_size=1, max_size=3), st.sampled_from(["10.0.0.7", "%h.internal", "127.1"]),
                   st.sampled_from([" ", "=", " = "]))


@pytest.mark.skipif(SSH is None, reason="needs OpenSSH's ssh (the oracle)")
@settings(max_examples=40, deadline=None)
@given(blocks=st.lists(_BLOCK, min_size=1, max_size=4), host=_NAME, included=st.integers(0, 4),
       jump=st.booleans())
def test_ssh_g_hostname_is_always_read(tmp_path_factory: pytest.TempPathFactory, blocks: list, host: str,
                                       included: int, jump: bool) -> None:
    """Differential: whatever HostName (and ProxyJump) ``ssh -G`` resolves the destination to is among the hosts
    read; the first ``included`` blocks stand in a file the config ``Include``s at its top."""
    folder = tmp_path_factory.mktemp("sshcfg")
    lines = []
    for kind, patterns, value, sep in blocks:
        joined = ",".join(patterns) if kind.startswith("Match") else " ".join(patterns)
        head = kind if kind == "Match all" else f"{kind} {joined}"
        lines += [head, f"  HostName{sep}{value}"] + (["  ProxyJump j1.example.com"] if jump else [])
    cut = sum(3 if jump else 2 for _ in blocks[:included])   # the lines of the first blocks
    (folder / "inc").write_text("\n".join(lines[:cut]) + "\n")
    (folder / "cfg").write_text(f"Include {folder}/inc\n" + "\n".join(lines[cut:]) + "\n")
    real = ssh_g(folder / "cfg", host)
    if "hostname" not in real:   # a config ssh rejects (it connects nowhere)
        return
    reading = config_hosts(host, str(folder / "cfg"))
    assert reading is not None and same_host(real["hostname"]) in map(same_host, [host, *reading[0]])
    if real.get("proxyjump", "none") != "none":
        assert real["proxyjump"] in reading[0]


def test_canonical_domains_are_read(tmp_path: Path) -> None:
    """``CanonicalizeHostname yes`` + ``CanonicalDomains corp.internal``: ssh tries github.com.corp.internal first
    (``ssh -G`` prints the setting but does not resolve, so the reading is checked, not differentially)."""
    path = tmp_path / "canon"
    path.write_text("CanonicalizeHostname yes\nCanonicalDomains corp.internal\n")
    reading = config_hosts("github.com", str(path))
    assert reading is not None and "github.com.corp.internal" in reading[0]
    assert net_refuses(f"ssh -F {path} github.com")
    assert net_refuses("ssh -o CanonicalizeHostname=yes -o CanonicalDomains=internal github.com")
    assert net_refuses("scp -o 'CanonicalDomains corp.local' x github.com:")
    assert not net_refuses("ssh -o CanonicalDomains=example.org github.com")


@pytest.mark.skipif(SSH is None, reason="needs OpenSSH's ssh (the oracle)")
def test_an_alias_certainly_replaced_is_judged_by_its_hostname(tmp_path: Path) -> None:
    """``ssh myalias`` with ``Host myalias`` / ``HostName github.com`` connects to github.com (``ssh -G``): the alias
    itself is no destination (a single label was refused before); ``-o HostName=myalias`` is (ssh does not look it up
    again), and so is rsync's (its daemon's ``host::module`` reads no ssh configuration)."""
    path = tmp_path / "alias"
    path.write_text("Host myalias\n  HostName github.com\nHost evil\n  HostName 10.0.0.9\nMatch exec true\n  User git\n")
    assert ssh_g(path, "myalias")["hostname"] == "github.com" and ssh_g(path, "evil")["hostname"] == "10.0.0.9"
    assert not net_refuses(f"ssh -F {path} myalias") and not net_refuses(f"scp -F {path} x myalias:")
    assert not net_refuses(f"ssh -F {path} -J myalias x.com")
    assert net_refuses(f"ssh -F {path} evil") and net_refuses(f"ssh -F {path} -o HostName=myalias x.com")
    assert net_refuses(f"rsync -e 'ssh -F {path}' x myalias:")
