"""The request metrics have a fixed set of labels whatever is requested (session 18 red team).

The attack (no credential needed): every request is counted, 401s included, and the route label was the path
itself when shorter than 64 characters, so 2,000 requests for ``/x000...0001``, ``/x000...0002``, ... added
2,000 series (``/metrics`` grew to 3.9 MB; memory grows with every new path). Now a path that is not a route
of the app is counted as ``other``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from svc_roles import AGENT, READER, credentials_file  # noqa: E402


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    from agentguard.server.app import create_app
    from agentguard.server.settings import ServerSettings

    tmp = tmp_path_factory.mktemp("m")
    return create_app(ServerSettings(state_dir=str(tmp), credentials_file=str(credentials_file(tmp, (AGENT, READER)))))


def test_unknown_paths_share_one_label(app):
    with TestClient(app) as c:
        for i in range(300):
            c.get(f"/x{i:058d}")
            c.post(f"/v1/y{i}", headers=AGENT.headers, json={})
        c.post("/v1/check", headers=AGENT.headers, json={"tool_call": {"name": "read_file"}})
        c.post("/v1/runs/r1/steps", headers=AGENT.headers, json={"state": 1})
        c.get("/health")
        routes = {r for r, _status in app.state.metrics.requests}
        assert routes <= {"other", "/v1/check", "/v1/runs/{run_id}/steps", "/health"}, routes
        assert {"other", "/v1/check", "/health"} <= routes
        assert len(c.get("/metrics", headers=READER.headers).text) < 20_000


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(path=st.one_of(st.text(max_size=80).map(lambda t: "/" + t), st.sampled_from(
    ["/v1/runs/a/steps", "/v1/runs/a/b/c", "/static/x", "/v1/check", "/v1/check/", "/V1/check", "/metrics"])))
def test_property_the_labels_are_a_fixed_set(app, path):
    fixed = app.routes | {"other", "/static", "/v1/runs/{run_id}", "/v1/runs/{run_id}/steps",
                          "/v1/runs/{run_id}/signals"}
    assert app.label(path) in fixed
