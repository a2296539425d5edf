"""Session 25: the network clients' default configuration files (``~/.curlrc``, ``~/.wgetrc``, ``~/.gitconfig``'s
``insteadOf``, ``~/.npmrc``, ``pip.conf``): a client run while one names an internal host is refused, and so is a
command that writes one. Real curl 7.88, wget 1.21 and git 2.39 are the oracles (run under a temporary HOME against
closed ports of 127.0.0.x, skipped where not installed)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentguard.core.types import Context, ToolCall
from agentguard.policies.network_configs import config_writes, default_destinations, git_entries
from agentguard.policies.network_configs_env import command_env
from agentguard.policies.network_configs_writes import config_set
from agentguard.policies.networks import NetworkGuard

GUARD = NetworkGuard()
_MOVERS = ("CURL_HOME", "XDG_CONFIG_HOME", "WGETRC", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM",
           "PIP_CONFIG_FILE", "NPM_CONFIG_USERCONFIG", "NPM_CONFIG_GLOBALCONFIG", "VIRTUAL_ENV",
           "npm_config_userconfig", "npm_config_globalconfig", "NPM_CONFIG_PREFIX", "npm_config_prefix", "PREFIX",
           "GIT_DIR")


def net_refuses(command: str) -> bool:
    return GUARD.check(Context(run_id="s25"), ToolCall("run_command", {"command": command})).decision.refuses


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty HOME for the guard (and the real clients), no variable moving a client's files elsewhere."""
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    for name in _MOVERS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    return h


def _client(home: Path, *argv: str) -> str:
    """What the real client prints (stdout and stderr) when run under ``home`` (connecting to closed local ports)."""
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", ""), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_TERMINAL_PROMPT": "0"}
    done = subprocess.run(list(argv), env=env, capture_output=True, text=True, timeout=20)
    return done.stdout + done.stderr


# -- the real clients read these files (the oracles) --------------------------------------------------------------


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl not installed")
def test_curl_reads_curlrc_unless_q_first(home: Path) -> None:
    (home / ".curlrc").write_text('url = "http://127.0.0.9:9/evil"\n')
    run = ["-s", "-o", "/dev/null", "-w", "%{url_effective}\\n", "--connect-timeout", "1", "http://127.0.0.8:9/ok"]
    assert "127.0.0.9" in _client(home, "curl", *run)   # curl fetched the URL of ~/.curlrc too
    assert "127.0.0.9" not in _client(home, "curl", "-q", *run)
    assert net_refuses("curl https://example.com") and not net_refuses("curl -q https://example.com")


@pytest.mark.skipif(shutil.which("wget") is None, reason="wget not installed")
def test_wget_reads_wgetrc_unless_no_config(home: Path) -> None:
    (home / ".wgetrc").write_text("http_proxy = http://127.0.0.7:3128/\nuse_proxy = on\n")
    run = ["-O", "/dev/null", "--connect-timeout=1", "-t", "1", "http://127.0.0.8:9/"]
    assert "127.0.0.7:3128" in _client(home, "wget", *run)
    assert "127.0.0.7" not in _client(home, "wget", "--no-config", *run)
    assert net_refuses("wget https://example.com") and not net_refuses("wget --no-config https://example.com")


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_git_follows_a_global_insteadof(home: Path) -> None:
    _client(home, "git", "config", "--global", "url.http://127.0.0.9:9/.insteadOf", "https://github.com/")
    assert "127.0.0.9" in _client(home, "git", "ls-remote", "https://github.com/x/y")
    assert net_refuses("git clone https://github.com/x/y") and net_refuses("git fetch https://github.com/x/y")
    assert not net_refuses("git status") and not net_refuses("git log --oneline -5")


@pytest.mark.skipif(shutil.which("ssh") is None, reason="ssh not installed")
def test_ssh_reads_the_passwd_home_not_home(home: Path) -> None:
    """ssh reads ~/.ssh/config of the user's passwd entry, not $HOME (so the guard's reading of its own file is
    not moved by a command's HOME=); Match exec "false" does not apply in ssh, the guard reads it as applying."""
    (home / ".ssh").mkdir()
    (home / ".ssh" / "config").write_text("Host gh.example.com\n  HostName 127.0.0.9\n")
    assert "hostname gh.example.com" in _client(home, "ssh", "-G", "gh.example.com")
    (home / "m.cfg").write_text('Match exec "false"\n  HostName 127.0.0.8\n')
    assert "hostname x.example.com" in _client(home, "ssh", "-F", str(home / "m.cfg"), "-G", "x.example.com")
    assert net_refuses(f"ssh -F {home / 'm.cfg'} x.example.com")   # left: an over-refusal, exec is never run


