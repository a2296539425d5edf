"""Every Python example a user can copy from the README or ``docs/`` runs in a test, and prints what it says.

Most pages have a test beside the module they document (:data:`RUN_ELSEWHERE`); this file runs the rest
(household, model checking, the policy file, synthesis and the Nagini block of the policies page) and keeps the
list whole: :func:`test_every_python_block_is_run_by_a_test` fails on a page or a block that no test runs (a new
page, a new block in a page whose test runs a fixed number). An example's ``# -> text`` comments are what it
prints, in order (as in ``tests/test_readme.py``). Examples that need the recorded runs skip with a message
where the data folder is absent, like every data test.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

#: page -> (the test that runs its Python blocks, how many it runs: None = all, through ``range(len(BLOCKS))``).
RUN_ELSEWHERE: dict[str, tuple[str, int | None]] = {
    "README.md": ("tests/test_readme.py", None),
    "calibration.md": ("tests/calibration/test_docs.py", None),
    "control.md": ("tests/envs/driving/test_guard.py", 1),
    "integrations.md": ("tests/integrations/test_integrations_docs.py", None),
    "learning.md": ("tests/predictive/test_docs.py", None),
    "observability.md": ("tests/core/test_docs.py", 2),
    "server.md": ("tests/server/test_server_docs.py", None),
}
#: page -> {text that picks the block: the test that runs it} for pages whose blocks are run one by one.
BLOCKS_ELSEWHERE: dict[str, dict[str, str]] = {
    "policies.md": {"ToolCallGuard([PolicyBinding": "tests/policies/test_docs.py",
                    "agentdojo_proactive": "tests/policies/test_docs.py"},
}
#: page -> the text that picks each block this file runs.
RUN_HERE: dict[str, tuple[str, ...]] = {
    "household.md": ("import build_scene", "learn_family_models(replay_run", "run_episode("),
    "model-checking.md": ("read_prism(",),
    "policies.md": ('POLICY_ID = "hotel-age"', "NaginiVerifier()", "synthesize("),
}


def _blocks(page: str) -> list[str]:
    path = REPO / page if page == "README.md" else REPO / "docs" / page
    return re.findall(r"^```python\n(.*?)^```", path.read_text(encoding="utf-8"), re.S | re.M)


def _block(page: str, marker: str) -> str:
    found = [b for b in _blocks(page) if marker in b]
    assert len(found) == 1, f"{page}: {len(found)} Python blocks contain {marker!r}"
    return found[0]


def _run(code: str, name: str, capsys: pytest.CaptureFixture[str], namespace: dict | None = None) -> dict:
    """Execute one block and check its ``# -> text`` lines against what it printed, in order."""
    ns = namespace if namespace is not None else {"__name__": "__docs__"}
    exec(compile(code, name, "exec"), ns)  # noqa: S102 - running the documentation's own examples
    printed = [line.strip() for line in capsys.readouterr().out.splitlines()]
    pos = 0
    for want in (m.strip() for m in re.findall(r"# -> (.*)$", code, re.M)):
        assert want in printed[pos:], f"{name}: expected {want!r} in the printed lines {printed[pos:]}"
        pos = printed.index(want, pos) + 1
    return ns


def _recorded_runs() -> Path:
    from agentguard.envs.data import data_dir

    data = data_dir()
    if not (data / "agentspec" / "embodied_runs").is_dir():
        pytest.skip(f"the recorded household runs are absent ({data}/agentspec/embodied_runs; set AGENTGUARD_DATA)")
    return data


def test_every_python_block_is_run_by_a_test() -> None:
    untested = []
    for path in PAGES:
        page = path.name
        blocks = _blocks(page)
        if page in RUN_ELSEWHERE:
            test, count = RUN_ELSEWHERE[page]
            source = (REPO / test).read_text(encoding="utf-8")
            assert page in source, f"{test} does not read {page}"
            if count is None:
                assert "range(len(BLOCKS))" in source, f"{test} must run every block of {page}"
            elif len(blocks) != count:
                untested.append(f"{page}: {len(blocks)} blocks, {test} runs {count}")
            continue
        markers = [*BLOCKS_ELSEWHERE.get(page, {}), *RUN_HERE.get(page, ())]
        for test in set(BLOCKS_ELSEWHERE.get(page, {}).values()):
            assert page in (REPO / test).read_text(encoding="utf-8"), f"{test} does not read {page}"
        for i, block in enumerate(blocks):
            picked = [m for m in markers if m in block]
            if len(picked) != 1:
                untested.append(f"{page} block {i} (picked by {picked or 'no test'}): {block.splitlines()[0]}")
    assert not untested, "Python examples no test runs exactly once:\n" + "\n".join(untested)


