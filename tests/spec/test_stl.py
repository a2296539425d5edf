"""LawBreaker STL -> Pro2Guard STL_LB rules (Definition 5) and their evaluation on a driving abstraction."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agentguard.core.errors import InputError, ParseError
from agentguard.predictive.monitor import BoundedResponse, product
from agentguard.spec.stl import bounded_response, law_of_rule, parse_formula, parse_laws, rule_vectors, show

LAW38 = """
// law38: green light
law38_sub1_1 = (trafficLightAhead.color == green) & (stoplineAhead(2) | junctionAhead(2)) & ~PriorityNPCAhead & ~PriorityPedsAhead;
law38_sub1_2 = F[0,2](speed > 0.5);
law38_sub1 = G (law38_sub1_1 -> law38_sub1_2);
law38_sub2_2 = ((trafficLightAhead.color == yellow) & stoplineAhead(2)) -> (F[0,2] (speed < 0.5));
law38_sub2 = G (law38_sub2_2);
law38 = law38_sub1 & law38_sub2;
law45 = G( speed >= speedLimit.lowerLimit & speed <= speedLimit.upperLimit);
map_name = "borregas_ave";
"""
# the abstraction of the release's scenario s3 (Example 2 of the paper: law 38 over four predicates)
S3_PREDICATES = [["PriorityNPCAhead", "==", "0.0"], ["PriorityPedsAhead", "==", "0.0"], ["speed", ">", "0.5"],
                 ["trafficLightAheadcolor", "==", "3.0"]]


def test_parse_and_reduce_law38_to_its_bounded_response_rules():
    laws = parse_laws(LAW38)
    assert set(laws) == {"law38_sub1_1", "law38_sub1_2", "law38_sub1", "law38_sub2_2", "law38_sub2", "law38", "law45"}
    r1, r2 = bounded_response(laws["law38"], "law38")
    assert r1.K == 2 and r2.K == 2
    assert show(r1.response) == "speed > 0.5" and show(r2.response) == "speed < 0.5"
    assert show(r1.trigger) == ("(((trafficLightAheadcolor == 3 & (stoplineAhead <= 2 | junctionAhead <= 2)) & "
                                "~(PriorityNPCAhead == 1)) & ~(PriorityPedsAhead == 1))")
    assert show(r2.trigger) == "(trafficLightAheadcolor == 2 & stoplineAhead <= 2)"
    # G(a & b) splits into two invariants, each G(true -> F[0,0] ...)
    inv = bounded_response(laws["law45"], "law45")
    assert [(show(r.trigger), r.K) for r in inv] == [("true", 0), ("true", 0)]
    assert str(inv[0]) == "G(true -> F[0,0] speed >= speedLimitlowerLimit)"


@pytest.mark.parametrize("text,msg", [
    ("G((x > 1 & F[0,2](y < 0.5)) -> F[0,3](z < 0.5))", "inside the trigger"),
    ("G(x > 1 -> F[1,3](z < 0.5))", "F[1,3]"),
    ("G(x > 1 -> (F[0,3](z < 0.5) & ~w))", "not F[0,K] of a state formula"),
    ("F[0,2](x > 1)", "not of the form G"),
    ("G(x > 1 -> F[0,2.5](z < 0.5))", "K integer"),
])
def test_laws_outside_the_fragment_are_named(text, msg):
    with pytest.raises(ParseError, match="law9") as ei:
        bounded_response(parse_formula(text, name="law9"), "law9")
    assert msg in str(ei.value)


@pytest.mark.parametrize("text,msg", [("G(x > )", "expected a signal or a value"), ("G(x # 1)", "unexpected character"),
                                      ("F[3,1](x > 1)", "reversed"), ("G(x > 1))", "unexpected ')'")])
def test_syntax_errors_are_one_line_and_name_the_law(text, msg):
    with pytest.raises(ParseError) as ei:
        parse_formula(text, name="law7")
    assert "law7" in str(ei.value) and msg in str(ei.value) and "\n" not in str(ei.value)


def test_rule_ids_of_the_release_map_to_law_names():
    assert law_of_rule("rule38_1") == "law38_sub1" and law_of_rule("rule53") == "law53"
    with pytest.raises(InputError, match="rule id"):
        law_of_rule("law38")


def test_rule_vectors_read_atoms_from_predicate_bits_and_complements():
    (r1, _) = bounded_response(parse_laws(LAW38)["law38"], "law38")
    names = [f"000{a}{b}{c}{d}" for a in "01" for b in "01" for c in "01" for d in "01"] + ["1000000", "0100000"]
    with pytest.raises(InputError, match="does not observe stoplineAhead <= 2"):
        rule_vectors(r1, names, S3_PREDICATES)
    trig, resp, unobserved = rule_vectors(r1, names, S3_PREDICATES, unknown="true")
    assert unobserved == ["junctionAhead <= 2", "stoplineAhead <= 2"]
    # ~PriorityNPCAhead is read as the bit "PriorityNPCAhead == 0" (a Boolean signal), light green = 3
    want_trig = [n[3] == "1" and n[4] == "1" and n[6] == "1" for n in names]
    assert trig.tolist() == want_trig and sum(want_trig) == 2
    assert resp.tolist() == [n[5] == "1" for n in names]
    trig_f, _, _ = rule_vectors(r1, names, S3_PREDICATES, unknown="false")
    assert not trig_f.any()


def test_release_laws_and_scenario_s3(data_dir):
    from agentguard.predictive.prism import read_pro2guard

    laws = parse_laws((data_dir / "pro2guard" / "av_laws.txt").read_text())
    assert len(bounded_response(laws["law38"], "law38")) == 4
    with pytest.raises(ParseError, match="law51.*inside the trigger"):
        bounded_response(laws["law51"], "law51")     # law51_sub4 has F inside its trigger: outside STL_LB
    folder = data_dir / "pro2guard" / "av_dtmcs" / "s3"
    ab = json.loads((folder / "abstraction.json").read_text())
    model = read_pro2guard(folder)
    (rule,) = bounded_response(laws[law_of_rule(ab["rule"])], "law38_sub1")
    trig, resp, _ = rule_vectors(rule, model.state_names, ab["predicates"], unknown="true")
    assert [model.state_names[i] for i in np.flatnonzero(trig)] == ["0001101", "0001111"]
    # K = 0: a trigger state must itself satisfy the response; 0001101 (slow) violates at once
    prod = product(model, BoundedResponse(trig, resp, 0))
    s = model.state_names.index("0001101")
    assert prod.model.labels["viol"][prod.index(*prod.start(s))]
    s = model.state_names.index("0001111")
    assert not prod.model.labels["viol"][prod.index(*prod.start(s))]


def _cli(args, capsys):
    from agentguard.cli import main

    try:
        main(args)
        code = 0
    except SystemExit as exc:
        code = exc.code or 0
    out = capsys.readouterr()
    return code, out.out, out.err


def test_laws_command_lists_rules_and_refuses_what_is_outside(tmp_path, capsys):
    f = tmp_path / "laws.txt"
    f.write_text(LAW38 + "law51_sub6 = G((direction == right & NPCAhead(2) & (F[0, 2](NPCAhead.speed < 0.5))) "
                         "-> F[0, 3] (speed < 0.5));\n")
    code, out, _ = _cli(["laws", str(f), "--json"], capsys)
    got = json.loads(out)["laws"]
    assert code == 0 and got["law38_sub1_1"] == {"component": show(parse_laws(LAW38)["law38_sub1_1"])}
    assert [r["K"] for r in got["law38"]] == [2, 2]
    assert "inside the trigger" in got["law51_sub6"]["outside_stl_lb"]
    code, _, err = _cli(["laws", str(f), "--law", "law99"], capsys)
    assert code == 2 and "no law 'law99'" in err
    code, _, err = _cli(["laws", str(tmp_path / "missing.txt")], capsys)
    assert code == 2 and "laws file not found" in err


def test_laws_command_on_a_driving_model(data_dir, capsys):
    laws = str(data_dir / "pro2guard" / "av_laws.txt")
    s3 = str(data_dir / "pro2guard" / "av_dtmcs" / "s3")
    code, _, err = _cli(["laws", laws, "--model", s3], capsys)
    assert code == 2 and "does not observe" in err and "--unknown" in err
    code, out, _ = _cli(["laws", laws, "--model", s3, "--unknown", "true", "--json"], capsys)
    res = json.loads(out)["results"][0]
    assert code == 0 and res["K_steps"] == 100 and res["assumed"] == ["junctionAhead <= 2", "stoplineAhead <= 2"]
    p = dict(zip(res["states"], res["P_F_viol"]))
    assert p["1000000"] == 0.0 and p["0100000"] == 0.0            # absorbing collision / destination
    assert all(0.0 <= v <= 1.0 for v in p.values()) and 0.0 < res["initial"] < 1.0
