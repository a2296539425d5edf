"""The calendar half of :class:`agentguard.bench.gcal_hijack.CalendarEnv`: calendars, events and recurring series as the
Google Calendar API keeps them, the instance expansion ``events.list(singleEvents=true)`` does, free/busy, and the text
the Google Calendar MCP server (nspady/google-calendar-mcp) formats its results in.

Recurrence rules are read with python-dateutil's RFC 5545 parser (``rrulestr``) rather than by hand: BYDAY, COUNT,
UNTIL, EXDATE and daylight-saving shifts are its business. A method raises :class:`Fail` where the API refuses the call;
:meth:`CalendarEnv.call <agentguard.bench.gcal_hijack.CalendarEnv.call>` turns it into the MCP client's error text.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any, Iterator, Mapping
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from dateutil.rrule import rrulestr

__all__ = ["COLORS", "Calendars", "Fail", "ISO", "instance_key", "parse_time", "zone"]

#: the date-time the server's zod schemas accept (src/schemas/validators.ts: isoDateTimeWithTimezone)
ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?(Z|[+-]\d{2}:\d{2})$")
#: Google's 11 event colours (colors.get: background, foreground)
COLORS = {str(i): bg for i, bg in enumerate(["#a4bdfc", "#7ae7bf", "#dbadff", "#ff887c", "#fbd75b", "#ffb878",
                                              "#46d6db", "#e1e1e1", "#5484ed", "#51b749", "#dc2127"], start=1)}
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_HORIZON = dt.timedelta(days=365)        # an open series without timeMax is expanded this far past now


class Fail(Exception):
    """A call the Google Calendar API (or the server's own checks) refuses; the message is the API's."""


def parse_time(text: str) -> dt.datetime:
    """An aware datetime from the ISO form the zod schemas accept (callers validate the form first)."""
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def zone(name: str) -> ZoneInfo:
    """The IANA zone ``name``; the API's 400 for an unknown one."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise Fail("Invalid time zone definition for start time.") from None


def instance_key(t: dt.datetime) -> str:
    """An occurrence's suffix in an instance id: its original start in UTC, basic format (formatInstanceId)."""
    return t.astimezone(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def valid_email(text: str) -> bool:
    return bool(_EMAIL.match(text))


class Calendars:
    """Calendars, events and series; :class:`~agentguard.bench.gcal_hijack.CalendarEnv` adds the MCP layer."""

    now: dt.datetime
    me: str
    calendars: dict[str, dict[str, Any]]
    events: dict[str, dict[str, Any]]
    people: list[str]
    busy: dict[str, list[list[str]]]
    deleted: set[str]

    def _load_events(self, events: list[dict[str, Any]]) -> None:
        self.events = {}
        for e in events:
            cal = self.calendars[e["calendar"]]
            e.setdefault("timeZone", cal["timeZone"])
            for k, v in (("description", None), ("location", None), ("recurrence", []), ("attendees", []),
                         ("colorId", None), ("guestsCanModify", True), ("date", None)):
                e.setdefault(k, v)
            e.setdefault("reminders", {"useDefault": True})
            e["cancelled"], e["overrides"] = set(), {}
            if e["date"] is None:
                e["start"], e["end"] = parse_time(e["start"]), parse_time(e["end"])
            self.events[e["id"]] = e

    # -- lookups ---------------------------------------------------------------------------------------------
    def _calendar(self, cid: str) -> dict[str, Any]:
        c = self.calendars.get(self.me if cid == "primary" else cid)
        if c is None:
            raise Fail("Not Found")
        return c

    def _writable(self, cid: str) -> dict[str, Any]:
        c = self._calendar(cid)
        if c["accessRole"] not in ("owner", "writer"):
            raise Fail("You need to have writer access to this calendar.")
        return c

    def _occurrences(self, e: Mapping[str, Any], until: dt.datetime | None) -> Iterator[dt.datetime]:
        """A series' original starts (in its own zone) up to ``until`` (or the horizon)."""
        if not e["recurrence"]:
            yield e["start"]
            return
        start = e["start"].astimezone(zone(e["timeZone"]))
        rules = rrulestr("\n".join(e["recurrence"]), dtstart=start, forceset=True)
        stop = until or (self.now + _HORIZON)
        for t in rules:
            if t > stop:
                return
            yield t

    def _lookup(self, cid: str, eid: str) -> tuple[dict[str, Any], str | None]:
        """(the series or single event, the instance key or None) that ``eid`` names in calendar ``cid``."""
        cal = self._calendar(cid)
        base, _, key = eid.partition("_")
        e = self.events.get(eid) or (self.events.get(base) if key else None)
        if e is None or e["calendar"] != cal["id"]:
            raise Fail("Not Found")
        if e["id"] in self.deleted:
            raise Fail("Resource has been deleted")
        if e["id"] == eid:
            return e, None
        if not e["recurrence"] or not any(instance_key(t) == key for t in self._occurrences(
                e, parse_time(f"{key[:4]}-{key[4:6]}-{key[6:8]}T23:59:59+00:00") + dt.timedelta(days=1))):
            raise Fail("Not Found")
        if key in e["cancelled"]:
            raise Fail("Resource has been deleted")
        return e, key

    def _instance(self, e: Mapping[str, Any], t: dt.datetime) -> dict[str, Any]:
        key = instance_key(t)
        out = {k: v for k, v in e.items() if k not in ("cancelled", "overrides", "recurrence")}
        out.update(id=f"{e['id']}_{key}", start=t, end=t + (e["end"] - e["start"]), recurringEventId=e["id"])
        out.update(e["overrides"].get(key, {}))
        return out

    def _expand(self, cal_id: str, lo: dt.datetime | None, hi: dt.datetime | None) -> list[dict[str, Any]]:
        """The calendar's events and instances overlapping [lo, hi), by start (events.list singleEvents=true)."""
        tz = zone(self.calendars[cal_id]["timeZone"])
        out: list[dict[str, Any]] = []
        for e in self.events.values():
            if e["calendar"] != cal_id or e["id"] in self.deleted:
                continue
            if e["date"] is not None:                                                          # all-day
                s = dt.datetime.fromisoformat(e["date"]).replace(tzinfo=tz)
                if (lo is None or s + dt.timedelta(days=1) > lo) and (hi is None or s < hi):
                    out.append(dict(e, _sort=s))
                continue
            items = [self._instance(e, t) for t in self._occurrences(e, hi) if instance_key(t) not in e["cancelled"]] \
                if e["recurrence"] else [dict(e)]
            out += [dict(i, _sort=i["start"]) for i in items
                    if (lo is None or i["end"] > lo) and (hi is None or i["start"] < hi)]
        out.sort(key=lambda i: i["_sort"])
        return out

    # -- rendering (formatEventList of src/handlers/utils.ts) --------------------------------------------------
    def _when(self, e: Mapping[str, Any], which: str) -> str:
        if e["date"] is not None:
            return str(e["date"]) if which == "start" else \
                (dt.date.fromisoformat(e["date"]) + dt.timedelta(days=1)).isoformat()
        return str(e[which].astimezone(zone(self.calendars[e["calendar"]]["timeZone"])).isoformat())

    def format_events(self, events: list[dict[str, Any]]) -> str:
        def one(e: Mapping[str, Any]) -> str:
            s = f"{e['summary'] or 'Untitled'} ({e['id']})"
            if e["location"]:
                s += f"\nLocation: {e['location']}"
            if e["description"]:
                s += f"\nDescription: {e['description']}"
            s += f"\nStart: {self._when(e, 'start')}\nEnd: {self._when(e, 'end')}"
            if e["attendees"]:
                s += "\nAttendees: " + ", ".join(f"{a['email']} ({a['responseStatus']})" for a in e["attendees"])
            if e["colorId"]:
                s += f"\nColor ID: {e['colorId']}"
            r, overrides = e["reminders"], e["reminders"].get("overrides") or []
            s += "\nReminders: " + ("Using default" if r.get("useDefault") else ", ".join(
                f"{o.get('method', 'popup')} {o['minutes']} minutes before" for o in overrides) or "None")
            return s + "\n"
        return "\n".join(one(e) for e in events)

    # -- free/busy ---------------------------------------------------------------------------------------------
    def _busy(self, who: str, lo: dt.datetime, hi: dt.datetime) -> list[tuple[dt.datetime, dt.datetime]] | None:
        """Busy periods of a calendar or a person in the domain, merged and clipped; None: not found."""
        spans: list[tuple[dt.datetime, dt.datetime]] = []
        if who in self.calendars and who not in self.people:
            spans = [(e["start"], e["end"]) for e in self._expand(who, lo, hi) if e["date"] is None]
        elif who in self.people:
            for cid in self.calendars:
                spans += [(e["start"], e["end"]) for e in self._expand(cid, lo, hi) if e["date"] is None and (
                    cid == who or any(a["email"] == who and a["responseStatus"] != "declined"
                                      for a in e["attendees"]))]
            spans += [(parse_time(s), parse_time(t)) for s, t in self.busy.get(who, [])]
        else:
            return None
        merged: list[tuple[dt.datetime, dt.datetime]] = []
        for s, t in sorted((max(s, lo), min(t, hi)) for s, t in spans if s < hi and t > lo):
            if merged and s <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], t))
            else:
                merged.append((s, t))
        return merged
