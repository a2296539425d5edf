"""Session 26: a repository a git command reaches by a relative place (``git -C repo fetch``, ``cd repo && git
fetch``, ``GIT_DIR=repo/.git``) or by running in the guard's working directory has its ``config`` read as git reads
it; a relative place found from no base is refused (fail closed), but a directory the command itself makes."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentguard.policies.network_configs_env import command_env

from .test_network_configs import home, net_refuses  # noqa: F401 (the fixture: an empty HOME)

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")


def _git(*args: str, home: Path) -> None:
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", ""), "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", *args], check=True, env=env, timeout=30, capture_output=True)


@pytest.fixture
def work(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:  # noqa: F811
    """The guard's working directory: ``repo`` (origin internal), ``clean`` (origin public), ``plain`` (no repo)."""
    w = tmp_path / "w"
    w.mkdir()
    _git("init", "-q", str(w / "repo"), home=home)
    _git("-C", str(w / "repo"), "remote", "add", "origin", "http://127.0.0.9:9/x.git", home=home)
    (w / "repo" / "sub").mkdir()
    _git("init", "-q", str(w / "clean"), home=home)
    _git("-C", str(w / "clean"), "remote", "add", "origin", "https://github.com/a/b.git", home=home)
    (w / "plain").mkdir()
    monkeypatch.chdir(w)
    return w


@pytest.mark.parametrize("command", [
    "git -C repo fetch", "git -C repo/sub pull", "cd repo && git fetch", "cd repo/sub && git pull",
    "cd repo; cd sub; git push", "pushd repo && git fetch", "GIT_DIR=repo/.git git fetch",
    "git --git-dir=repo/.git fetch", "git --git-dir repo/.git ls-remote", "git -C clean -C ../repo fetch",
    "cd plain && git -C ../repo fetch", "cd 'repo' && git fetch", "git -C ./repo/./sub/.. fetch",
    # a place not found here (the tool's directory is not the guard's), or computed by the shell
    "git -C nowhere fetch", "cd nowhere && git fetch", "GIT_DIR=nowhere/.git git fetch", "cd $X && git fetch",
    "mkdir other && cd nowhere && git fetch"])
def test_a_relative_repository_is_read(work: Path, command: str) -> None:
    assert net_refuses(command), command


@pytest.mark.parametrize("command", [
    "git -C clean fetch", "cd clean && git pull", "cd plain && git status", "cd repo && git status",
    "git -C repo log", "git clone https://github.com/a/b x && cd x && git fetch", "cd nowhere && ls",
    "mkdir -p w2 && cd w2 && git init && git fetch https://github.com/a/b",
    "git clone git@github.com:a/b.git y && cd y/sub && git pull"])
def test_a_public_or_new_repository_stays_allowed(work: Path, command: str) -> None:
    assert not net_refuses(command), command


def test_the_guards_own_directory_is_read(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(work / "repo" / "sub")
    assert net_refuses("git fetch") and net_refuses("git pull --rebase") and not net_refuses("git status")
    monkeypatch.chdir(work / "clean")
    assert not net_refuses("git fetch")


def test_a_repository_config_rewriting_or_running_ssh_is_read(work: Path) -> None:
    (work / "clean" / ".git" / "config").write_text(
        '[remote "origin"]\n\turl = https://github.com/a/b\n[url "http://10.0.0.7/"]\n\tinsteadOf = https://github.com/\n')
    assert net_refuses("git -C clean fetch")
    (work / "clean" / ".git" / "config").write_text('[core]\n\tsshCommand = ssh -o ProxyCommand="nc 10.0.0.7 22"\n')
    assert net_refuses("cd clean && git fetch git@github.com:a/b.git")


def test_git_itself_fetches_from_the_relative_repositorys_origin(work: Path, home: Path) -> None:  # noqa: F811
    # the oracle: git 2.39 run with -C repo connects to the repository's own origin (127.0.0.9)
    done = subprocess.run(["git", "-C", "repo/sub", "fetch"], env={
        "HOME": str(home), "PATH": os.environ.get("PATH", ""), "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"},
        capture_output=True, text=True, timeout=30, cwd=work)
    assert "127.0.0.9" in done.stderr


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.sampled_from(["repo", "sub", ".", "..", "clean", "plain"]), min_size=1, max_size=4),
       form=st.sampled_from(["git -C {p} fetch", "cd {p} && git fetch"]))
def test_a_place_reaching_the_internal_repository_refuses(work: Path, parts: list[str], form: str) -> None:
    place = "/".join(parts)
    joined = os.path.join(str(work), place)
    target = os.path.realpath(joined)   # (the kernel's reading: "sub/.." needs sub)
    inside = target == str(work / "repo") or target.startswith(str(work / "repo") + os.sep)
    if not os.path.isdir(joined) or inside:
        assert net_refuses(form.format(p=place)), place


