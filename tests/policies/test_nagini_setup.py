"""``agentguard setup nagini``: the Nagini environment made from a pip install (issue 29)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentguard.cli import main
from agentguard.core.errors import DependencyError
from agentguard.policies import nagini_setup
from agentguard.policies.nagini import find_nagini_venv

REPO = Path(__file__).resolve().parents[2]


def test_the_setup_logic_ships_in_the_package_and_the_script_is_a_thin_wrapper():
    assert (REPO / "src" / "agentguard" / "policies" / "nagini_setup.py").is_file()
    script = (REPO / "scripts" / "setup_nagini.sh").read_text()
    assert "-m agentguard setup nagini" in script and "pip install" not in script


def test_default_folder_is_where_the_verifier_looks(monkeypatch):
    monkeypatch.delenv("AGENTGUARD_NAGINI_VENV", raising=False)
    assert nagini_setup.default_nagini_venv() == REPO / ".nagini-venv"  # a source checkout
    monkeypatch.setenv("AGENTGUARD_NAGINI_VENV", "/x/nv")
    assert nagini_setup.default_nagini_venv() == Path("/x/nv")


def test_an_installed_environment_is_kept(capsys):
    venv = find_nagini_venv()
    if venv is None or not (venv / f".stamp-{nagini_setup.NAGINI_VERSION}").exists():
        pytest.skip("no Nagini environment here (`make test` makes one first)")
    main(["setup", "nagini", "--venv", str(venv)])
    cap = capsys.readouterr()
    assert cap.out.strip() == str(venv) and "already has nagini" in cap.err


def test_missing_java_without_root_is_one_line_naming_what_to_do(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(nagini_setup.shutil, "which", lambda name: None)
    with pytest.raises(SystemExit) as exc:
        main(["setup", "nagini", "--venv", str(tmp_path / "nv")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: Nagini needs Java 11+") and err.count("\n") == 1
    assert not (tmp_path / "nv").exists()


def test_a_failing_install_step_is_a_dependency_error(tmp_path, monkeypatch):
    """The steps run in order; a failing one (here: an interpreter that does not exist) stops with its output."""
    monkeypatch.setattr(nagini_setup, "_ensure_java", lambda log: None)
    with pytest.raises(DependencyError, match="setup nagini: .* failed"):
        nagini_setup.setup_nagini(tmp_path / "nv", python=sys.executable + "-missing", log=lambda m: None)


def test_the_verify_message_names_the_command_a_pip_user_can_run(monkeypatch, tmp_path):
    from agentguard.policies.nagini import NaginiVerifier

    with pytest.raises(DependencyError, match="agentguard setup nagini"):
        NaginiVerifier(tmp_path / "none")
