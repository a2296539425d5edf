"""Session 25 red team, :mod:`agentguard.policies.network_configs_env`: HOME appended to, set by name or switched by
su/runuser/sudo; a client run by a program the shell reader does not unwrap; git's GIT_CONFIG_NOSYSTEM as git reads it.
Real curl 7.88 is the oracle where installed (run under a temporary HOME against closed ports of 127.0.0.x)."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from agentguard.policies.network_configs_env import command_env

from .test_network_configs import home, net_refuses  # noqa: F401 (the fixture: an empty HOME)


# -- the variables that move a client's files: appended to, or set by a switch of user ----------------------------


def test_an_appended_home_refuses(home: Path) -> None:
    # bash: HOME+=/x runs curl with HOME=$HOME/x, a directory the guard cannot name (the old value is the tool's)
    (home / "x").mkdir()
    (home / "x" / ".curlrc").write_text('url = "http://169.254.169.254/"\n')
    assert command_env(["HOME+=/x curl https://example.com"])["HOME"] == ["*+=/x"]
    assert net_refuses("HOME+=/x curl https://example.com")


@pytest.mark.parametrize("command,user", [("su bob -c 'curl x'", "bob"), ("su - bob -c 'curl x'", "bob"),
                                          ("su -m -s /bin/sh bob -c x", "bob"), ("runuser -u bob -- curl x", "bob"),
                                          ("sudo -E -u bob curl x", "bob"), ("sudo --user=bob curl", "bob"),
                                          ("doas -u bob curl", "bob"), ("sudo curl x", "root")])
def test_a_switch_of_user_reads_that_users_home(command: str, user: str) -> None:
    assert command_env([command])["HOME"] == [f"~{user}"]


def test_su_and_runuser_read_the_target_users_curlrc(home: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "bob"
    other.mkdir()
    (other / ".curlrc").write_text('url = "http://169.254.169.254/"\n')
    real = pwd.getpwnam
    monkeypatch.setattr(pwd, "getpwnam", lambda name: SimpleNamespace(pw_dir=str(other)) if name == "bob"
                        else real(name))
    assert net_refuses("su bob -s /bin/sh -c 'curl https://example.com'")
    assert net_refuses("runuser -u bob -- curl https://example.com")
    assert not net_refuses("curl https://example.com")


@pytest.mark.skipif(shutil.which("su") is None or os.geteuid() != 0, reason="su as root only")
def test_su_sets_the_target_users_home() -> None:
    # the oracle: util-linux su (and runuser) run the command with the passwd entry's home, not the caller's HOME
    done = subprocess.run(["su", "nobody", "-s", "/bin/sh", "-c", "echo $HOME"], env={"HOME": "/tmp/x",
                          "PATH": os.environ.get("PATH", "")}, capture_output=True, text=True, timeout=20)
    assert done.stdout.strip() == pwd.getpwnam("nobody").pw_dir


# -- a client run by a program the shell reader does not unwrap still reads its default files ---------------------

_UNWRAPPED = ["su -c 'curl https://example.com'", "unshare -r curl https://example.com",
              "eval curl https://example.com", "parallel curl ::: https://example.com",
              "python3 -c \"import os; os.system('curl https://example.com')\"",
              "script -c 'curl https://example.com'", "ssh-agent curl https://example.com",
              "dbus-run-session curl https://example.com", "sg root -c 'curl https://example.com'",
              "perl -e 'system(\"curl https://example.com\")'", "tclsh <<< 'exec curl https://example.com'",
              "node -e \"require('child_process').execSync('wget https://example.com')\"",
              "eval git fetch https://github.com/a/b", "eval pip install x"]


@pytest.mark.parametrize("command", _UNWRAPPED)
def test_a_client_the_reader_does_not_unwrap_reads_its_files(home: Path, command: str) -> None:
    assert not net_refuses(command)   # no configuration: an ordinary command
    (home / ".curlrc").write_text('url = "http://169.254.169.254/"\n')
    (home / ".wgetrc").write_text("http_proxy = http://169.254.169.254/\nuse_proxy = on\n")
    (home / ".gitconfig").write_text('[url "http://10.0.0.7/"]\n\tinsteadOf = https://github.com/\n')
    (home / ".pip").mkdir()
    (home / ".pip" / "pip.conf").write_text("[global]\nindex-url = http://10.0.0.7/simple\n")
    assert net_refuses(command)


def test_a_benign_configuration_keeps_texts_naming_clients_allowed(home: Path) -> None:
    (home / ".gitconfig").write_text('[user]\n\tname = a\n[url "git@github.com:"]\n\tinsteadOf = https://github.com/\n')
    (home / ".curlrc").write_text("silent\nconnect-timeout = 5\n")
    for command in ("grep -r curl .", "echo git is nice", "man wget", "git status", "npm test",
                    "eval curl https://example.com", "su -c 'git fetch https://github.com/a/b'"):
        assert not net_refuses(command), command


# -- a moving variable set by name (read, printf -v, mapfile, an array element), and git's NOSYSTEM as git reads it --


@pytest.mark.parametrize("command", ["printf -v HOME ~/x; curl https://example.com",
                                     "read HOME <<< ~/x; curl https://example.com",
                                     "IFS= read -r HOME < f; curl https://example.com",
                                     "mapfile -t HOME < f; curl https://example.com",
                                     "HOME[0]=~/x curl https://example.com",
                                     "declare -n r=CURL_HOME; r=~/x; curl https://example.com"])
def test_a_home_set_by_name_refuses(home: Path, command: str) -> None:
    (home / "x").mkdir()
    (home / "x" / ".curlrc").write_text('url = "http://169.254.169.254/"\n')
    assert net_refuses(command)


@pytest.mark.parametrize("command", ["echo $HOME && curl https://example.com", "curl -o ${HOME}/x https://example.com",
                                     "cd \"$HOME\" && curl https://example.com",
                                     "export PATH=$HOME/bin:$PATH; curl https://example.com"])
def test_a_home_read_stays_allowed(home: Path, command: str) -> None:
    assert not net_refuses(command)


def test_a_computed_or_false_nosystem_reads_the_system_file(home: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    system = tmp_path / "gitconfig"
    system.write_text('[url "http://127.0.0.9:9/"]\n\tinsteadOf = https://github.com/\n')
    monkeypatch.delenv("GIT_CONFIG_NOSYSTEM")
    monkeypatch.setenv("GIT_CONFIG_SYSTEM", str(system))
    assert not net_refuses("GIT_CONFIG_NOSYSTEM=1 git fetch https://github.com/a/b")
    for value in ("$X", "0", "false"):   # git_env_bool: only a true value skips the system file
        assert net_refuses(f"GIT_CONFIG_NOSYSTEM={value} git fetch https://github.com/a/b"), value


def test_the_directories_a_command_makes() -> None:
    """Session 26: ``git worktree add [-b B] PATH`` makes PATH (not B); ``git submodule`` switches no user."""
    made = command_env(["git worktree add -b fix ../wt main && cd ../wt"])["(created)"]
    assert "../wt" in made and "fix" not in made and "main" not in made
    assert "HOME" not in command_env(["git submodule update --init"])
