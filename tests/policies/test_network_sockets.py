"""Session 26: a local socket named as a destination (``curl --unix-socket /var/run/docker.sock``) is refused unless
``allow`` names it; curl's abbreviated long options read as curl reads them."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.core.errors import InputError
from agentguard.core.types import Context, ToolCall
from agentguard.policies.network_sockets import (curl_long, is_socket, program_sockets, socket_assignment,
                                                 socket_destination, socket_urls)
from agentguard.policies.networks import NetworkGuard

GUARD = NetworkGuard()
DOCKER = NetworkGuard(allow=["unix:///var/run/docker.sock", "example.com"])


def refuses(command: str, guard: NetworkGuard = GUARD) -> bool:
    return guard.check(Context(run_id="s26"), ToolCall("run_command", {"command": command})).decision.refuses


@pytest.mark.parametrize("command", [
    "curl --unix-socket /var/run/docker.sock http://example.com/containers/create",
    "curl --unix-socket=/var/run/docker.sock http://example.com/x",
    "curl --unix /var/run/docker.sock http://example.com/x", "curl --unix-s /run/docker.sock http://example.com/",
    "curl --abstract-unix-socket docker http://example.com/", "curl --abstract-unix /x http://example.com/",
    "socat - UNIX-CONNECT:/var/run/docker.sock", "socat - unix-client:/run/x.sock,retry=3",
    "socat TCP-LISTEN:8080,fork UNIX:/var/run/docker.sock", "socat - ABSTRACT-CONNECT:x",
    "socat - GOPEN:/var/run/docker.sock", "socat TCP-LISTEN:80 /var/run/docker.sock",
    "nc -U /var/run/docker.sock", "nc -vU /var/run/docker.sock", "netcat -U /x.sock", "ncat -U /x.sock",
    "ncat --unixsock /x.sock", "docker -H unix:///var/run/docker.sock ps", "docker --host=unix:///x.sock ps",
    "DOCKER_HOST=unix:///var/run/docker.sock docker ps", "export DOCKER_HOST=unix:///run/d.sock; docker ps",
    "podman --url unix:///run/podman/podman.sock ps", "CONTAINER_HOST=unix:///run/p.sock podman ps",
    "xh --unix-socket /var/run/docker.sock http://example.com/", "redis-cli -s /tmp/redis.sock ping",
    "redis-cli --socket /tmp/redis.sock", "mysql -S /tmp/mysql.sock", "mysql --socket=/tmp/mysql.sock",
    "MYSQL_UNIX_PORT=/tmp/m.sock mysql", "psql -h /var/run/postgresql", "psql --host=/tmp", "PGHOST=/tmp psql",
    "curl http+unix://%2Fvar%2Frun%2Fdocker.sock/info", "grpcurl -unix -plaintext /run/x.sock list",
    "ctr --address /run/containerd/containerd.sock images ls", "crictl -r unix:///run/crio/crio.sock ps",
    "crictl --runtime-endpoint /run/crio/crio.sock ps", "sudo curl --unix-socket /run/docker.sock http://example.com",
    "bash -c 'curl --unix-socket /var/run/docker.sock http://example.com/'",
    "curl -sS --unix-socket //var/./run/docker.sock http://example.com/x",
    # ssh -R hands the remote end a local socket, or (a port alone) a SOCKS proxy into this machine's network
    "ssh -R /tmp/x:/var/run/docker.sock example.com", "ssh -NR 2375:/var/run/docker.sock example.com",
    "ssh -o RemoteForward='/tmp/x /var/run/docker.sock' example.com", "ssh -R 9000 example.com",
    "ssh -fNR 9000 u@example.com", "ssh -R 0.0.0.0:9000 example.com",
])
def test_a_socket_named_is_refused(command: str) -> None:
    assert refuses(command), command


@pytest.mark.parametrize("command", [
    "docker ps", "mysql -uroot -pSecret -e 'select 1'", "psql -h db.example.com", "nc example.com 80",
    "socat TCP-LISTEN:8080,fork TCP:example.com:80", "curl -s https://example.com/unix/socket",
    "echo 'unix: a family of systems'", "redis-cli -h example.com ping", "git status",
    "curl --unixsocket-is-no-option https://example.com", "ssh -R 8080:example.com:80 example.com",
    "ssh -D 1080 example.com", "ssh -L 8080:example.com:80 example.com",
])
def test_no_socket_named_passes(command: str) -> None:
    assert not refuses(command), command


def test_allow_names_a_socket_exactly() -> None:
    assert not refuses("curl --unix-socket /var/run/docker.sock http://example.com/containers/json", DOCKER)
    assert not refuses("DOCKER_HOST=unix:///var/run/docker.sock docker ps", DOCKER)
    assert not refuses("curl --unix-socket //var/run//docker.sock http://example.com/", DOCKER)
    for other in ("/run/docker.sock", "/var/run/Docker.sock", "/var/run/x/../docker.sock"):
        assert refuses(f"curl --unix-socket {other} http://example.com/", DOCKER), other
    assert refuses("curl --abstract-unix-socket /var/run/docker.sock http://example.com/", DOCKER)
    assert "unix:/var/run/docker.sock" in repr(DOCKER)
    with pytest.raises(InputError):
        NetworkGuard(allow=["unix:"])


def test_socket_named_arguments() -> None:
    for args in ({"socket_path": "/var/run/docker.sock"}, {"docker_sock": "/run/d.sock"},
                 {"base_url": "unix:///var/run/docker.sock"}, {"options": {"unix_socket": "@abstract"}}):
        assert GUARD.check(Context(), ToolCall("http_request", args)).decision.refuses, args
    assert not GUARD.check(Context(), ToolCall("http_request", {"socket_timeout": 5})).decision.refuses


def test_spellings() -> None:
    assert socket_destination("//var/./run//docker.sock/") == "unix:/var/run/docker.sock"
    assert socket_destination("/a/../b") == "unix:/a/../b"
    assert socket_destination("x", abstract=True) == "unix:@x"
    assert socket_urls("unix:///var/run/docker.sock") == ["unix:/var/run/docker.sock"]
    assert socket_urls("redis unix:///tmp/r.sock?db=0 and unix:/p") == ["unix:/tmp/r.sock", "unix:/p"]
    assert socket_urls("npipe:////./pipe/docker_engine") == ["npipe://./pipe/docker_engine"]
    assert socket_urls("Unix: an OS") == []
    assert socket_assignment("MYSQL_UNIX_PORT=/m") == ["unix:/m"] and socket_assignment("PGHOST=db") == []
    assert is_socket("unix:/x") and not is_socket("example.com")
    assert program_sockets(["mysql", "-pS/x"]) == [] and program_sockets(["mysql", "-uS"]) == []


@settings(max_examples=100, deadline=None)
@given(path=st.text(st.sampled_from("/ab.-_"), min_size=1, max_size=20).filter(lambda p: p.startswith("/")),
       form=st.sampled_from(["curl --unix-socket {p} http://example.com/", "nc -U {p}", "socat - UNIX-CONNECT:{p}",
                             "DOCKER_HOST=unix://{p} docker ps", "redis-cli -s {p}", "xh --unix-socket={p} x.com"]))
def test_every_socket_spelling_is_refused(path: str, form: str) -> None:
    assert refuses(form.format(p=path)), form.format(p=path)


def test_curl_long_prefixes() -> None:
    assert curl_long("unix") == "unix-socket" and curl_long("resol") == "resolve"
    assert curl_long("prox") == "prox"   # ambiguous: curl refuses it
    assert curl_long("proxy") == "proxy" and curl_long("new-option") == "new-option"


@pytest.mark.skipif(shutil.which("curl") is None, reason="no curl here")
def test_curl_reads_an_abbreviation_as_the_guard_does() -> None:
    """Differential: real curl sends ``--unix`` requests through the socket (its prefix matching)."""
    got: list[bytes] = []
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "s.sock")
        server = socket.socket(socket.AF_UNIX)
        server.bind(path)
        server.listen(1)
        server.settimeout(10)

        def serve() -> None:
            try:
                conn, _ = server.accept()
                got.append(conn.recv(100))
                conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n")
                conn.close()
            except OSError:
                pass

        t = threading.Thread(target=serve)
        t.start()
        subprocess.run(["curl", "-s", "-m", "5", "--unix", path, "http://example.com/x"], capture_output=True,
                       timeout=10)
        t.join(10)
        server.close()
    assert got and got[0].startswith(b"GET /x")
    assert refuses(f"curl -s --unix {path} http://example.com/x")


def test_a_socket_in_a_curl_config_file(tmp_path) -> None:
    cfg = tmp_path / "cfg"
    cfg.write_text('unix-socket = "/var/run/docker.sock"\n')
    assert refuses(f"curl -K {cfg} http://example.com/containers/json")
    cfg.write_text("--abstract-unix-socket x\n")
    assert refuses(f"curl --config={cfg} http://example.com/")
    cfg.write_text("silent\n")
    assert not refuses(f"curl -K {cfg} http://example.com/")