# -- the guard reads them ------------------------------------------------------------------------------------------

_INTERNAL = st.sampled_from(["169.254.169.254", "10.0.0.7", "127.1", "0x7f000001", "localhost", "[::1]",
                             "metadata.google.internal", "2130706433"])
_CURLRC = st.sampled_from(['url = "http://{h}/"', "url http://{h}/", "--url http://{h}/", "proxy = {h}:3128",
                           "proxy: {h}:3128", "-x {h}:3128", '  preproxy = "{h}"', "resolve = x.com:443:{h}",
                           "connect-to = ::{h}:80"])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(line=_CURLRC, host=_INTERNAL, where=st.sampled_from(["home", "curl_home", "xdg"]))
def test_a_curlrc_naming_an_internal_host_refuses_every_curl(home: Path, monkeypatch: pytest.MonkeyPatch,
                                                             line: str, host: str, where: str) -> None:
    d = home if where == "home" else home / where
    d.mkdir(exist_ok=True)
    if where != "home":
        monkeypatch.setenv("CURL_HOME" if where == "curl_home" else "XDG_CONFIG_HOME", str(d))
    (d / ".curlrc").write_text("# my settings\nsilent\n" + line.format(h=host) + "\n")
    try:
        assert net_refuses("curl https://example.com/")
        assert net_refuses("curl -s -q https://example.com/")   # -q counts only as the first option
        assert not net_refuses("curl -q https://example.com/")
    finally:
        (d / ".curlrc").unlink()


_GITCONFIG = st.sampled_from([
    '[url "http://{h}/"]\n\tinsteadOf = https://github.com/\n', '[URL "git@{h}:"]\n\tInsteadOf = https://github.com/\n',
    '[url "ssh://{h}/"]\n  pushInsteadOf = https://github.com/\n', "[http]\n\tproxy = {h}:3128\n",
    '[http "https://github.com"]\n\tproxy = "http://{h}:3128"\n', '[remote "origin"]\n\turl = git@{h}:x/y.git\n',
    "[http]\n\tproxy = \\\n {h}:3128\n", "[core]\n\tsshCommand = ssh -J {h}\n", "[Http]\n PROXY={h} ; comment\n"])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_GITCONFIG, host=_INTERNAL, where=st.sampled_from([".gitconfig", ".config/git/config", "included"]))
def test_a_gitconfig_naming_an_internal_host_refuses_git_that_connects(home: Path, text: str, host: str,
                                                                       where: str) -> None:
    if "[::1]" == host and "git@" in text:
        host = "127.1"
    path = home / (where if where != "included" else "inc.cfg")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text.format(h=host))
    if where == "included":
        (home / ".gitconfig").write_text("[user]\n\tname = x\n[include]\n\tpath = inc.cfg\n")
    try:
        assert net_refuses("git clone https://github.com/x/y")
        assert net_refuses("git -C repo fetch")
        assert not net_refuses("git status")
    finally:
        path.unlink()
        (home / ".gitconfig").unlink(missing_ok=True)


