"""core.strict_yaml reads plain scalars by the YAML 1.2 core schema (session 22 red team).

Hole fixed: PyYAML types plain scalars by YAML 1.1, so a guard file meant something else than it said:
``deny_commands: [yes]`` was ``[True]`` (``yes`` is a program), ``name: no`` became the guard name ``"False"``
(``str(False)``), ``0777`` was 511, ``1:20`` was 80 and ``2024-01-01`` a ``datetime.date``. TOML, JSON and a
YAML 1.2 reader read each of these as written. Regression list: what already read the same stays here too.
"""

from __future__ import annotations

import math

import yaml
from hypothesis import given, settings, strategies as st

from agentguard.config import load_config
from agentguard.core.strict_yaml import loads_strict_yaml

#: plain scalar -> what it is under the YAML 1.2 core schema (and what agentguard now reads)
CORE = {"yes": "yes", "no": "no", "on": "on", "off": "off", "y": "y", "n": "n", "Yes": "Yes", "NO": "NO",
        "0777": 777, "0o17": 15, "0x1F": 31, "1:20": "1:20", "1_000": "1_000", "2024-01-01": "2024-01-01",
        "2001-12-14t21:59:43.10-05:00": "2001-12-14t21:59:43.10-05:00", "=": "=", "<<": "<<",
        "true": True, "False": False, "TRUE": True, "null": None, "~": None, "Null": None,
        "12": 12, "-7": -7, "+3": 3, "1e3": 1000.0, "1.5": 1.5, ".5": 0.5, "-.inf": -math.inf, ".Inf": math.inf}


def test_attack_yaml_1_1_plain_scalars_no_longer_change_type():
    for text, want in CORE.items():
        got = loads_strict_yaml(f"v: {text}\n")["v"]
        assert got == want and type(got) is type(want), (text, got)
    assert math.isnan(loads_strict_yaml("v: .nan\n")["v"])
    # the loader PyYAML ships is left as it is (other code reading YAML is not changed)
    assert yaml.safe_load("v: yes") == {"v": True}


def test_attack_a_guard_file_says_what_it_means(tmp_path):
    f = tmp_path / "agentguard.yaml"
    f.write_text("guards:\n  - type: tool-rules\n    name: no\n    deny_commands: [yes, rm]\n", encoding="utf-8")
    spec = load_config(f).guards[0]
    assert spec.params["name"] == "no" and spec.params["deny_commands"] == ["yes", "rm"]


_WORD = st.from_regex(r"[A-Za-z][A-Za-z_-]{0,8}", fullmatch=True).filter(
    lambda w: w not in ("true", "True", "TRUE", "false", "False", "FALSE", "null", "Null", "NULL"))


@settings(max_examples=150, deadline=None)
@given(word=st.one_of(_WORD, st.from_regex(r"[0-9]{1,4}(:[0-5][0-9]){1,2}", fullmatch=True),
                      st.from_regex(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", fullmatch=True),
                      st.from_regex(r"[0-9]{1,3}(_[0-9]{3}){1,2}", fullmatch=True)))
def test_property_a_plain_word_is_text(word):
    assert loads_strict_yaml(f"v: {word}\n") == {"v": word}


@settings(max_examples=100, deadline=None)
@given(n=st.integers(-10**12, 10**12), lead=st.integers(0, 2))
def test_property_decimal_integers_are_decimal(n, lead):
    text = ("-" if n < 0 else "") + "0" * lead + str(abs(n))
    assert loads_strict_yaml(f"v: {text}\n") == {"v": n}
