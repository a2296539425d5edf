"""Session 23: destinations a client reads from a file its command names (``curl -K``, ``wget -i``/``--config``,
``aria2c -i``): allowed before, whatever the file held (curl 7.88 and wget 1.21 are the oracles for the readings)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.core.types import Context, ToolCall
from agentguard.policies.network_files import file_destinations
from agentguard.policies.networks import NetworkGuard

GUARD = NetworkGuard()


def net_refuses(command: str) -> bool:
    return GUARD.check(Context(run_id="s23"), ToolCall("run_command", {"command": command})).decision.refuses


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "meta.cfg").write_text('url = "http://169.254.169.254/latest/"\n')
    (tmp_path / "proxy.cfg").write_text("--proxy agentguard-s23-proxy\n")
    (tmp_path / "colon.cfg").write_text("# comment\nproxy: 127.1:3128\n")
    (tmp_path / "ok.cfg").write_text("silent\nurl = https://example.com/\n")
    (tmp_path / "urls.txt").write_text("https://example.com/a\nhttp://10.1/x\n")
    (tmp_path / "ok.txt").write_text("https://example.com/a\n")
    (tmp_path / "wgetrc").write_text("use_proxy = on\nhttp_proxy = agentguard-s23-proxy\n")
    (tmp_path / "aria.txt").write_text("https://example.com/a\thttp://127.1/b\n  out=x\n")
    return tmp_path


REFUSED = ["curl -K {d}/meta.cfg", "curl --config {d}/proxy.cfg https://x.com", "curl -K{d}/colon.cfg https://x.com",
           "curl --conf={d}/meta.cfg", "wget -i {d}/urls.txt", "wget --input-file={d}/urls.txt",
           "wget --config {d}/wgetrc https://x.com", "aria2c -i {d}/aria.txt", "curl -K {d}/missing.cfg", "wget -i -",
           "sh -c 'curl -K {d}/meta.cfg'",
           # the option inside a cluster of short ones, as getopt reads it (review: "-sK" was not read)
           "curl -sK {d}/meta.cfg", "curl -sSK{d}/meta.cfg", "curl -fsSLK {d}/proxy.cfg https://x.com",
           "wget -qi {d}/urls.txt", "wget -qi{d}/urls.txt"]
ALLOWED = ["curl -K {d}/ok.cfg", "curl -sSK {d}/ok.cfg", "curl -fsSL https://example.com/", "wget -i {d}/ok.txt", "curl https://example.com/", "wget -O x https://example.com/"]


@pytest.mark.parametrize("command", REFUSED)
def test_destinations_in_named_files_are_refused(files: Path, command: str) -> None:
    assert net_refuses(command.format(d=files))


@pytest.mark.parametrize("command", ALLOWED)
def test_public_files_pass(files: Path, command: str) -> None:
    assert not net_refuses(command.format(d=files))


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl (the oracle)")
def test_curl_reads_the_proxy_from_its_config_file(files: Path) -> None:
    out = subprocess.run(["curl", "-sS", "--max-time", "5", "-K", str(files / "proxy.cfg"), "http://example.com/"],
                         capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL).stderr
    assert "agentguard-s23-proxy" in out
    assert "agentguard-s23-proxy" in file_destinations(["curl", "-K", str(files / "proxy.cfg")])


@pytest.mark.skipif(shutil.which("wget") is None, reason="needs wget (the oracle)")
def test_wget_reads_the_proxy_from_its_config_file(files: Path) -> None:
    out = subprocess.run(["wget", "--config", str(files / "wgetrc"), "-t", "1", "--timeout=3", "-O", "/dev/null",
                          "http://example.com/"], capture_output=True, text=True, timeout=20,
                         stdin=subprocess.DEVNULL).stderr
    assert "agentguard-s23-proxy" in out
    assert "agentguard-s23-proxy" in file_destinations(["wget", "--config", str(files / "wgetrc")])


_HOST = st.sampled_from(["10.1", "127.0.0.1", "0x7f.1", "corp", "169.254.169.254", "[::1]"])
_LINE = st.sampled_from(['url = "http://{h}/"', "url http://{h}/", "--url http://{h}/", "proxy = {h}",
                         "proxy: {h}:3128", "-x {h}", "preproxy {h}", "socks5 = {h}:1080"])


@settings(max_examples=40, deadline=None)
@given(host=_HOST, line=_LINE)
def test_generated_curl_configs(tmp_path_factory: pytest.TempPathFactory, host: str, line: str) -> None:
    path = tmp_path_factory.mktemp("curlcfg") / "c"
    path.write_text("silent\n" + line.format(h=host) + "\n")
    assert net_refuses(f"curl -K {path} https://example.com/")


def test_kubeconfig_destinations() -> None:   # (session 26)
    from agentguard.policies.network_files import kubeconfig_destinations
    assert kubeconfig_destinations("clusters:\n- cluster:\n    server: https://10.0.0.1:6443\n") == [
        "https://10.0.0.1:6443"]
    assert kubeconfig_destinations("[unclosed") is None and kubeconfig_destinations("") == []


def test_docker_context_hosts() -> None:   # (session 26)
    from agentguard.policies.network_files import docker_context_hosts
    assert docker_context_hosts('{"Endpoints": {"docker": {"Host": "tcp://10.0.0.1:2375"}}}') == ["tcp://10.0.0.1:2375"]
    assert docker_context_hosts('{"Endpoints": {"docker": {"Host": "unix:///var/run/docker.sock"}}}') == []
    assert docker_context_hosts("{x") is None and docker_context_hosts("[]") == []
