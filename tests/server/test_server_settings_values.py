"""Service settings read as declared (session 22 red team of configuration values).

Hole fixed: ``ServerSettings`` took any value for its bool/int/float fields and the service coerced it later:
``[server] shadow = "false"`` (text) was truthy, and the service ran every guard in shadow mode
(``shadow=bool(settings.shadow)``: every answer ALLOW); ``reload_s = nan``, ``monitor_threshold = nan``,
``webhook_retries = nan``, ``workers = true``, ``port = "5"`` loaded. A value of another type than the field's is
now a one-line InputError (``core.limits.declared_scalars``, the rule for a guard's parameters too).
"""

from __future__ import annotations

import math
from dataclasses import fields

import pytest
from hypothesis import given, settings, strategies as st

from agentguard.core.errors import InputError
from agentguard.server.settings import ServerSettings, load_settings

SCALAR_FIELDS = [(f.name, f.type) for f in fields(ServerSettings) if f.type in ("bool", "int", "float")]


@pytest.mark.parametrize("text", ['"false"', '"no"', "0", "1", '"true"'])
def test_attack_shadow_false_as_text_switched_every_guard_to_shadow(tmp_path, text):
    f = tmp_path / "agentguard-server.toml"
    f.write_text(f"[server]\nshadow = {text}\n", encoding="utf-8")
    with pytest.raises(InputError, match="shadow") as info:
        load_settings(f)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("name, value", [("reload_s", math.nan), ("monitor_threshold", math.nan),
                                         ("webhook_retries", math.nan), ("workers", True), ("port", "5"),
                                         ("run_ttl_s", math.nan), ("audit_chain", 0), ("otel", "false"),
                                         ("require_verified", "yes"), ("max_runs", 1.5)])
def test_attack_values_of_another_type_are_refused(name, value):
    with pytest.raises(InputError, match=name):
        ServerSettings(**{name: value})


@settings(max_examples=80, deadline=None)
@given(field=st.sampled_from(SCALAR_FIELDS), value=st.one_of(st.text(max_size=4), st.floats(allow_nan=True),
                                                              st.booleans(), st.lists(st.integers(), max_size=1)))
def test_property_a_scalar_setting_of_another_type_never_loads(field, value):
    name, kind = field
    declared = (isinstance(value, bool) if kind == "bool" else
                isinstance(value, int) and not isinstance(value, bool) if kind == "int" else
                isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value))
    try:
        ServerSettings(**{name: value})
    except InputError:
        return
    assert declared, (name, value)


def test_the_defaults_and_declared_values_still_load():
    assert ServerSettings().shadow is False
    s = ServerSettings(shadow=True, reload_s=0, workers=2, port=9000, monitor_threshold=0.7)
    assert s.shadow is True and s.workers == 2
    assert ServerSettings.from_json(ServerSettings(otel=True).to_json()).otel is True


@pytest.mark.parametrize("body, words", [(b"[server]\nx = " + b"[" * 3000 + b"1" + b"]" * 3000 + b"\n", "nested"),
                                         (b'[server]\nhost = "\xff"\n', "UTF-8")])
def test_attack_a_malformed_settings_file_is_one_line(tmp_path, body, words):
    # before: RecursionError / UnicodeDecodeError tracebacks (load_config already answered one line for both)
    f = tmp_path / "s.toml"
    f.write_bytes(body)
    with pytest.raises(InputError, match=words) as info:
        load_settings(f)
    assert "\n" not in str(info.value)


# -- session 23: an audit store that is not durable is refused before anything is created ----------------------
# ``sqlite://``, ``sqlite:///`` and ``sqlite:///:memory:`` (and SQLite's URI ``mode=memory``) started a service
# whose every worker kept its own audit log in memory: nothing durable, workers disagreeing on every run.

from agentguard.server.settings import check_db_url  # noqa: E402

NOT_DURABLE = ["sqlite://", "sqlite:///", "sqlite:///:memory:", "sqlite:///file:x?mode=memory&uri=true",
               "sqlite:///x.db?mode=memory", "sqlite:///file:x.db", "sqlite+aiosqlite:///x.db", "mysql://u@h/db",
               "not a url", "sqlite://host/x.db"]


@pytest.mark.parametrize("url", NOT_DURABLE)
def test_attack_an_audit_store_in_memory_is_refused(url, tmp_path):
    with pytest.raises(InputError) as info:
        ServerSettings(db_url=url, state_dir=str(tmp_path / "state"))
    assert "\n" not in str(info.value)
    assert not (tmp_path / "state").exists()


@pytest.mark.parametrize("url", ["sqlite:///audit.sqlite", "sqlite:////var/lib/ag/audit.sqlite",
                                 "sqlite+pysqlite:///a.db", "postgresql+psycopg://u:p@h:5432/db",
                                 "postgresql://u@h/db"])
def test_a_durable_audit_store_is_taken(url):
    check_db_url(url)
    assert ServerSettings(db_url=url).database_url == url
