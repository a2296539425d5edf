"""network_repos (session 26): the repository a git command runs in, found as git finds it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentguard.policies.network_repos import repository_files


def _repo(d: Path) -> None:
    (d / ".git" / "objects").mkdir(parents=True)
    (d / ".git" / "HEAD").write_text("ref: refs/heads/main\n")


def test_found_from_relative_places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _repo(tmp_path / "r")
    (tmp_path / "r" / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    cfg = os.path.realpath(tmp_path / "r" / ".git" / "config")
    assert cfg in repository_files(["git", "-C", "r/sub", "fetch"], {}, {})
    assert cfg in repository_files(["git", "fetch"], {}, {"(cd)": ["r", "sub"]})
    assert cfg in repository_files(["git", "fetch"], {}, {"GIT_DIR": ["r/.git"]})
    assert repository_files(["git", "-C", "nope", "fetch"], {}, {}) == ["*?nope"]
    assert repository_files(["git", "fetch"], {}, {"(cd)": ["new"], "(created)": ["new"]}) == []
    monkeypatch.chdir(tmp_path / "r" / "sub")
    assert cfg in repository_files(["git", "fetch"], {}, {})


def test_a_gitdir_file_and_commondir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _repo(tmp_path / "main")
    wt = tmp_path / "main" / ".git" / "worktrees" / "w"
    wt.mkdir(parents=True)
    (wt / "commondir").write_text("../..\n")
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / ".git").write_text(f"gitdir: {wt}\n")
    monkeypatch.chdir(tmp_path / "w")
    found = [os.path.normpath(p) for p in repository_files(["git", "fetch"], {}, {})]
    assert os.path.normpath(tmp_path / "main" / ".git" / "config") in found


def test_project_files_and_working_places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentguard.policies.network_repos import project_files, working_places
    (tmp_path / "p" / "q").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    places, marks = working_places({"(cd)": ["p", "q"]})
    assert os.path.realpath(tmp_path / "p" / "q") in places and marks == []
    files = project_files(".npmrc", {"(cd)": ["p"]})
    assert os.path.join(os.path.realpath(tmp_path / "p"), ".npmrc") in files and "/.npmrc" in files
    assert "*?zz" in project_files(".npmrc", {"(cd)": ["zz"]})


def test_call_directories_and_gitmodules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Session 26: a call's cwd replaces the guard's directory as the base (relative: below the guard's; not found:
    a marker, no base); a work tree's .gitmodules is read beside its config; a -C below a created directory."""
    from agentguard.policies.network_repos import call_directories, git_subcommand, working_places
    _repo(tmp_path / "r")
    monkeypatch.chdir(tmp_path)
    real = os.path.realpath(tmp_path / "r")
    with call_directories(["r"]):
        assert working_places({}) == ([real], [])
        assert os.path.join(real, ".gitmodules") in repository_files(["git", "fetch"], {}, {})
    with call_directories(["nope", str(tmp_path / "r")]):
        assert working_places({}) == ([real], ["*?nope"])
    with call_directories(["$D"]):
        assert working_places({"(cd)": ["x"]}) == ([], ["*?$D", "*?x"])
    assert working_places({}) == ([os.path.realpath(tmp_path)], [])
    assert repository_files(["git", "-C", "new", "-C", "sub", "fetch"], {}, {"(created)": ["new"]}) == []
    assert repository_files(["git", "-C", "nope", "-C", "sub", "fetch"], {}, {}) == ["*?nope", "*?sub"]
    assert git_subcommand(["-C", "r", "--no-pager", "submodule", "update"]) == "submodule"
    assert git_subcommand(["--attr-source", "status", "fetch"]) is None


@pytest.mark.parametrize("before", [["--attr-source", "HEAD"], ["--super-prefix", "x/"], ["--list-cmds", "main"],
                                    ["--namespace", "n"], ["-c", "a.b=c"]])
def test_every_git_global_option_with_a_value_is_read_as_git_reads_it(tmp_path: Path, before: list[str]) -> None:
    """Each reader of git's options before the subcommand takes the shell reader's one list of those that take the
    next word (:data:`.shell.gitargs.GLOBAL_VALUES`): with a private shorter list, ``git --attr-source HEAD -C /r
    fetch origin`` stopped reading at ``HEAD``, /r's internal origin was never read and the network guard allowed it."""
    from agentguard.core.types import Context, ToolCall
    from agentguard.policies.networks import NetworkGuard

    _repo(tmp_path / "r")
    (tmp_path / "r" / ".git" / "config").write_text('[remote "origin"]\n\turl = http://10.0.0.7/x.git\n')
    r = str(tmp_path / "r")
    assert os.path.realpath(tmp_path / "r" / ".git" / "config") in repository_files(["git", *before, "-C", r, "fetch"],
                                                                                     {}, {})
    v = NetworkGuard().check(Context(run_id="s26"), ToolCall("run_command",
                                                             {"command": " ".join(["git", *before, "-C", r, "fetch origin"])}))
    assert v.decision.name != "ALLOW" and "10.0.0.7" in v.reason
