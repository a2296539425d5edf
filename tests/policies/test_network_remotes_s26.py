"""Session 26: ``ssh -R`` hands the remote end a local socket or a SOCKS proxy into this machine's network."""

from __future__ import annotations

from agentguard.policies.network_remotes import remote_forwards


def test_remote_forwards() -> None:
    assert remote_forwards(["ssh", "-R", "/r.sock:/var/run/docker.sock", "h"]) == ["unix:/var/run/docker.sock"]
    assert remote_forwards(["ssh", "-NR2375:/run/d.sock", "h"]) == ["unix:/run/d.sock"]
    assert remote_forwards(["ssh", "-o", "RemoteForward /r /l.sock", "h"]) == ["unix:/l.sock"]
    assert remote_forwards(["ssh", "-R", "9000", "h"])[0].startswith("(ssh -R 9000")
    assert remote_forwards(["ssh", "-R", "[::1]:9000", "h"])[0].startswith("(ssh -R [::1]:9000")
    assert remote_forwards(["ssh", "-R", "8080:example.com:80", "h"]) == []
    assert remote_forwards(["ssh", "-L", "/l:/r.sock", "h"]) == [] and remote_forwards(["scp", "-R", "x"]) == []
