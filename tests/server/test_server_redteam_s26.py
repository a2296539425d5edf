"""Session 26 red team of the service, as an attacker holding a valid agent credential (TestClient through the
real gate): each hole found, kept as its attack.

- A step's tool call was decided without the server's facts of the caller (its credential's ``facts``, its
  ``principal``), which ``/v1/check`` decides the same call with: a policy field reading a credential fact with a
  ``default`` read the default, so a car rental REJECTed by ``/v1/check`` for an unlicensed credential was ALLOWed
  (``execute: true``) as the action of ``POST /v1/runs/{id}/steps`` (server/facts.py, routes/decisions.py).
"""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402

from svc_roles import Cred, entry  # noqa: E402

from agentguard.server.app import create_app  # noqa: E402
from agentguard.server.settings import ServerSettings  # noqa: E402

# the verified Mind2Web-SC policy; the driver's licence is a fact of the credential, absent means licensed
CARS = """[stack]
name = "cars"
on_error = "reject"
[[guards]]
type = "policy"
policy = "mind2web_sc"
verified_digest = "8fc4810df99599839aadd68f1ebeb505513bff0ea760f4fcf71768b629ddb55d"
[guards.fields]
category = { from = "tool", map = { search = 0, rent_car = 1 } }
age = { from = "constant", value = 30 }
domestic = { from = "constant", value = true }
dr_license = { from = "metadata", key = "licensed", default = true }
vaccine = { from = "constant", value = true }
membership = { from = "constant", value = true }
"""
TEEN = Cred("teen-agent", "agent", "teen-agent-token-0123456789")
ADULT = Cred("adult-agent", "agent", "adult-agent-token-0123456789")
CAR = {"name": "rent_car", "arguments": {}}


@pytest.fixture()
def client(tmp_path):
    (tmp_path / "cars.toml").write_text(CARS)
    (tmp_path / "creds.toml").write_text(entry(TEEN) + "facts = { licensed = false }\n\n" + entry(ADULT))
    app = create_app(ServerSettings(state_dir=str(tmp_path), tool_guards=str(tmp_path / "cars.toml"),
                                    credentials_file=str(tmp_path / "creds.toml")))
    with TestClient(app) as c:
        yield c


def test_a_step_is_decided_with_the_credentials_facts_as_its_check_is(client):
    r = client.post("/v1/check", headers=TEEN.headers, json={"run_id": "teen-c", "tool_call": CAR})
    assert r.json()["decision"] == "REJECT"
    r = client.post("/v1/check", headers=TEEN.headers, json={"run_id": "teen-c", "tool_call": CAR,
                                                              "metadata": {"licensed": True}})
    assert r.status_code == 422  # the credential's fact: never the request's
    for run in ("teen-s", "default"):
        r = client.post(f"/v1/runs/{run}/steps", headers=TEEN.headers, json={"action": CAR})
        assert r.status_code == 200 and r.json()["decision"] == "REJECT" and r.json()["execute"] is False, r.text
    # the fact decides, not the endpoint: a credential without it rents by check and by step alike
    assert client.post("/v1/check", headers=ADULT.headers, json={"run_id": "adult-c", "tool_call": CAR}
                       ).json()["decision"] == "ALLOW"
    r = client.post("/v1/runs/adult-s/steps", headers=ADULT.headers, json={"action": CAR})
    assert r.json()["decision"] == "ALLOW", r.text
