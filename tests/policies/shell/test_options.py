"""agentguard.policies.shell.options: jq's module directives and option allow list, make's command-line
assignments, cmake's -D cache entries, mypy's program-running options (unit cases and properties; the attacks
through the shipped rules.toml and the differentials against the real programs are in
test_analysis_redteam_s18.py)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from agentguard.policies.shell import analyse
from agentguard.policies.shell.options import (CMAKE_SAFE, JQ_OPTIONS, JQ_VALUES, cmake_reason, jq_reason,
                                               make_reason, mypy_reason, option_reason)
from agentguard.policies.shell.words import literal_word

FAST = settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


def jq(*args: str) -> str | None:
    return jq_reason([literal_word(a) for a in args])


@pytest.mark.parametrize("args", [
    ("-n", 'import "home/u/.docker/config" as $c; $c'), ("-n", 'include "m"; f'), ("-n", '"m" | modulemeta'),
    ("-n", '\n  # a comment\nimport "a" as $a; $a'), ("-nr", 'import"a"as$a;$a'), ("-f", "p.jq"),
    ("--from-file", "p.jq"), ("--from-file=p.jq",), ("-nf", "p.jq"), ("-rcf", "p.jq", "x"), ("--run-tests", "t"),
    ("--debug-trace", "."), ("-Z", "."), (".", "--unknown"), ("-n", "--arg", "a", "b", 'include "x"; 1'),
])
def test_jq_refuses_module_directives_a_filter_file_and_unknown_options(args: tuple[str, ...]) -> None:
    assert jq(*args) is not None, args


@pytest.mark.parametrize("args", [
    (".",), ("-r", ".name", "package.json"), ("-rc", ".a", "x.json"), ("--arg", "x", "import", ".a", "x.json"),
    ("--indent", "4", ".", "x.json"), (".", "--tab", "x.json"), ("-L", "lib", "-n", "1"), ("-Llib", "-n", "1"),
    ("--args", "-n", "$ARGS", "a"), ("-n", "1", "--jsonargs", "1", "2"), ("-s", "add", "a.json", "b.json"),
    ("--rawfile", "k", "f.txt", "-n", "$k"), (".imports", "x.json"), ("--", "-n"), ("--arg=x", "y", ".", "f"),
])
def test_jq_allows_everyday_filters_and_known_options(args: tuple[str, ...]) -> None:
    assert jq(*args) is None, args


def test_the_filter_is_the_first_operand_only() -> None:
    """A later operand is a file (or a string after --args), never read as jq code: "import" there is a name."""
    assert jq(".", "import") is None
    assert jq("--arg", "x", "include", ".") is None  # the value of --arg is not the filter


@FAST
@given(st.sampled_from(["import", "include", "modulemeta"]), st.text("\n\t ;|(.", max_size=4),
       st.text("\n\t ;|).", max_size=4), st.lists(st.sampled_from(sorted(o for o in JQ_OPTIONS if o.startswith("--")
                                                                        or o in ("-n", "-r", "-c"))), max_size=3))
def test_property_a_module_keyword_anywhere_in_the_filter_is_refused(kw: str, before: str, after: str,
                                                                      opts: list[str]) -> None:
    assert jq(*opts, f'{before}{kw}{after} "p" as $x; $x') is not None


@FAST
@given(st.text(st.characters(codec="ascii", exclude_characters="\x00"), min_size=1, max_size=12))
def test_property_an_option_outside_the_allow_list_is_refused(name: str) -> None:
    opt = "--" + name.split("=", 1)[0]
    if opt in JQ_OPTIONS or opt in JQ_VALUES or opt == "--":
        return
    assert jq(opt, ".") is not None, opt


@pytest.mark.parametrize("word", ["x!=id", "x:=$(shell id)", "x=$(shell id)", "x::=$(shell id)", "x:::=${y}",
                                  "x+=`id`", "x?=$$(id)", "CC=id;", "CC=a|b", "CC=a&b", "CC=(x)", "CC=a>b",
                                  "CC='a'", 'CC="a"', "CC=a\\b", "CC=a\nid", "SHELL=/bin/id", ".SHELLFLAGS=-c",
                                  "MAKEFLAGS=--eval=x", "MAKEFILES=/tmp/x.mk", "MAKE=id", "VPATH=/tmp",
                                  "x =$(id)", "=x", "$(shell touch N)=1", "$(x)=1"])
def test_make_refuses_assignments_that_run_code(word: str) -> None:
    assert make_reason([word]) is not None, word


@pytest.mark.parametrize("words", [["CC=clang"], ["PREFIX=/usr/local", "install"], ["CFLAGS=-O2 -g"], ["V=1"],
                                   ["-j4", "test"], ["-C", "sub", "all"], ["DESTDIR=build/x", "install"], []])
def test_make_allows_plain_assignments_and_targets(words: list[str]) -> None:
    assert make_reason(words) is None, words


@FAST
@given(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True),
       st.sampled_from(["=", ":=", "::=", ":::=", "+=", "?=", "!="]),
       st.text(st.characters(codec="ascii", exclude_characters="\x00"), max_size=10))
def test_property_make_refuses_exactly_the_code_bearing_assignments(name: str, op: str, value: str) -> None:
    got = make_reason([f"{name}{op}{value}"])
    if op == "!=" or any(ch in value for ch in "$;&|`()<>'\"\\\n\r"):
        assert got is not None, (name, op, value)  # a shell or a make expansion runs, whatever the name
    elif not name.upper().startswith(("MAKE", "SHELL")) and name.upper() not in ("VPATH", "GPATH"):
        assert got is None, (name, op, value)  # a plain value of an ordinary variable


@pytest.mark.parametrize("words", [["-DCMAKE_PROJECT_INCLUDE=/tmp/x.cmake", "."], ["-D", "CMAKE_TOOLCHAIN_FILE=t", "."],
                                   ["--toolchain", "t.cmake", "."], ["--toolchain=t.cmake"],
                                   ["-DCMAKE_C_COMPILER_LAUNCHER=id", "."], ["-DCMAKE_MODULE_PATH=/tmp", "."],
                                   ["-DPython3_EXECUTABLE=./x.sh", "."], ["-DFoo_DIR=/tmp/x", "."],
                                   ["-DCMAKE_C_FLAGS=-fplugin=x.so", "."], ["-Dcmake_project_include:FILEPATH=x"],
                                   ["--build", "b", "--", "x=$(shell id)"], ["-DMY_HOOK=x"]])
def test_cmake_refuses_entries_that_name_code(words: list[str]) -> None:
    assert cmake_reason(words) is not None, words


@pytest.mark.parametrize("words", [["-DCMAKE_BUILD_TYPE=Release", "."], ["-S", ".", "-B", "build"],
                                   ["-DBUILD_TESTING=ON", "."], ["--build", "build", "-j", "4"],
                                   ["--build", "build", "--", "-j4"], ["-D", "CMAKE_EXPORT_COMPILE_COMMANDS=ON"]])
def test_cmake_allows_everyday_configuration(words: list[str]) -> None:
    assert cmake_reason(words) is None, words


@FAST
@given(st.from_regex(r"CMAKE_[A-Z_]{1,20}", fullmatch=True))
def test_property_a_cmake_variable_outside_the_allow_list_is_refused(name: str) -> None:
    assert (cmake_reason([f"-D{name}=x"]) is None) == (name in CMAKE_SAFE)


@FAST
@given(st.sampled_from(["python-executable", "install-types"]), st.integers(3, 17), st.booleans())
def test_property_mypy_program_options_by_any_prefix(name: str, cut: int, attached: bool) -> None:
    opt = "--" + name[:cut]
    assert mypy_reason([opt + "=x" if attached else opt, "."]) is not None


def test_mypy_reads_options_from_an_at_file_and_allows_everyday_use() -> None:
    assert mypy_reason(["@args.txt"]) is not None
    assert mypy_reason(["--strict", "src"]) is None and mypy_reason(["--", "@x"]) is None


def test_option_reason_reads_python_dash_m_and_unknown_words() -> None:
    w = literal_word
    assert option_reason("python", [w("-m"), w("mypy"), w("--python-executable=x")]) is not None
    assert option_reason("python", [w("-m"), w("pytest"), w("-q")]) is None
    assert option_reason("cat", [w("import")]) is None
    unknown = analyse("make $T")  # an unknown word may hold x!=id
    assert unknown.unresolvable
    assert analyse("jq . *.json").unresolvable  # a file named --from-file=p.json would be an option
    assert not analyse("jq -r .name package.json").unresolvable


@pytest.mark.parametrize("words,archives", [
    (["-cf", "a.tar", "src"], ["a.tar"]), (["-cfa:b", "src"], ["a:b"]), (["-cvfa:b", "src"], ["a:b"]),
    (["--file=h:x", "-c"], ["h:x"]), (["-c", "--file", "h:x"], ["h:x"]), (["cf", "a.tar", "src"], ["a.tar"]),
    (["cvfC", "a.tar", "dir", "src"], ["a.tar"]), (["cCf", "dir", "a.tar"], ["a.tar"]), (["-Cdirf", "x"], []),
    (["-C", "d", "-f", "x"], ["x"]), (["-c", "--", "-fa:b"], []),
])
def test_tar_archives_in_every_spelling(words: list[str], archives: list[str]) -> None:
    from agentguard.policies.shell.options import tar_archives

    assert tar_archives(words) == archives


@pytest.mark.parametrize("words", [["-cfa:b", "src"], ["--file=h:x", "-c", "src"], ["cf", "u@h:x", "src"],
                                   ["-c", "--file", "h:x.tgz"]])
def test_tar_refuses_a_remote_archive(words: list[str]) -> None:
    from agentguard.policies.shell.options import tar_reason

    assert tar_reason(words) is not None
    assert tar_reason(["--force-local", *words]) is None  # then the name is a local file


@FAST
@given(st.text(st.characters(codec="ascii", exclude_characters="\x00"), min_size=1, max_size=12),
       st.sampled_from(["-cf{}", "-cvf{}", "-f{}", "--file={}"]))
def test_property_tar_refuses_exactly_host_colon_names(name: str, spelling: str) -> None:
    from agentguard.policies.shell.options import tar_reason

    remote = name.find(":") > 0 and "/" not in name[:name.find(":")]
    assert (tar_reason(["-c", spelling.format(name), "src"]) is not None) == remote, name


@pytest.mark.parametrize("words", [["auxe"], ["e"], ["axe", "-o", "pid,args"], ["-o", "pid", "e"], ["ewwax"],
                                   # session 25: the format specifier environ, in every place a format is written
                                   ["-o", "pid,environ"], ["-o", "environ"], ["-Oenviron"], ["--format", "environ"],
                                   ["--format=pid,environ"], ["-e", "-o", "environ"], ["o", "environ"],
                                   ["-o", "pid,environ=X"], ["-o", "environ:40"], ["-o", "pid environ"],
                                   ["-oenviron"], ["axo", "environ"]])
def test_ps_refuses_the_bsd_environment_option(words: list[str]) -> None:
    from agentguard.policies.shell.options import ps_reason

    assert ps_reason(words) is not None, words


@pytest.mark.parametrize("words", [["aux"], ["-ef"], ["-e"], ["-o", "user,pid"], ["o", "pid,user"],
                                   ["-eo", "pid,user,args"], ["aux", "--sort=-%mem"], ["--format", "user"],
                                   ["-p", "1", "-o", "user"], ["axo", "pid,user"], ["-u", "peter"], []])
def test_ps_allows_an_e_that_is_a_value_or_the_unix_option(words: list[str]) -> None:
    from agentguard.policies.shell.options import ps_reason

    assert ps_reason(words) is None, words
