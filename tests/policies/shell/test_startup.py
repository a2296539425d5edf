"""Start-up files (:mod:`agentguard.policies.shell.startup`): the list, and one reading of a path however spelled.

Session 21: a literal ``~/bin/make`` was matched as ``//bin/make`` (allowed) while ``~/bin/ma?e`` was matched as
``/bin/make`` below a home (refused); the property below asks that a path and the same path spelled with a bracket
glob (``[m]ake``) get one answer from :func:`~agentguard.policies.shell.model.configures`.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings, strategies as st

from agentguard.config import load_stack
from agentguard.core.types import Context, ToolCall

from agentguard.policies.shell.model import configures
from agentguard.policies.shell.paths import pattern_paths
from agentguard.policies.shell.startup import CONFIG_FILES

_PARTS = st.sampled_from(["bin", "make", ".config", "go", "env", "site-packages", ".vim", "x", "lib", "usr", "etc",
                          "npmrc", "gitconfig", ".tool-versions", "notes.txt", "src", ".local", "share", "mise.toml"])


def test_the_list_holds_the_session_21_files() -> None:
    for p in ("*/site-packages/*", "*/etc/npmrc", "*/go/env", "*.tool-versions", "/usr/lib/*", "/home/*/bin/*"):
        assert p in CONFIG_FILES, p
    assert "/lib/*" not in CONFIG_FILES  # would refuse every relative "lib/x" (read below /)


def test_a_home_path_is_read_below_the_home() -> None:
    for path in ("~/bin/make", "~/.config/go/env", "~/.local/lib/python3.11/site-packages/pip/__init__.py"):
        assert configures(pattern_paths(path)), path
    for path in ("~/notes.txt", "lib/util.py", "src/lib/x.py", "~/src/app.py"):
        assert not configures(pattern_paths(path)), path


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(["~/", "/", "", "/home/u/", "~u/"]), st.lists(_PARTS, min_size=1, max_size=4), st.data())
def test_a_literal_path_and_its_glob_spelling_get_one_answer(head: str, parts: list[str], data: st.DataObject) -> None:
    path = head + "/".join(parts)
    k = data.draw(st.integers(len(head), len(path) - 1))
    if path[k] in "/.~":
        return  # a bracket never matches "/" and a leading "." needs its own spelling
    globbed = path[:k] + "[" + path[k] + "]" + path[k + 1:]
    assert bool(configures(pattern_paths(path))) == bool(configures(pattern_paths(globbed))), (path, globbed)


def test_editor_workspace_files_that_run_commands_are_start_up_files() -> None:
    """Session 23: ``echo x > .vscode/tasks.json`` (a task with ``"runOn": "folderOpen"`` runs when the folder is
    opened) and a write of ``.vscode/settings.json`` (``git.path``, terminal profiles) were allowed."""
    for path in (".vscode/tasks.json", "proj/.vscode/settings.json", "~/w/.vscode/launch.json", ".vscode",
                 "team.code-workspace", ".idea/workspace.xml", ".run/app.run.xml"):
        assert configures(pattern_paths(path)), path
    for path in ("src/vscode_tasks.json", "docs/vscode.md", "settings.json", "tasks.json", ".idea/misc.txt"):
        assert not configures(pattern_paths(path)), path


_SYSTEM = ["/etc/init.d/x", "/etc/apt/apt.conf.d/99x", "/etc/logrotate.d/x", "/etc/udev/rules.d/99.rules",
           "/etc/update-motd.d/99x", "/etc/ld.so.conf.d/x.conf", "/etc/wgetrc", "/etc/hosts", "/etc/resolv.conf",
           "/etc/ssl/certs/ca-certificates.crt", "/usr/local/share/ca-certificates/evil.crt", "/etc/docker/daemon.json",
           "/etc/vim/vimrc", "/usr/share/vim/vimrc", "/etc/gdb/gdbinit", "/etc/mailcap", "/var/spool/at/x",
           "/var/lib/dpkg/info/bash.postinst", "/usr/lib/systemd/system/x.service", "/etc", "/etc/new-dir/x"]


def test_the_systems_configuration_and_programs_are_start_up_files_as_a_whole() -> None:
    """Session 25: writes under /etc and /usr were judged file by file (/etc/init.d/x, apt.conf.d hooks, udev rules,
    /etc/hosts, the CA store, /usr/share/vim/vimrc were allowed): now every path there, and the package manager's
    maintainer scripts and the spools, whichever tool writes them."""
    for path in _SYSTEM:
        assert configures(pattern_paths(path)), path
    for path in ("src/etc.py", "notes/etc", "docs/usr-guide.md", "~/project/README.md", "/tmp/x", "/var/tmp/x",
                 "/usr/local", "lib", "src/lib"):
        assert not configures(pattern_paths(path)), path


_EXAMPLE = Path(__file__).resolve().parents[3] / "src/agentguard/server/examples/rules.toml"


@functools.lru_cache(maxsize=1)
def _example() -> Any:
    return load_stack(str(_EXAMPLE))


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(_SYSTEM), st.sampled_from(["echo x > {}", "cp notes.txt {}", "tee -a {} < notes.txt",
                                                    "sort -o {} notes.txt", "ln -sf notes.txt {}", "mv notes.txt {}"]))
def test_a_system_file_written_by_any_command_is_refused(path: str, template: str) -> None:
    command = template.format(path)
    assert _example().check(Context(run_id="s25"), ToolCall("run_command", {"command": command})).decision.refuses, \
        command
    assert _example().check(Context(run_id="s25"), ToolCall("write_file", {"path": path, "content": "x"})
                            ).decision.refuses, path