def test_household_examples_run_in_order(capsys, monkeypatch, tmp_path) -> None:
    """The simulator block alone (embedded object table), then, on the recorded runs, the guard and the loop
    blocks in the same namespace, as a reader pastes them one after the other."""
    monkeypatch.chdir(tmp_path)
    first, *rest = RUN_HERE["household.md"]
    ns = _run(_block("household.md", first), "docs/household.md[simulator]", capsys)
    _recorded_runs()
    for marker in rest:
        _run(_block("household.md", marker), f"docs/household.md[{marker}]", capsys, ns)


def test_model_checking_example_runs(capsys, monkeypatch) -> None:
    monkeypatch.chdir(REPO)  # the example names the data by its path beside the repository
    if not (REPO / "../shared/data/pro2guard/embodied_dtmcs/log_raw_t103/dtmc.prism").is_file():
        pytest.skip("the Pro2Guard release models are absent (../shared/data/pro2guard)")
    _run(_block("model-checking.md", "read_prism("), "docs/model-checking.md", capsys)


def _hotel_age() -> str:
    return _block("policies.md", 'POLICY_ID = "hotel-age"')


def test_the_policy_file_example_loads_and_decides_as_its_contract_says(tmp_path) -> None:
    from agentguard.policies import load_policy

    path = tmp_path / "hotel_age.py"
    path.write_text(_hotel_age())
    policy = load_policy(path)  # the sandbox accepts it
    assert policy.id == "hotel-age" and policy.param_names == ("category", "age")
    assert policy.evaluate({"category": 3, "age": 17}).code == 1
    assert policy.evaluate({"category": 3, "age": 18}).code == 0 and policy.evaluate({"category": 2, "age": 5}).code == 0


def test_the_synthesis_example_runs(capsys, monkeypatch, tmp_path) -> None:
    monkeypatch.chdir(tmp_path)
    _run(_block("policies.md", "synthesize("), "docs/policies.md[synthesize]", capsys)


@pytest.mark.slow
def test_the_nagini_example_runs_and_finds_the_documented_counterexample(capsys, monkeypatch, tmp_path) -> None:
    """``wrong.py`` is what the page says it is: the hotel-age policy with ``age < 17`` in its body."""
    import os

    from agentguard.policies.nagini import find_nagini_venv

    if find_nagini_venv() is None:
        msg = "Nagini venv missing: run scripts/setup_nagini.sh"
        if os.environ.get("CI") == "true":
            pytest.fail(msg + " (CI must run the documented Nagini example)")
        pytest.skip(msg)
    body = "    if category == HOTEL and age < 18:\n"
    assert body in _hotel_age()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "wrong.py").write_text(_hotel_age().replace(body, body.replace("< 18", "< 17")))
    _run(_block("policies.md", "NaginiVerifier()"), "docs/policies.md[nagini]", capsys)


def test_the_readme_one_call_command_runs_as_written(capsys, monkeypatch) -> None:
    """The README's "try one call" command, from the repository root, prints what the README says it prints."""
    import shlex

    from agentguard.cli import main

    text = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    m = re.search(r"`agentguard (decide examples/[^`]+)` prints `([^`]+)`, exit (\d)", text)
    assert m, "the README's one-call example is gone"
    monkeypatch.chdir(REPO)
    with pytest.raises(SystemExit) as e:
        main(shlex.split(m.group(1)))
    assert e.value.code == int(m.group(3)) and capsys.readouterr().out.strip() == m.group(2)


# --- the shell commands the pages show name real commands and options -----------------------------------------