def test_wget_npm_pip_files_are_read(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (home / ".wgetrc").write_text("# http_proxy = http://gnu.org/\nhttps_proxy = 10.0.0.7:3128\n")
    assert net_refuses("wget https://example.com")
    (home / ".wgetrc").write_text(f"input = {home / 'urls'}\n")
    (home / "urls").write_text("http://169.254.169.254/\n")
    assert net_refuses("wget https://example.com")
    (home / ".npmrc").write_text("fund=false\n@corp:registry=http://verdaccio:4873/\n")
    assert net_refuses("npm install left-pad") and net_refuses("npx cowsay hi")
    (home / ".config" / "pip").mkdir(parents=True)
    (home / ".config" / "pip" / "pip.conf").write_text("[global]\nextra-index-url = https://pypi.org/simple "
                                                       "http://10.0.0.4/simple\n")
    assert net_refuses("pip install requests") and net_refuses("python3 -m pip install x")
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    assert not net_refuses("pip install requests")


def test_benign_files_and_commands_pass(home: Path) -> None:
    (home / ".curlrc").write_text("silent\nshow-error\nconnect-timeout = 5\n")
    (home / ".wgetrc").write_text("passive_ftp = on\ntries = 3\n")
    (home / ".gitconfig").write_text('[user]\n\tname = A\n\temail = a@b.com\n[url "git@github.com:"]\n\t'
                                     "insteadOf = https://github.com/\n[http]\n\tproxy = proxy.example.com:3128\n")
    (home / ".npmrc").write_text("//registry.npmjs.org/:_authToken=${NPM_TOKEN}\n"
                                 "registry=https://registry.npmjs.org/\n")
    for command in ("curl https://example.com", "wget https://example.com", "git clone https://github.com/x/y",
                    "git config user.email a@b.com", "git config --get http.proxy", "npm install", "pip install x",
                    "git config --global http.proxy http://proxy.example.com:3128"):
        assert not net_refuses(command), command


def test_unreadable_or_computed_files_refuse(home: Path) -> None:
    (home / ".curlrc").mkdir()   # exists, cannot be read as a file
    assert net_refuses("curl https://example.com")
    (home / ".curlrc").rmdir()
    (home / ".wgetrc").write_bytes(b"#" * ((1 << 20) + 10))   # over 1 MiB
    assert net_refuses("wget https://example.com")
    (home / ".wgetrc").unlink()
    assert net_refuses("HOME=$(mktemp -d) curl https://example.com")
    assert net_refuses("CURL_HOME=$D curl https://example.com")
    other = home / "other"
    other.mkdir()
    (other / ".curlrc").write_text("proxy = 10.0.0.1:3128\n")
    assert net_refuses(f"HOME={other} curl https://example.com")
    assert net_refuses(f"export CURL_HOME={other}; curl https://example.com")
    assert not net_refuses("curl https://example.com")


# -- writes of them ------------------------------------------------------------------------------------------------

_FILES = st.sampled_from(["~/.curlrc", "$HOME/.curlrc", "~/.wgetrc", "/etc/wgetrc", "~/.gitconfig",
                          "~/.config/git/config", ".git/config", "~/.npmrc", ".npmrc", "~/.config/pip/pip.conf",
                          "/etc/pip.conf", "~/.ssh/config", "~/.bashrc", "/etc/environment", "~/.curlr?",
                          "${HOME}/.wgetrc", "~/.docker/config.json"])
_WRITES = st.sampled_from(["echo aGk= | base64 -d > {f}", "printf 'x' >> {f}", "cp /tmp/x {f}", "tee {f} < /tmp/x",
                           "tee -a {f} < /tmp/x", "sed -i s/a/b/ {f}", "cat /tmp/x > '{f}'", "mv /tmp/x {f}",
                           "dd if=/tmp/x of={f}", "install -m 600 /tmp/x {f}", "ln -sf /tmp/x {f}"])


@settings(max_examples=150, deadline=None)
@given(write=_WRITES, path=_FILES)
def test_a_write_of_a_client_configuration_is_refused(write: str, path: str) -> None:
    if "'" in write and ("~" in path or "?" in path):   # quoted, "~/.curlr?" is a literal name under ./~
        write = write.replace("'", "")
    command = write.format(f=path)
    if "'" in command and "$" in path:
        command = command.replace("'", '"')
    assert net_refuses(command), command


@pytest.mark.parametrize("command", [
    "git config --global include.path /tmp/x", "git config --global http.proxy \"$(cat p)\"",
    "git config --global --edit", "git config user.name x; cp y ~/.gitconfig",
    "git config --global url.git@intranet:.insteadOf https://github.com/",
    "git config --global URL.http://10.0.0.1/.insteadOf https://github.com/",
    "git config --global core.sshCommand 'ssh -J intranet'", "git config --global Http.Proxy corp-proxy",
    "npm config set registry http://verdaccio:4873/", "npm config set registry=http://10.0.0.2/",
    "pip config set global.index-url http://pypi.corp/simple", "npm config set registry \"$R\"",
    "echo 'Host gh.example.com\n HostName 10.0.0.7' >> ~/.ssh/config; ssh gh.example.com"])
def test_a_configuration_command_is_read_as_what_it_sets(command: str) -> None:
    assert net_refuses(command)


def test_a_command_names_the_configuration_it_reads(home: Path) -> None:
    """git reads GIT_CONFIG_KEY_<n>/VALUE_<n> and -c include.path files, npm --userconfig (git 2.39, npm 9 seen
    connecting to 127.0.0.x); a relative configuration place is under the tool's unknown working directory."""
    (home / "inc.cfg").write_text("[http]\n\tproxy = 127.0.0.3:3128\n")
    (home / "u.npmrc").write_text("registry=http://127.0.0.5:9/\n")
    for command in ("GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=http.proxy GIT_CONFIG_VALUE_0=corp git clone https://x.com/r",
                    f"git -c include.path={home}/inc.cfg clone https://github.com/x/y",
                    f"git -c includeIf.onbranch:main.path={home}/inc.cfg fetch",
                    f"npm ping --userconfig {home}/u.npmrc",
                    f"npm install --globalconfig={home}/u.npmrc", "CURL_HOME=. curl https://example.com",
                    "WGETRC=rc wget https://example.com",
                    f"GIT_CONFIG_GLOBAL={home}/inc.cfg git fetch https://x.com/r"):
        assert net_refuses(command), command
    for command in ("git -c user.name=x commit -m y", "git -c http.proxy=proxy.example.com:3128 clone https://x.com/r",
                    "HOME=~ curl https://example.com"):
        assert not net_refuses(command), command


_READERS = st.sampled_from(["curl -K {f} https://example.com", "curl --config={f} https://example.com",
                             "wget -i {f}", "wget --config {f} https://example.com", "aria2c -i {f}",
                             "git -c include.path={f} fetch https://github.com/x/y", "npm ping --userconfig {f}",
                             "WGETRC={f} wget https://example.com", "GIT_CONFIG_GLOBAL={f} git fetch https://x.com/r",
                             "PIP_CONFIG_FILE={f} pip install x", "NPM_CONFIG_USERCONFIG={f} npm ping"])
_WRITERS = st.sampled_from(["echo dXJs | base64 -d > {f}", "cp /tmp/x {f}", "tee {f} < /tmp/x", "mv a {f}",
                            "printf x >> {f}"])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(writer=_WRITERS, reader=_READERS, sep=st.sampled_from(["; ", " && ", "\n"]))
def test_a_configuration_written_before_its_client_reads_it_refuses(tmp_path: Path, writer: str, reader: str,
                                                                    sep: str) -> None:
    f = tmp_path / "benign.cfg"
    f.write_text("silent\n")   # what the guard would read now: harmless
    assert net_refuses(writer.format(f=f) + sep + reader.format(f=f))


def test_a_client_reading_its_file_is_no_write(tmp_path: Path) -> None:
    (tmp_path / "c").write_text("silent\n")
    assert not net_refuses(f"curl -K {tmp_path}/c https://example.com")
    assert not net_refuses("curl -o out.json https://example.com && jq . out.json")


@pytest.mark.parametrize("command", [
    "ls > out.txt", "scp *.txt example.com:", "git fetch origin 'refs/*:refs/remotes/x/*'", "ln -s ../shared shared",
    "echo x > config.yaml", "cp .env.example .env", "git config user.email a@b.com", "pip config list",
    "npm config get registry", "git config --unset user.name"])
def test_ordinary_writes_pass(command: str) -> None:
    assert not net_refuses(command)


def test_readers_directly(tmp_path: Path) -> None:
    assert git_entries('[a "B.c"]\n\tK = "v # x" # c\n[d.E]\nf\n') == [("a.B.c.k", "v # x"), ("d.e.f", "true")]
    assert config_set(["git", "config", "--global", "url.http://10.1/.insteadOf", "x"]) == (["http://10.1/"], [])
    assert config_set(["git", "config", "--edit"]) is None and config_set(["ls"]) is None
    assert command_env(["HOME=/h CURL_HOME='/c' curl x"]) == {"HOME": ["/h"], "CURL_HOME": ["/c"]}
    assert config_writes([[("~/.curlrc", None)], [("*.txt", None)], [("a/b", None)]]) == ["~/.curlrc"]
    (tmp_path / ".curlrc").write_text("proxy = 10.0.0.1\n")
    env = {"HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    assert default_destinations(["curl", "x"], {}, env)[0] == ["10.0.0.1"]
    assert default_destinations(["curl", "-q", "x"], {}, env) == ([], [])
    assert default_destinations(["ls"], {}, env) == ([], [])
