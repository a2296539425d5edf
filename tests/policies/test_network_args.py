"""network_args (split from networks, session 26): which argument names hold hosts, commands and sockets."""

from __future__ import annotations

from agentguard.policies.network_args import HOST_ARGS, _named, host_named, socket_named


def test_host_and_socket_names() -> None:
    assert "base_url" in HOST_ARGS and host_named("db_host") and host_named("proxyurl") and not host_named("ghost")
    assert socket_named("socket_path") and socket_named("docker_sock") and socket_named("unix.socket")
    assert not socket_named("sockets_count") and not socket_named("host")


def test_one_walk_keeps_each_kind() -> None:
    named, commands, sockets = _named({"url": "a", "command": "b", "socket_path": "/s", "x": {"db_host": "c"}},
                                      False)
    assert named == ["a", "c"] and commands == ["b"] and sockets == ["/s"]
    assert _named({"cmd": "ls"}, True)[1] == [{"cmd": "ls"}]
