"""agentguard.policies.shell.payloads: interpreters, awk, sed, find."""

from agentguard.policies.shell import analyse


def test_interpreters_inline_code_is_unresolvable_but_modules_and_versions_are_not():
    for cmd in ("python -c 'import os'", "perl -e 1", "php -r 'x'", "node -e 1", "python"):
        assert analyse(cmd).unresolvable, cmd
    for cmd in ("python -m pytest", "python --version", "python3 -V", "node --version", "python x.py"):
        assert not analyse(cmd).unresolvable, cmd


def test_awk_and_sed_that_can_run_or_write_are_unresolvable():
    assert analyse("awk 'BEGIN{system(\"rm x\")}'").unresolvable
    assert not analyse("awk '{print $1}' f").unresolvable
    assert analyse("sed 's/a/b/e' f").unresolvable and analyse("sed -n 'w out' f").unresolvable
    assert not analyse("sed 's/a/b/g' f").unresolvable


def test_find_runs_exec_and_delete():
    assert "rm" in analyse("find / -exec rm -rf {} +").programs
    a = analyse("find /etc -delete")
    assert any(c.program == "rm" and "/etc" in c.argv for c in a.commands)