def _shell_commands() -> list[tuple[str, list[str], bool]]:
    """Every ``agentguard ...`` command of README.md and docs/*.md: (where, argv after ``agentguard``, complete).

    From sh blocks (``python -m agentguard`` and ``$ agentguard`` too; continuation lines joined; comments,
    redirections, ``&`` and what follows a pipe dropped): complete commands, parsed in full. From inline code
    (`` `agentguard ...` ``): the command path and option names only, since inline text uses placeholders."""
    import shlex

    found: list[tuple[str, list[str], bool]] = []
    for path in PAGES:
        text = path.read_text(encoding="utf-8")
        for block in re.findall(r"^```(?:sh|bash|console)\n(.*?)^```", text, re.S | re.M):
            for line in block.replace("\\\n", " ").splitlines():
                line = re.sub(r"^\$\s+", "", line.strip())
                m = re.match(r"(?:nice \S+ \S+ )?(?:python -m )?agentguard (.*)", line)
                if not m:
                    continue
                argv = shlex.split(m.group(1), comments=True)
                cut = [i for i, a in enumerate(argv) if a in ("|", "&", ">", ">>") or re.match(r"\d?>", a)]
                found.append((f"{path.name}: {line[:60]}", argv[: cut[0]] if cut else argv, True))
        for snippet in re.findall(r"`agentguard ([^`]+)`", " ".join(text.split())):
            if "|" in snippet or "<" in snippet or snippet.startswith("refused"):  # alternatives, placeholders, prose
                continue
            found.append((f"{path.name}: `agentguard {snippet}`", shlex.split(snippet.replace("...", "")), False))
    return found


def test_every_command_the_pages_show_exists_with_its_options() -> None:
    """A renamed command or option leaves no stale example behind (``agentguard serve new-credential`` was shown
    for the top-level ``agentguard new-credential``). Complete commands are parsed as the CLI parses them (a
    missing argument or an extra one fails); inline ones are checked for their command path and option names."""
    import typer

    from agentguard import cli

    root = typer.main.get_command(cli.app)
    root_opts = {o for p in root.params for o in (*p.opts, *p.secondary_opts)}
    bad = []
    commands = _shell_commands()
    assert len([c for c in commands if c[2]]) >= 20, commands  # the extraction still finds the pages' commands
    for where, argv, complete in commands:
        cmd, i = root, 0
        while i < len(argv) and (argv[i] in root_opts or hasattr(cmd, "commands")):
            if argv[i] in root_opts:
                i += 1
                continue
            if argv[i] not in cmd.commands:  # type: ignore[attr-defined]
                bad.append(f"{where}: no command {argv[i]!r}")
                break
            cmd, i = cmd.commands[argv[i]], i + 1  # type: ignore[attr-defined]
        else:
            args = argv[i:]
            known = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
            unknown = [a.split("=")[0] for a in args if a.startswith("-") and len(a) > 1 and a.split("=")[0] not in known
                       and not re.match(r"-?\d", a[1:])]
            if unknown:
                bad.append(f"{where}: unknown options {unknown}")
            elif complete:
                try:
                    cmd.make_context(cmd.name, list(args))
                except Exception as exc:  # click's usage errors
                    bad.append(f"{where}: {type(exc).__name__}: {exc}")
    assert not bad, "\n".join(bad)


def test_the_model_checking_command_prints_what_the_page_shows(capsys, monkeypatch) -> None:
    """The first sh block of docs/model-checking.md: its command's JSON has the initial value and the values the
    comment under it shows (the timing aside)."""
    import json
    import shlex

    from agentguard.cli import main

    block = re.search(r"^```bash\n(.*?)^```", (REPO / "docs/model-checking.md").read_text(encoding="utf-8"), re.S | re.M)
    assert block, "docs/model-checking.md lost its command block"
    lines = block.group(1).replace("\\\n", " ").splitlines()
    command = next(ln for ln in lines if ln.startswith("agentguard check") and "--json" in ln)
    shown = json.loads(re.sub(r", \"seconds\".*", "}", " ".join(ln[2:] for ln in lines[lines.index(command) + 1:][:2])))
    monkeypatch.chdir(REPO)
    argv = shlex.split(command)[1:]
    if not (REPO / argv[1]).is_file():
        pytest.skip(f"the Pro2Guard release models are absent ({argv[1]})")
    main(argv)  # returns on success (exit 0)
    got = json.loads(capsys.readouterr().out)
    assert got["property"] == shown["property"]
    assert got["initial"] == pytest.approx(shown["initial"], abs=1e-15)
    assert got["values"] == pytest.approx(shown["values"], abs=1e-15)
