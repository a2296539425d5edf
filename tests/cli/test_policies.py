"""`agentguard verify` exit codes without Nagini (invalid policy: 2; failing generated tests: 1)."""

import pytest

from agentguard.cli import main
from agentguard.policies import library_path


def run(argv):
    with pytest.raises(SystemExit) as ei:
        main(argv)
    return ei.value.code


def test_verify_invalid_policy_exits_2(tmp_path, capsys):
    f = tmp_path / "evil.py"
    f.write_text("import os\n\ndef check(x: int) -> int:\n    return os.system('true')\n")
    assert run(["verify", str(f)]) == 2
    assert "import os is not allowed" in capsys.readouterr().err


def test_verify_policy_failing_generated_tests_exits_1(tmp_path, capsys):
    f = tmp_path / "wrong.py"
    f.write_text(library_path("mind2web_sc").read_text().replace("age < 15:\n        return NEEDS_AGE_15",
                                                                   "age < 14:\n        return NEEDS_AGE_15"))
    assert run(["verify", str(f)]) == 1
    out = capsys.readouterr().out
    assert "generated tests failed" in out and "age=14" in out


def test_synthesize_without_endpoint_is_a_clear_error(tmp_path, capsys, monkeypatch):
    for k in ("AGENTGUARD_LLM_BASE_URL", "OPENAI_BASE_URL", "AGENTGUARD_LLM_MODEL"):
        monkeypatch.delenv(k, raising=False)
    spec = tmp_path / "spec.md"
    spec.write_text("Deny users under 18.")
    assert run(["synthesize", str(spec), "--out", str(tmp_path / "p.py")]) == 2
    assert "no LLM endpoint configured" in capsys.readouterr().err


def test_verify_exit_codes_follow_the_verifier(tmp_path, capsys, monkeypatch):
    """Exit 0 verified / 1 counterexample / 2 Nagini refused the file, with a stand-in for the worker."""
    import agentguard.policies.nagini as nagini_mod
    from agentguard.policies import VerificationError, VerificationResult

    outcomes = {}

    class Fake:
        startup_seconds = 0.0

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

        def verify(self, path):
            return outcomes[str(path)]

    monkeypatch.setattr(nagini_mod, "NaginiVerifier", lambda *a, **k: Fake())
    f = tmp_path / "p.py"
    f.write_text(library_path("asb_declared_tools").read_text())
    outcomes[str(f)] = VerificationResult(str(f), "verified", seconds=1.5)
    assert run(["verify", str(f)]) == 0
    cap = capsys.readouterr()
    assert "verified by Nagini" in cap.out
    # progress on stderr while the minutes of a cold start pass; none with --json (stdout stays one document)
    assert "starting the Nagini verifier" in cap.err and f"[1/1] proving {f} ..." in cap.err
    assert run(["verify", "--json", str(f)]) == 0
    assert "proving" not in capsys.readouterr().err
    outcomes[str(f)] = VerificationResult(str(f), "failed", (VerificationError("Postcondition", 9, {"tool": 4}, 0),))
    assert run(["verify", str(f)]) == 1
    assert "counterexample: tool=4 -> returns 0" in capsys.readouterr().out
    outcomes[str(f)] = VerificationResult(str(f), "invalid", (VerificationError("Type error"),))
    assert run(["verify", str(f)]) == 2


def _no_nagini(monkeypatch):
    import agentguard.policies.nagini as nagini_mod

    def refuse(*a, **k):
        raise AssertionError("Nagini must not be asked about a policy whose contract is not the specification's")

    monkeypatch.setattr(nagini_mod, "NaginiVerifier", refuse)


@pytest.mark.parametrize("edit", [("age < 18", "age <= 18"), ("category == JOB and age < 15", "category == JOB and age < 18")])
def test_verify_refuses_a_policy_whose_contract_was_edited_with_its_code(tmp_path, capsys, monkeypatch, edit):
    """Issue 26: the off-by-one and 'JOB under 18', edited in code AND contract, used to verify."""
    _no_nagini(monkeypatch)
    f = tmp_path / "m2w.py"
    f.write_text(library_path("mind2web_sc").read_text().replace(*edit))
    assert run(["verify", str(f)]) == 1
    out = capsys.readouterr().out
    assert "not the one fixed by specification mind2web_sc" in out and edit[1] in out


def test_verify_with_explicit_spec_and_json(tmp_path, capsys, monkeypatch):
    import json

    _no_nagini(monkeypatch)
    f = tmp_path / "p.py"
    f.write_text(library_path("asb_declared_tools").read_text().replace('POLICY_ID = "asb-declared-tools"',
                                                                        'POLICY_ID = "renamed"'))
    assert run(["verify", str(f), "--spec", "mind2web_sc", "--json"]) == 1
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["status"] == "contract-mismatch" and rows[0]["spec"] == "mind2web_sc"
