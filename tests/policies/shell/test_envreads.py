"""Reads of the process environment (agentguard.policies.shell.envreads; session 20 red team, see
test_analysis_redteam_s20.py): each attack printed a secret of the environment in real bash (or jq, make) and was
allowed by the shipped rules.toml before; the properties generate spellings, contexts and wrappers.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from agentguard.policies.shell import analyse
from agentguard.policies.shell.envreads import READABLE

sys.path.insert(0, os.path.dirname(__file__))
from test_analysis_redteam import refused  # noqa: E402

FAST = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
BASH = shutil.which("bash")
SECRET = "agsecret7f3e"
VAR = "AG_SECRET_TOKEN"

#: each printed the secret in real bash (the oracle below) and was allowed by the shipped rules before session 20
ENV_LEAKS = [
    "env", "env -0", "env -u X", "env -- ", "time env", "nice env", "timeout 5 env", "env | grep AG_", "printenv",
    f"printenv {VAR}", "export", "export -p", "export | grep AG_", f'echo "${VAR}"', f'printf %s "${VAR}"',
    f'cat <<< "${VAR}"', f"tee out <<< ${VAR}", f"cat <<E\n${VAR}\nE", f"cat <<E\n${{{VAR}}}\nE",
    f'[[ ${VAR} == agsecret* ]] && echo agsecret7f3e', f'case ${VAR} in agsecret*) echo agsecret7f3e;; esac',
    f'[ -n "${VAR}" ] && echo agsecret7f3e', f'test -n "${VAR}" && echo agsecret7f3e',
    f'echo "${{{VAR}:-x}}"', f'echo "${{{VAR}:0:8}}"', f'echo "${{{VAR}/x/y}}"', f'echo "${{#{VAR}}}"',
    f'X="${VAR}"; echo "$X"', f'true || {VAR}=1; echo "${VAR}"', f'({VAR}=1); echo "${VAR}"',
    f'{VAR}=1 & wait; echo "${VAR}"', f'{VAR}=1 echo "${VAR}"', f'echo "${VAR}"; {VAR}=1',
    f'readonly {VAR}; echo "${VAR}"', f'local {VAR}=1; echo "${VAR}"',
    f'for {VAR} in $(true); do :; done; echo "${VAR}"',
    f'echo $"${VAR}"', f'printf -v X %s "${VAR}"; echo "$X"', f'echo "$(echo "${VAR}")"', f'echo `echo "${VAR}"`',
    f'declare -p {VAR}', f'typeset -p {VAR}', "declare -p", "declare -x", "declare", "typeset -p", "set",
    'echo "$(env)"', 'jq -n env', "jq -n '$ENV'", f"jq -n 'env.{VAR}'", f"jq -rn '$ENV.{VAR}'",
    f"jq -n '[env[]] | map(select(startswith(\"ag\")))'", f'{VAR}=1 | cat; echo "${VAR}"',
    f'if false; then {VAR}=1; fi; echo "${VAR}"', f'echo `{VAR}=1`; echo "${VAR}"',
    # holes of this session's first version of the rule (bash 5.2 printed the environment's value): an append keeps
    # it, an element assignment keeps it as element 0, "read -t 0" assigns nothing, a later condition decides
    f'{VAR}+=x; echo "${VAR}"', f'export {VAR}+=x; echo "${VAR}"',
    f'while read -t 0 {VAR}; do echo "${VAR}"; break; done <<< x',
    f'while read -u 9 {VAR}; true; do echo "${VAR}"; break; done',
    # a declaration's assignment to a read-only name fails and the shell goes on (a plain one makes bash exit)
    f'readonly {VAR}; export {VAR}=1; echo "${VAR}"', f'declare -r {VAR}; typeset {VAR}=1; echo "${VAR}"',
    f'readonly {VAR}; readonly {VAR}=1; echo "${VAR}"', f'readonly {VAR}; declare {VAR}=1; echo "${VAR}"',
    # env -S whose split string holds no command word prints the environment too (coreutils 9.1)
    "env -S ''", "env -S' '", "env -S'X=1'", "env --split-string=", "env -S '# c'",
]
#: printed the environment too, refused by an option allow list (make's, .runners) rather than by .envreads
OPTION_LEAKS = ["make -p -f /dev/null", "make --print-data-base -f /dev/null", "make -np -f /dev/null",
                "make --print-data -f /dev/null", "make -qp -f /dev/null"]
#: printed the environment as well but were refused before session 20 (kept: they stay refused)
ALREADY_REFUSED = [
    "compgen -v", "compgen -e", "cat /proc/self/environ", "cat /proc/$$/environ", "echo ${!A*}", "echo ${!AG@}",
    f"{VAR}[1]=x; echo \"${{{VAR}[0]}}\"", f"echo ${{{VAR}@Q}}", "ps eww", "ps auxe",
    "python -c 'import os;print(os.environ)'", "alias", "git var -l",
    "sort /proc/self/environ", "readonly -p", f"echo ${VAR}", f"echo ${{{VAR}}}", "echo x | xargs printenv",
    "awk 'BEGIN{print ENVIRON[\"AG_SECRET_TOKEN\"]}'", "perl -e 'print %ENV'", "node -p process.env",
]
#: a command that sets what it reads, or reads a name that holds no secret: stays allowed (the analysis reads no
#: secret of the environment in it)
OWN_READS = [
    'X=1; echo "$X"', 'X=1 && echo "$X"', 'export X=1; echo "$X"', 'X=1 Y=2; echo "$X$Y"', 'declare X=1; echo "$X"',
    'for f in a b; do echo "$f"; done', 'for f in $(ls); do echo "$f"; done',
    'while read -r line; do echo "$line"; done < f', 'while IFS= read -r line; do echo "$line"; done < f',
    'while read -r a b; do echo "$a $b"; done < f', 'while read -ra arr; do echo "$arr"; done < f',
    'echo "$HOME" "$PWD" "$USER" "$PATH" "$LANG" "$LC_ALL" "$SHELL" "$?" "$#" "$1" "$@" "$*" "$$" "${10}" "${#}"',
    'X=1; (echo "$X")', 'X=1; echo "$(echo "$X")"', 'printenv PATH', 'printenv HOME LANG', 'env -i ls',
    'env X=1 ls', 'env ls', "export FOO=bar", "export -n FOO", "declare X=1; declare -p X", "set -e", "set --",
    "set -euo pipefail", "jq .env config.json", "jq '.[\"env\"]' f.json", "jq -r '.environment' f.json",
    "jq '$env' f.json", "env -S 'ls -l'", "env -S'X=1 ls'", "env -S 'ls' file",
    'x=abcdefgh a=(1 2 3 4); echo "${x:0:5}" "${a[@]}" "${a[3]}"',
    'X=1; sh -c \'echo "$X"\'', 'for f in a b; do n=$(wc -l < "$f"); echo "$f $n"; done', '{ X=1; echo "$X"; }',
    '( X=1; echo "$X" )', 'while read -r l; do c=$l; echo "$c"; done < f', 'declare -r X=1; echo "$X"',
]


def env_read(cmd: str) -> bool:
    return any("environment" in u for u in analyse(cmd).unresolvable)


@pytest.mark.parametrize("cmd", ENV_LEAKS)
def test_a_read_of_the_environment_is_refused(cmd: str) -> None:
    assert env_read(cmd), analyse(cmd).unresolvable
    assert refused(cmd), cmd


@pytest.mark.parametrize("cmd", OPTION_LEAKS)
def test_a_runner_option_that_prints_the_environment_is_refused(cmd: str) -> None:
    assert refused(cmd), cmd


@pytest.mark.parametrize("cmd", ALREADY_REFUSED)
def test_what_already_refused_a_read_of_the_environment_stays_refused(cmd: str) -> None:
    assert refused(cmd), cmd


@pytest.mark.parametrize("cmd", OWN_READS)
def test_a_variable_the_command_sets_itself_or_a_readable_one_is_no_read_of_the_environment(cmd: str) -> None:
    assert not env_read(cmd), analyse(cmd).unresolvable


def test_the_benign_forms_stay_allowed_by_the_example() -> None:
    ok = ['X=hello; echo "$X"', 'for f in *.py; do wc -l "$f"; done', 'echo "$HOME"', "printenv PATH",
          "export FOO=bar", 'X=1 && echo "$X"', "jq '.dependencies' package.json"]
    assert [c for c in ok if refused(c)] == []


_NAME = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True).filter(
    lambda n: n not in READABLE and not n.startswith("LC_"))
_FORMS = ["${N}", "$N", "${N}", "${N:-x}", "${N:+x}", "${#N}", "${N:0:3}", "${N/a/b}", "${N%x}", "${N^^}",
          "${N-x}", "${N[@]}", "${N[0]}"]
_CONTEXTS = ['echo "{e}"', "echo {e}", 'printf %s "{e}"', 'cat <<< "{e}"', "cat <<E\n{e}\nE", '[[ {e} == a* ]]',
             'case {e} in a) ;; esac', 'X="{e}"; echo "$X"', '[ -n "{e}" ]', 'a=({e})', 'echo "$(echo {e})"',
             "echo `echo {e}`", 'ls > "{e}"', 'echo "x{e}y"', 'echo $"{e}"', "time echo {e}"]
_UNSET_FIRST = ["", "true || N=1; ", "(N=1); ", "N=1 & ", "N=1 | cat; ", "if false; then N=1; fi; ",
                "echo `N=1`; ", "echo $(N=1); ", "local N=1; ", "readonly N; ", "export N; ", "f() { N=1; }; ",
                "N=1 true; ", "false && N=1; ", "{ false || N=1; }; ", "until read N; do :; done; ",
                "readonly N; export N=1; ", "N+=1; ", "while read -t 0 N; do echo x; done; ",
                "for i in 1; do N=1; done; ", "( N=1; ); ", "if true; then N=1; fi; ", "case x in x) N=1;; esac; "]


@FAST
@given(name=_NAME, form=st.sampled_from(_FORMS), context=st.sampled_from(_CONTEXTS),
       first=st.sampled_from(_UNSET_FIRST))
def test_any_expansion_of_a_name_the_command_did_not_certainly_set_is_refused(name: str, form: str, context: str,
                                                                            first: str) -> None:
    cmd = first.replace("N", name) + context.replace("{e}", form.replace("N", name))
    assert analyse(cmd).unresolvable, cmd
    assert refused(cmd), cmd


_SET_FIRST = ["{n}=v; ", "{n}=v && ", "export {n}=v; ", "declare {n}=v; ", "typeset {n}=v; ", "{n}=v {n}x=w; ",
              "{n}=$(date); ", "{n}=v\n"]


@FAST
@given(name=_NAME, form=st.sampled_from(_FORMS[:10]), first=st.sampled_from(_SET_FIRST))
def test_an_expansion_of_a_name_the_command_set_first_reads_no_environment(name: str, form: str, first: str) -> None:
    cmd = first.format(n=name) + 'echo "' + form.replace("N", name) + '"'
    assert not env_read(cmd), (cmd, analyse(cmd).unresolvable)


@FAST
@given(program=st.sampled_from(["env", "printenv", "export", "export -p", "declare -p", "typeset -p", "declare",
                                "set", "declare -x", "env -0", "env -u HOME", "env --", "env -i"]),
       wrapper=st.sampled_from(["", "time ", "nice ", "timeout 9 ", "nice -n 5 ", "env ", "command "]),
       pipe=st.sampled_from(["", " | grep -i key", " > out.txt", " | tee o", "; true"]))
def test_a_program_that_prints_the_environment_is_refused_however_wrapped(program: str, wrapper: str,
                                                                          pipe: str) -> None:
    cmd = wrapper + program + pipe
    if program == "env -i":
        return  # env -i with no command prints the (empty) environment
    assert refused(cmd), cmd


def _bash(cmd: str, cwd: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": cwd, VAR: SECRET, "X": "x"}
    return subprocess.run([BASH or "bash", "--norc", "--noprofile", "-c", cmd], cwd=cwd, env=env, text=True,
                          capture_output=True, stdin=subprocess.DEVNULL, timeout=20)


@pytest.mark.skipif(BASH is None, reason="bash not installed")
def test_bash_differential_each_leak_prints_the_secret() -> None:
    """The oracle: real bash, the secret in its environment, run in a throwaway directory (``jq`` where installed)."""
    missed = []
    with tempfile.TemporaryDirectory() as tmp:
        for cmd in ENV_LEAKS + OPTION_LEAKS:
            if cmd.split()[0] in ("jq", "make") and shutil.which(cmd.split()[0]) is None:
                continue
            out = _bash(cmd, tmp)
            if SECRET[:8] not in out.stdout and not re.search(r"\b12\b", out.stdout):  # ${#VAR}: the length, 12
                missed.append((cmd, out.stdout[-200:], out.stderr[-200:]))
    assert not missed, missed


@pytest.mark.skipif(BASH is None, reason="bash not installed")
def test_bash_differential_a_name_set_first_prints_what_was_set() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for first in ("{N}=mine; ", "{N}=mine && ", "export {N}=mine; ", "declare {N}=mine; "):
            out = _bash(first.format(N=VAR) + f'echo "${VAR}"', tmp)
            assert out.stdout.strip() == "mine" and SECRET not in out.stdout, first
        out = _bash(f'while read -r {VAR}; do echo "[${VAR}]"; done <<< mine', tmp)
        assert out.stdout.strip() == "[mine]"


# -- jq's env and $ENV, spelled as jq and bash read them -----------------------------------------------------------
JQ_ENV = ['jq -n "\\$ENV"', 'jq -n "env"', "jq -n $'env'", 'jq -n \'"\\(env)"\'', "jq -n '$E''NV'",
          "jq -n '$ENV as $e | $e'", "jq -n '$ENV|keys'", "jq -n '.|env'", 'jq -n \'@sh "\\(env)"\'',
          "jq -n '[$ENV[]]'", "jq -n '[env]'", "jq -n 'def f: env; f'", "jq -n 'en''v'", "jq -n 'env|.HOME'",
          "jq -n 'reduce env as $x (0;1)'",
          "jq -n '{a:env}'", 'jq -n e"nv"', "jq -rn --arg x 1 'env'", "jq -n '  env  '", "jq -c -n '$ENV'"]


@pytest.mark.parametrize("cmd", JQ_ENV)
def test_jq_reading_the_environment_is_refused_however_spelled(cmd: str) -> None:
    assert refused(cmd), cmd


@pytest.mark.skipif(shutil.which("jq") is None or BASH is None, reason="jq and bash needed")
def test_jq_differential_each_spelling_prints_the_secret() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        # (keys prints the names only, .HOME and reduce no value, @sh fails on an object: refused all the same)
        quiet = ("env|.HOME", "reduce", "keys", "@sh")
        missed = [c for c in JQ_ENV if not any(q in c for q in quiet) and SECRET not in _bash(c, tmp).stdout]
    assert not missed, missed


@pytest.mark.parametrize("cmd", ["env -S'PATH=/tmp ls'", "env -S 'LD_PRELOAD=/tmp/x.so ls'", "env -S'BASH_ENV=x ls'"])
def test_an_assignment_in_env_s_that_changes_what_runs_is_refused(cmd: str) -> None:
    assert analyse(cmd).unresolvable and refused(cmd), cmd