def test_a_link_is_resolved_as_the_kernel_does(work: Path) -> None:
    (work / "plain" / "link").symlink_to(work / "repo" / "sub")
    assert net_refuses("git -C plain/link/.. fetch")   # (lexically plain/, for the kernel repo/)
    assert net_refuses("cd plain/link && cd .. && git fetch")


def test_command_env_reads_relative_cds_and_new_directories() -> None:
    env = command_env(["git clone https://h.com/a/b.git && cd b && mkdir -p c d && cd c"])
    assert env["(cd)"] == ["b", "c"] and {"b", "c", "d"} <= set(env["(created)"])


# -- the cache of parsed files: checked against every file a reading read ------------------------------------------


def test_a_changed_include_is_read_again(home: Path) -> None:  # noqa: F811
    # s25's cache was keyed by the first file's stat only: an include changed after a first decision was not seen
    (home / ".gitconfig").write_text("[include]\n\tpath = inc.cfg\n")
    (home / "inc.cfg").write_text("[user]\n\tname = x\n")
    assert not net_refuses("git fetch https://github.com/a/b")
    (home / "inc.cfg").write_text('[url "http://10.0.0.7/"]\n\tinsteadOf = https://github.com/\n')
    assert net_refuses("git fetch https://github.com/a/b")
    (home / "inc.cfg").unlink()
    assert not net_refuses("git fetch https://github.com/a/b")
    (home / "inc2.cfg").write_text('[url "http://10.0.0.7/"]\n\tinsteadOf = https://github.com/\n')
    (home / ".gitconfig").write_text("[include]\n\tpath = inc.cfg\n[include]\n\tpath = inc2.cfg\n")
    assert net_refuses("git fetch https://github.com/a/b")


def test_a_missing_include_that_appears_is_read(home: Path) -> None:  # noqa: F811
    (home / ".gitconfig").write_text("[include]\n\tpath = later.cfg\n")
    assert not net_refuses("git fetch https://github.com/a/b")
    (home / "later.cfg").write_text('[remote "o"]\n\turl = http://127.0.0.9/x\n')
    assert net_refuses("git fetch https://github.com/a/b")


def test_curl_and_npm_files_named_by_files_are_read_again(home: Path) -> None:  # noqa: F811
    (home / ".curlrc").write_text(f"config = {home / 'more.cfg'}\n")
    (home / "more.cfg").write_text("silent\n")
    assert not net_refuses("curl https://example.com")
    (home / "more.cfg").write_text("proxy = 10.0.0.7:3128\n")
    assert net_refuses("curl https://example.com")
    (home / ".curlrc").unlink()
    (home / ".npmrc").write_text(f"userconfig = {home / 'u.npmrc'}\n")
    (home / "u.npmrc").write_text("color = false\n")
    assert not net_refuses("npm install x")
    (home / "u.npmrc").write_text("registry = http://10.0.0.7/\n")
    assert net_refuses("npm install x")


