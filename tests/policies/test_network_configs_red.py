"""Session 25 red team of :mod:`agentguard.policies.network_configs` and its helpers: each probe that found a hole is
kept here (a configuration file that is a FIFO or a device; a line break git does not make, a byte-order mark it
skips; curl's noproxy list; npm's files naming files; pip by any name and its prefix's pip.conf; a repository named by
an absolute path). The environment's probes are in test_network_configs_env.py.
Real curl 7.88 is the oracle where installed (run under a temporary HOME against closed ports of 127.0.0.x)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from agentguard.policies.network_configs import git_entries
from agentguard.policies.network_files import config_lines, read_limited, read_regular

from .test_network_configs import home, net_refuses  # noqa: F401 (the fixture: an empty HOME)


# -- a configuration file that is no regular file: never waited on, never read as empty --------------------------


@pytest.mark.parametrize("name,command", [(".curlrc", "curl https://example.com"),
                                          (".gitconfig", "git fetch https://github.com/a/b"),
                                          (".wgetrc", "wget https://example.com"), (".npmrc", "npm install"),
                                          (".ssh/config", "ssh example.com")])
def test_a_fifo_config_refuses_without_waiting(home: Path, name: str, command: str) -> None:
    (home / name).parent.mkdir(exist_ok=True)
    os.mkfifo(home / name)   # opening it for reading blocked the guard until a writer came (a denial of service)
    assert net_refuses(command)


def test_a_config_linked_to_a_fifo_or_a_device_refuses(home: Path) -> None:
    os.mkfifo(home / "fifo")
    (home / ".gitconfig").write_text("[include]\n\tpath = fifo\n")
    assert net_refuses("git fetch https://github.com/a/b")
    (home / ".gitconfig").unlink()
    for target in (str(home / "fifo"), "/dev/zero"):
        (home / ".curlrc").unlink(missing_ok=True)
        (home / ".curlrc").symlink_to(target)
        assert net_refuses("curl https://example.com")
    assert net_refuses(f"curl -K {home}/fifo https://example.com")
    assert net_refuses(f"wget -i {home}/fifo")
    assert net_refuses(f"ssh -F {home}/fifo example.com")


def test_a_directory_named_curlrc_refuses(home: Path) -> None:
    (home / ".curlrc").mkdir()
    assert net_refuses("curl https://example.com")


def test_the_null_device_reads_as_no_file(home: Path) -> None:
    # the common idioms stay allowed: /dev/null is an empty configuration
    for command in ("ssh -F /dev/null example.com", "GIT_CONFIG_GLOBAL=/dev/null git fetch https://github.com/a/b",
                    "curl -K /dev/null https://example.com", "WGETRC=/dev/null wget https://example.com"):
        assert not net_refuses(command), command


def test_read_regular_refuses_what_is_no_regular_file(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "f")
    for path in (tmp_path / "f", tmp_path, Path("/dev/zero")):
        with pytest.raises(OSError):
            read_regular(str(path))
        assert read_limited(str(path)) is None
    assert read_regular(os.devnull) == b""
    (tmp_path / "r").write_bytes(b"x" * 10)
    assert read_regular(str(tmp_path / "r"), 4) == b"xxxxx"


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl not installed")
def test_curl_reads_a_curlrc_behind_a_symlink(home: Path) -> None:
    # the oracle: curl follows a symlinked ~/.curlrc, so a link to a FIFO is a file it reads (and waits on)
    (home / "real").write_text('url = "http://127.0.0.9:9/evil"\n')
    (home / ".curlrc").symlink_to(home / "real")
    done = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{url_effective}\\n", "--connect-timeout", "1",
                           "http://127.0.0.8:9/ok"], env={"HOME": str(home), "PATH": os.environ.get("PATH", "")},
                          capture_output=True, text=True, timeout=20)
    assert "127.0.0.9" in done.stdout
    assert net_refuses("curl http://example.com/")

# -- the line grammar: git splits at \n only and skips a byte-order mark ------------------------------------------

_INSTEAD = '[url "http://127.0.0.9:9/{}"]\n\tinsteadOf = https://github.com/\n'
_TEXTS = {"u2028": _INSTEAD.format("\u2028"), "nel": _INSTEAD.format("\x85"), "bom": "\ufeff" + _INSTEAD.format(""),
          "vt": _INSTEAD.format("\x0b"), "crlf": _INSTEAD.format("").replace("\n", "\r\n"),
          "cr": _INSTEAD.format("").replace("\n", "\r")}


@pytest.mark.parametrize("name", sorted(_TEXTS))
def test_a_gitconfig_git_reads_is_read_here(home: Path, name: str) -> None:
    (home / ".gitconfig").write_text(_TEXTS[name], encoding="utf-8", newline="")
    assert net_refuses("git ls-remote https://github.com/a/b")


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
@pytest.mark.parametrize("name", ["u2028", "bom", "cr"])
def test_git_reads_those_gitconfigs(home: Path, name: str) -> None:
    # the oracle: git 2.39 rewrote https://github.com/ to the closed port of 127.0.0.9
    (home / ".gitconfig").write_text(_TEXTS[name], encoding="utf-8", newline="")
    done = subprocess.run(["git", "ls-remote", "https://github.com/a/b"], env={
        "HOME": str(home), "PATH": os.environ.get("PATH", ""), "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"},
        capture_output=True, text=True, timeout=20)
    assert "127.0.0.9" in done.stderr


def test_config_lines_split_at_newlines_only() -> None:
    assert config_lines("a\r\nb\u2028c\x85d\x0be\rf\n") == ["a", "b\u2028c\x85d\x0be\rf", ""]
    assert git_entries(_TEXTS["u2028"]) == [("url.http://127.0.0.9:9/\u2028.insteadof", "https://github.com/")]


# -- curl's noproxy list names hosts not proxied: no destination (a corporate ~/.curlrc holds one) ----------------


def test_a_curlrc_noproxy_list_is_no_destination(home: Path) -> None:
    (home / ".curlrc").write_text("proxy = http://proxy.example.com:3128\nnoproxy = localhost,127.0.0.1,.corp\n")
    assert not net_refuses("curl https://example.com")   # it refused every curl call
    for command in ("curl --noproxy '*' https://example.com", "curl --noproxy localhost,127.0.0.1 https://example.com"):
        assert not net_refuses(command), command
    assert net_refuses("curl --noproxy localhost http://127.0.0.1/")   # the URL still counts
    (home / ".curlrc").write_text("noproxy = localhost\nurl = http://169.254.169.254/\n")
    assert net_refuses("curl https://example.com")


# -- npm's files that name npm's other files: globalconfig, userconfig, prefix ($prefix/etc/npmrc) ----------------


@pytest.fixture
def evil_npm(home: Path) -> Path:
    (home / "other").write_text("registry=http://127.0.0.9:9/\n")
    (home / "pp" / "etc").mkdir(parents=True)
    (home / "pp" / "etc" / "npmrc").write_text("registry=http://127.0.0.9:9/\n")
    return home


@pytest.mark.parametrize("content", ["globalconfig={h}/other", "prefix={h}/pp", "prefix=~/pp", "userconfig={h}/other",
                                     "globalconfig=${{X}}", "prefix=relative"])
def test_an_npmrc_naming_another_file_reads_it(evil_npm: Path, content: str) -> None:
    (evil_npm / ".npmrc").write_text(content.format(h=evil_npm) + "\n")
    assert net_refuses("npm install leftpad")


@pytest.mark.parametrize("command", ["NPM_CONFIG_PREFIX={h}/pp npm install x", "npm_config_prefix={h}/pp npm i x",
                                     "PREFIX={h}/pp npm i x", "npm --prefix {h}/pp install x",
                                     "npm --prefix={h}/pp install x", "npm config set prefix {h}/pp"])
def test_a_prefix_the_command_gives_npm_reads_its_global_file(evil_npm: Path, command: str) -> None:
    assert net_refuses(command.format(h=evil_npm))


def test_ordinary_npm_prefixes_stay_allowed(home: Path) -> None:
    (home / ".npmrc").write_text("prefix=~/.npm-global\n")
    for command in ("npm install leftpad", "npm --prefix ./app install", "npm config set prefix ~/.npm-global",
                    "npm ci"):
        assert not net_refuses(command), command


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm not installed")
def test_npm_reads_its_global_file_under_the_prefix(home: Path) -> None:
    # the oracle: npm 11 reads $prefix/etc/npmrc as its global file, prefix from ~/.npmrc, the environment or --prefix
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", "")}
    (home / ".npmrc").write_text(f"prefix={home}/pp\n")
    get = ["npm", "config", "get", "globalconfig"]
    assert subprocess.run(get, env=env, capture_output=True, text=True, timeout=60).stdout.strip() == \
        f"{home}/pp/etc/npmrc"
    (home / ".npmrc").write_text(f"globalconfig={home}/other\n")
    assert subprocess.run(get, env=env, capture_output=True, text=True, timeout=60).stdout.strip() == f"{home}/other"


# -- pip by any name (pip3.11, python3.11 -m pip, -mpip, pipx), and the site file of the interpreter that runs it ----


@pytest.mark.parametrize("command", ["pip3.11 install x", "pip-3.11 install x", "python3.11 -m pip install x",
                                     "python3 -mpip install x", "python3 -I -m pip install x", "py -m pip install x",
                                     "pipx install x", "eval python3.12 -m pip install x"])
def test_pip_by_any_name_reads_its_files(home: Path, command: str) -> None:
    assert not net_refuses(command)
    (home / ".config" / "pip").mkdir(parents=True)
    (home / ".config" / "pip" / "pip.conf").write_text("[global]\nindex-url = http://127.0.0.9:9/simple\n")
    assert net_refuses(command)


def test_a_virtual_environment_run_by_its_path_reads_its_pip_conf(home: Path, tmp_path: Path) -> None:
    venv = tmp_path / "v"
    (venv / "bin").mkdir(parents=True)
    for command in ("{v}/bin/python -m pip install x", "cd /tmp && {v}/bin/pip3 install x", "{v}/bin/pip install x"):
        assert not net_refuses(command.format(v=venv))
    (venv / "pip.conf").write_text("[global]\nindex-url = http://127.0.0.9:9/simple\n")
    for command in ("{v}/bin/python -m pip install x", "cd /tmp && {v}/bin/pip3 install x", "{v}/bin/pip install x"):
        assert net_refuses(command.format(v=venv)), command
    assert not net_refuses(f"{venv}/bin/python -c 'print(1)'")   # no pip: its files are not read


@pytest.mark.skipif(shutil.which("python3") is None, reason="python3 not installed")
def test_pip_reads_the_pip_conf_of_its_prefix(home: Path, tmp_path: Path) -> None:
    # the oracle: pip (23.2) reads sys.prefix/pip.conf, a virtual environment's run by its path without activation
    venv = tmp_path / "v"
    subprocess.run(["python3", "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], check=True,
                   timeout=60)
    (venv / "pip.conf").write_text("[global]\nindex-url = http://127.0.0.9:9/simple\n")
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "config", "debug"], env={
        "HOME": str(home), "PATH": os.environ.get("PATH", "")}, capture_output=True, text=True, timeout=60)
    assert "global.index-url: http://127.0.0.9:9/simple" in done.stdout or "No module named pip" in done.stderr


# -- the repository a git command names by an absolute path: its own config is read ------------------------------


@pytest.fixture
def repo(home: Path, tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git not installed")
    r = tmp_path / "repo"
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", ""), "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "init", "-q", str(r)], check=True, env=env, timeout=30)
    subprocess.run(["git", "-C", str(r), "remote", "add", "origin", "http://127.0.0.9:9/x.git"], check=True, env=env,
                   timeout=30)
    subprocess.run(["git", "init", "-q", "--bare", str(r / "bare.git")], check=True, env=env, timeout=30)
    (r / "bare.git" / "config").write_text('[url "http://127.0.0.9:9/"]\n\tinsteadOf = https://github.com/\n')
    (r / "sub").mkdir()
    return r


@pytest.mark.parametrize("command", ["git -C {r} fetch", "git -C {r}/sub pull", "cd {r} && git fetch",
                                     "cd {r}/sub; git pull", "git --git-dir={r}/.git fetch",
                                     "GIT_DIR={r}/.git git fetch origin", "git -C {r} push",
                                     "git --git-dir {r}/bare.git ls-remote https://github.com/a/b",
                                     "cd {r}/bare.git && git ls-remote https://github.com/a/b",
                                     "git -C /tmp -C {r} fetch"])
def test_a_repository_named_by_its_path_is_read(repo: Path, command: str) -> None:
    assert net_refuses(command.format(r=repo))


def test_a_repository_with_a_public_origin_stays_allowed(repo: Path, home: Path) -> None:
    (repo / ".git" / "config").write_text('[remote "origin"]\n\turl = https://github.com/a/b.git\n')
    for command in ("git -C {r} fetch", "cd {r} && git pull", "git -C {r} status", "cd /tmp/w && git pull"):
        assert not net_refuses(command.format(r=repo)), command


@pytest.mark.parametrize("command", ["cd /tmp/w && echo hi > notes.txt && curl https://example.com",
                                     "python3 -m venv /srv/v && /srv/v/bin/pip install x",
                                     "cd /tmp && git clone https://github.com/a/b && cd b && git fetch",
                                     "mkdir -p /tmp/w && cd /tmp/w && git init && git fetch https://github.com/a/b"])
def test_a_cd_or_a_new_environment_is_no_configuration_written(home: Path, command: str) -> None:
    assert not net_refuses(command)


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_git_fetches_from_the_origin_of_a_repository_named_by_path(repo: Path, home: Path) -> None:
    # the oracle: git 2.39 connects to the repository's own origin (127.0.0.9)
    done = subprocess.run(["git", "-C", str(repo / "sub"), "fetch"], env={
        "HOME": str(home), "PATH": os.environ.get("PATH", ""), "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"},
        capture_output=True, text=True, timeout=30)
    assert "127.0.0.9" in done.stderr
