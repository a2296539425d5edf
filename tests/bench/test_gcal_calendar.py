"""The calendar half of the Google Calendar fresh set (agentguard.bench.gcal_calendar): time parsing, zones, instance
ids and addresses read as the Google Calendar API and the server's zod schemas read them."""

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.bench.gcal_calendar import COLORS, ISO, Fail, instance_key, parse_time, valid_email, zone


def test_times_zones_and_instance_ids():
    t = parse_time("2026-12-01T09:00:00+01:00")
    assert t.utcoffset() == dt.timedelta(hours=1) and parse_time("2026-12-01T08:00:00Z") == t
    assert instance_key(t) == "20261201T080000Z"
    assert zone("Europe/Berlin").key == "Europe/Berlin"
    with pytest.raises(Fail, match="Invalid time zone"):
        zone("Mars/Olympus")
    assert ISO.match("2026-12-01T09:00:00Z") and not ISO.match("2026-12-01 09:00") and not ISO.match("2026-12-01")
    assert len(COLORS) == 11 and valid_email("mara@quillon.io") and not valid_email("mara@quillon")


@settings(max_examples=50, deadline=None)
@given(st.datetimes(min_value=dt.datetime(2000, 1, 1), max_value=dt.datetime(2099, 1, 1)),
       st.integers(min_value=-12, max_value=14))
def test_an_instance_id_is_the_utc_start_whatever_the_offset(naive, hours):
    aware = naive.replace(microsecond=0, tzinfo=dt.timezone(dt.timedelta(hours=hours)))
    text = aware.isoformat()
    assert ISO.match(text) and parse_time(text) == aware
    assert instance_key(aware) == aware.astimezone(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