def test_the_cache_is_bounded_and_reads_as_reading_again(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    from agentguard.policies import network_cache, network_configs as nc
    monkeypatch.setattr(network_cache, "CACHE_SIZE", 4)
    paths = []
    for i in range(10):
        p = home / f"c{i}.cfg"
        p.write_text(f'[remote "o"]\n\turl = http://10.0.0.{i}/x\n')
        paths.append(str(p))
    first = [nc._read_file(p, "git") for p in paths]
    assert len(network_cache._CACHE) <= 4
    network_cache._CACHE.clear()
    assert [nc._read_file(p, "git") for p in paths] == first == [nc._read_file(p, "git") for p in paths]


def test_a_builtin_that_connects_nowhere_reads_no_file(home: Path) -> None:  # noqa: F811
    # git ignores an alias named as a builtin ("status"); a fetch alias still connects
    (home / ".gitconfig").write_text('[alias]\n\tstatus = fetch\n\tf = fetch\n[url "http://10.0.0.7/"]\n'
                                     '\tinsteadOf = https://github.com/\n')
    assert not net_refuses("git status") and net_refuses("git f") and net_refuses("git maintenance run")


@pytest.mark.parametrize("command", [
    "git -c http.curloptResolve=github.com:443:127.1 fetch https://github.com/a/b",
    "git -c http.https://github.com/.curloptResolve=+github.com:443:0 fetch https://github.com/a/b",
    "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=http.curloptResolve GIT_CONFIG_VALUE_0=github.com:443:0 git fetch "
    "https://github.com/a/b"])
def test_gits_curlopt_resolve_is_read(home: Path, command: str) -> None:  # noqa: F811
    # the oracle: git 2.39 (GIT_CURL_VERBOSE) logs "Added github.com:443:127.0.0.9 to DNS cache" and connects there
    assert net_refuses(command)
    (home / ".gitconfig").write_text("[http]\n\tcurloptResolve = github.com:443:127.1\n")
    assert net_refuses("git fetch https://github.com/a/b")
    (home / ".gitconfig").write_text("[http]\n\tcurloptResolve = github.com:443:140.82.112.3\n")
    assert not net_refuses("git fetch https://github.com/a/b")


def test_npms_project_npmrc_is_read(work: Path, home: Path) -> None:  # noqa: F811
    # the oracle: npm 9 in repo/ (or below it, with repo/package.json) reads repo/.npmrc: "npm config get registry"
    (work / "repo" / ".npmrc").write_text("registry=http://10.0.0.1/\n")
    for command in ("cd repo && npm install", "cd repo/sub && npm i x", "cd repo && npx cowsay", "cd nowhere && npm i"):
        assert net_refuses(command), command
    assert not net_refuses("cd clean && npm install") and not net_refuses("npm install")
    if shutil.which("npm"):
        done = subprocess.run(["npm", "config", "get", "registry"], cwd=work / "repo", capture_output=True,
                              text=True, timeout=60, env={"HOME": str(home), "PATH": os.environ.get("PATH", "")})
        assert done.stdout.strip() == "http://10.0.0.1/"


# -- kubectl's and helm's kubeconfig: clusters[].cluster.server ---------------------------------------------------

_KUBE = "apiVersion: v1\nclusters:\n- cluster:\n    server: {s}\n  name: c\n"


def test_a_kubeconfig_names_the_server(home: Path, tmp_path: Path) -> None:  # noqa: F811
    (home / ".kube").mkdir()
    (home / ".kube" / "config").write_text(_KUBE.format(s="https://10.0.0.1:6443"))
    for command in ("kubectl get pods", "helm list", "k9s"):
        assert net_refuses(command), command
    assert not net_refuses("kubectl config view")
    (home / ".kube" / "config").write_text(_KUBE.format(s="https://k8s.example.com:6443"))
    assert not net_refuses("kubectl get pods")
    other = tmp_path / "kc"
    other.write_text(_KUBE.format(s="https://127.1:6443") + "contexts: [{name: x, context: {cluster: c}}]\n")
    for command in (f"KUBECONFIG={other} kubectl get pods", f"kubectl --kubeconfig {other} get pods",
                    f"kubectl --kubeconfig={other} get pods", f"KUBECONFIG=/nope:{other} helm list"):
        assert net_refuses(command), command
    other.write_text("clusters: [{cluster: {server: https://10.1.1.1, proxy-url: 'http://127.1:3128'}}]\n")
    assert net_refuses(f"KUBECONFIG={other} kubectl get pods")
    other.write_text("clusters: [unclosed\n")
    assert net_refuses(f"KUBECONFIG={other} kubectl get pods")   # (no YAML: not read, refused)
    assert net_refuses("cp x ~/.kube/config && kubectl get pods")


def test_a_docker_contexts_endpoint_is_read(home: Path, tmp_path: Path) -> None:  # noqa: F811
    meta = home / ".docker" / "contexts" / "meta" / "abc"
    meta.mkdir(parents=True)
    (meta / "meta.json").write_text('{"Name": "r", "Endpoints": {"docker": {"Host": "tcp://10.0.0.1:2375"}}}')
    for command in ("docker ps", "docker --context r run alpine", "sudo -u $USER docker ps"):
        assert net_refuses(command), command
    (meta / "meta.json").write_text('{"Name": "d", "Endpoints": {"docker": {"Host": "unix:///run/d.sock"}}}')
    assert not net_refuses("docker ps")   # (the daemon's own local socket: as docker ps without a context)
    (meta / "meta.json").write_text('{"Name": "s", "Endpoints": {"docker": {"Host": "ssh://u@127.1"}}}')
    assert net_refuses("docker ps")
    (meta / "meta.json").write_text("{no json")
    assert net_refuses("docker ps")
    other = tmp_path / "dc" / "contexts" / "meta" / "x"
    other.mkdir(parents=True)
    (other / "meta.json").write_text('{"Endpoints": {"docker": {"Host": "tcp://192.168.1.5:2376"}}}')
    (meta / "meta.json").unlink()
    assert net_refuses(f"DOCKER_CONFIG={tmp_path / 'dc'} docker ps") and not net_refuses("docker ps")


def test_an_unknown_git_option_leaves_the_subcommand_unknown(home: Path) -> None:  # noqa: F811
    # git 2.40+'s "--attr-source TREE" takes the next word: "git --attr-source status fetch" fetches
    (home / ".gitconfig").write_text('[url "http://10.0.0.7/"]\n\tinsteadOf = https://github.com/\n')
    assert net_refuses("git --attr-source status fetch") and net_refuses("git --new-option log")
    for command in ("git status", "git -P log", "git --no-pager diff", "git", "git -c a.b=c status"):
        assert not net_refuses(command), command
