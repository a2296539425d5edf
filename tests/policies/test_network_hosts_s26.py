"""Session 26: the machine's hosts file answers before DNS; a public name it maps to an internal address is
refused, and a write of a resolver's file (/etc/hosts, /etc/resolv.conf...) is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentguard.core.types import Context, ToolCall
from agentguard.policies import network_hosts
from agentguard.policies.network_hosts import hosts_file
from agentguard.policies.networks import NetworkGuard, internal

GUARD = NetworkGuard()


def refuses(command: str) -> bool:
    return GUARD.check(Context(run_id="s26"), ToolCall("run_command", {"command": command})).decision.refuses


@pytest.fixture
def hosts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "hosts"
    path.write_text("127.0.0.1 localhost\n10.0.0.5 build.example.com  Mirror.Example.ORG # corp\n"
                    "# 10.0.0.6 commented.example.com\n93.184.215.14 pinned.example.net\nfe80::1%eth0 v6.example.com\n")
    monkeypatch.setattr(network_hosts, "HOSTS_FILE", str(path))
    return path


def test_a_name_the_hosts_file_maps_inward_is_refused(hosts: Path) -> None:
    assert hosts_file("build.example.com") == ["10.0.0.5"] and hosts_file("mirror.example.org") == ["10.0.0.5"]
    assert hosts_file("commented.example.com") == []
    for command in ("curl http://build.example.com/", "wget mirror.example.org/x", "curl BUILD.example.com.:80",
                    "git clone https://build.example.com/a/b", "curl http://v6.example.com/"):
        assert refuses(command), command
    for command in ("curl http://pinned.example.net/", "curl http://commented.example.com/", "curl example.com"):
        assert not refuses(command), command


def test_the_hosts_file_is_read_again_when_it_changes(hosts: Path) -> None:
    assert internal("new.example.com") is None
    hosts.write_text("10.1.2.3 new.example.com\n")
    assert internal("new.example.com") is not None
    hosts.unlink()
    assert internal("new.example.com") is None


def test_an_unreadable_hosts_file_refuses(hosts: Path) -> None:
    hosts.unlink()
    hosts.mkdir()   # (no regular file: not read, refused)
    assert internal("example.com") is not None


@pytest.mark.parametrize("command", [
    "cp /tmp/h /etc/hosts && curl http://example.com", "echo 'x example.com' | tee -a /etc/hosts",
    "cat /tmp/r > /etc/resolv.conf; curl http://example.com", "sed -i s/a/b/ /etc/nsswitch.conf",
    "cp x /etc/gai.conf", "cp d.conf /etc/systemd/resolved.conf.d/d.conf", "cp x /etc/dnsmasq.d/x.conf"])
def test_a_write_of_a_resolvers_file_is_refused(command: str) -> None:
    assert refuses(command), command


def test_reading_the_resolvers_files_passes() -> None:
    assert not refuses("cat /etc/hosts") and not refuses("grep nameserver /etc/resolv.conf")
