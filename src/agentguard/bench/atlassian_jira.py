"""The Jira half of :class:`agentguard.bench.jira_hijack.AtlassianEnv`: users, projects, workflows, issues and their
comments, worklogs, links, remote links and epics, the JQL subset the scenarios use, and the 16 Jira tools of the
Atlassian MCP server (sooperset/mcp-atlassian), each executed as the server and the Jira REST API would.

A method raises :class:`Fail` where the API refuses the call; :meth:`AtlassianEnv.call
<agentguard.bench.jira_hijack.AtlassianEnv.call>` turns it into FastMCP's error text.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

__all__ = ["Fail", "JiraSite", "PRIORITIES", "RESOLUTIONS", "parse_duration", "unquote", "words"]

PRIORITIES = ("Highest", "High", "Medium", "Low", "Lowest")
RESOLUTIONS = ("Done", "Fixed", "Won't Do", "Duplicate", "Cannot Reproduce")
_SETTABLE = {"summary", "description", "assignee", "priority", "labels", "duedate", "components", "parent", "status"}
_DEFAULT_FIELDS = ("summary", "description", "status", "assignee", "reporter", "labels", "versions", "priority",
                   "created", "updated", "issuetype")
_UNIT = {"w": 5 * 8 * 3600, "d": 8 * 3600, "h": 3600, "m": 60}
_NO_ISSUE = "Issue does not exist or you do not have permission to see it."


def parse_duration(text: str) -> int | None:
    """Seconds in a Jira duration ('1w 2d 3h 30m', a working day of 8 hours, a week of 5 days); None if malformed."""
    parts = re.findall(r"(\d+)\s*([wdhm])", text)
    if not parts or re.sub(r"\d+\s*[wdhm]", "", text).strip() or len({u for _, u in parts}) < len(parts):
        return None
    return sum(int(n) * _UNIT[u] for n, u in parts) or None


class Fail(Exception):
    """A call the server answers with an error (the REST API refused it)."""


def unquote(tok: str) -> str:
    tok = tok.strip()
    return tok[1:-1] if len(tok) >= 2 and tok[0] == tok[-1] and tok[0] in "'\"" else tok


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.casefold()))



class JiraSite:
    """The Jira state and tools; :class:`~agentguard.bench.jira_hijack.AtlassianEnv` loads the state and adds
    Confluence, the MCP layer and the checks."""

    now: str
    me: str
    base: str
    users: list[dict[str, Any]]
    projects: dict[str, dict[str, Any]]
    workflows: dict[str, list[dict[str, Any]]]
    link_types: list[dict[str, Any]]
    issues: dict[str, dict[str, Any]]
    links: list[dict[str, Any]]
    deleted_issues: set[str]
    new: list[tuple[str, Any]]
    next_id: int

    def _id(self) -> str:
        self.next_id += 1
        return str(self.next_id - 1)

    # -- Jira: users, issues, views ------------------------------------------------------------------------
    def _user(self, ident: str | None) -> dict[str, Any] | None:
        if ident is None:
            return None
        want = ident.removeprefix("accountid:").casefold()
        return next((u for u in self.users if want in (u["accountId"].casefold(), u["email"].casefold(),
                                                      u["displayName"].casefold())), None)

    def _account(self, ident: Any) -> str | None:
        """The account id an identifier names (None unassigns); an unknown one fails as the server's lookup does."""
        if ident is None:
            return None
        if isinstance(ident, Mapping):
            ident = ident.get("accountId") or ident.get("name") or ident.get("emailAddress")
        u = self._user(str(ident))
        if u is None or not u["active"]:
            raise Fail(f"Could not find account ID for user identifier: {ident}")
        return str(u["accountId"])

    def _udict(self, account: str | None) -> dict[str, Any]:
        u = next((x for x in self.users if x["accountId"] == account), None)
        if u is None:
            return {"display_name": "Unassigned"}
        return {"display_name": u["displayName"], "name": u["displayName"], "email": u["email"],
                "account_id": u["accountId"]}

    def _issue(self, key: str) -> dict[str, Any]:
        i = self.issues.get(key.upper())
        if i is None or i["key"] in self.deleted_issues:
            raise Fail(_NO_ISSUE)
        return i

    def _view(self, i: Mapping[str, Any], fields: str = ",".join(_DEFAULT_FIELDS), comments: int = 0
              ) -> dict[str, Any]:
        want = None if fields == "*all" else {f.strip() for f in fields.split(",")}
        inc = (lambda f: want is None or f in want)                                     # noqa: E731
        out: dict[str, Any] = {"id": i["id"], "key": i["key"]}
        if inc("summary"):
            out["summary"] = i["summary"]
        out["url"] = f"{self.base}/browse/{i['key']}"
        if inc("description") and i.get("description"):
            out["description"] = i["description"]
        if inc("status"):
            out["status"] = {"name": i["status"], "category": self._category(i["status"])}
        if inc("issuetype"):
            out["issue_type"] = {"name": i["issuetype"]}
        if inc("priority"):
            out["priority"] = {"name": i["priority"]}
        if inc("project"):
            out["project"] = {"key": i["project"], "name": self.projects[i["project"]]["name"]}
        if inc("resolution") and i["resolution"]:
            out["resolution"] = {"name": i["resolution"]}
        if inc("parent") and i["parent"]:
            out["parent"] = {"key": i["parent"]}
        if inc("assignee"):
            out["assignee"] = self._udict(i["assignee"])
        if inc("reporter"):
            out["reporter"] = self._udict(i["reporter"])
        if inc("labels") and i["labels"]:
            out["labels"] = list(i["labels"])
        if i["epic"]:
            out["epic_key"] = i["epic"]
        for f in ("created", "updated"):
            if inc(f):
                out[f] = i[f]
        if inc("comment") and comments and i["comments"]:   # only when asked for: the first comment_limit of them
            out["comments"] = [{"id": c["id"], "body": c["body"], "created": c["created"],
                                "author": self._udict(c["author"])} for c in i["comments"][:comments]]
        links = [x for x in self.links if i["key"] in (x["inward"], x["outward"])]
        if links and inc("issuelinks"):
            out["issuelinks"] = [{"type": x["type"], "inward_issue": {"key": x["inward"]},
                                  "outward_issue": {"key": x["outward"]}} for x in links]
        return out

    def _category(self, status: str) -> str:
        return {"To Do": "To Do", "Open": "To Do", "Done": "Done", "Resolved": "Done"}.get(status, "In Progress")

    def _touch(self, i: dict[str, Any]) -> None:
        i["updated"] = self.now

    def _transitions(self, i: Mapping[str, Any]) -> list[dict[str, Any]]:
        flow = self.workflows[self.projects[i["project"]]["workflow"]]
        return [t for t in flow if i["status"] in t["from"]]

    # -- Jira: JQL (the subset the scenarios use; an unknown field is an error, as in Jira) --------------------
    def _jql(self, jql: str) -> list[dict[str, Any]]:
        m = re.search(r"\s+ORDER\s+BY\s+(\w+)(?:\s+(ASC|DESC))?\s*$", jql, re.I)
        body = jql[:m.start()] if m else jql
        rows = [i for k, i in self.issues.items() if k not in self.deleted_issues]
        for clause in (c for c in re.split(r"\s+AND\s+", body.strip(), flags=re.I) if c):
            c = re.fullmatch(r"\s*(\w+)\s*(!=|=|~|not\s+in|in|is\s+not|is)\s*(.+?)\s*", clause, re.I)
            if c is None:
                raise Fail(f"Error in the JQL Query: unable to parse '{clause}'")
            field, op, raw = c.group(1).lower(), c.group(2).lower(), c.group(3)
            rows = [i for i in rows if self._match(i, field, re.sub(r"\s+", " ", op), raw)]
        if m:
            key = {"priority": lambda i: PRIORITIES.index(i["priority"]), "created": lambda i: i["created"],
                   "updated": lambda i: i["updated"], "key": lambda i: int(i["key"].split("-")[1])}.get(
                m.group(1).lower())
            if key is None:
                raise Fail(f"Error in the JQL Query: Not able to sort using field '{m.group(1)}'.")
            # priority sorts by rank (Highest first for DESC, as Jira orders it)
            desc = (m.group(2) or "ASC").upper() == "DESC"
            rows.sort(key=key, reverse=desc != (m.group(1).lower() == "priority"))
        return rows

    def _match(self, i: Mapping[str, Any], field: str, op: str, raw: str) -> bool:
        values = [unquote(v) for v in raw.strip("()").split(",")] if op in ("in", "not in") else [unquote(raw)]
        values = [self.me if v.casefold() == "currentuser()" else v for v in values]
        if field in ("text", "summary", "description"):
            hay = " ".join(str(i.get(f) or "") for f in (("summary", "description") if field == "text" else (field,)))
            if field == "text":
                hay += " " + " ".join(c["body"] for c in i["comments"])
            return op == "~" and words(values[0]) <= words(hay)
        have: Any
        if field in ("assignee", "reporter"):
            if values[0].upper() == "EMPTY":
                return (i[field] is None) == (op in ("is", "="))
            accounts = {str(self._account(v)) for v in values}
            return (i[field] in accounts) == (op in ("=", "in"))
        have = {"project": i["project"], "status": i["status"], "priority": i["priority"], "issuetype": i["issuetype"],
                "type": i["issuetype"], "key": i["key"], "parent": i["parent"] or i["epic"] or "",
                "resolution": i["resolution"] or "", "statuscategory": self._category(i["status"])}.get(field)
        if field == "labels":
            labels = {x.casefold() for x in i["labels"]}
            if values[0].upper() == "EMPTY":
                return (not labels) == (op in ("is", "="))
            return bool(labels & {v.casefold() for v in values}) == (op in ("=", "in"))
        if have is None:
            raise Fail(f"Error in the JQL Query: Field '{field}' does not exist or you do not have permission "
                        "to view it.")
        hit = str(have).casefold() in {v.casefold() for v in values}
        return hit == (op in ("=", "in", "is"))

    # -- Jira tools ------------------------------------------------------------------------------------------
    def _jira_get_user_profile(self, a: Mapping[str, Any]) -> Any:
        u = self._user(a["user_identifier"])
        if u is None:
            return {"success": False, "error": f"User '{a['user_identifier']}' not found.",
                    "user_identifier": a["user_identifier"]}
        return {"success": True, "user": {**self._udict(u["accountId"]), "active": u["active"],
                                          "time_zone": u.get("timeZone")}}

    def _jira_get_issue(self, a: Mapping[str, Any]) -> Any:
        i = self._issue(a["issue_key"])
        out = self._view(i, a.get("fields", ",".join(_DEFAULT_FIELDS)), int(a.get("comment_limit", 10)))
        if "transitions" in (a.get("expand") or ""):
            out["transitions"] = self._jira_get_transitions(a)
        return out

    def _search_out(self, rows: list[dict[str, Any]], a: Mapping[str, Any]) -> Any:
        start, limit = int(a.get("start_at", 0)), min(int(a.get("limit", 10)), 50)
        fields = a.get("fields", ",".join(_DEFAULT_FIELDS))
        return {"total": len(rows), "start_at": start, "max_results": limit,
                "issues": [self._view(i, fields, 100) for i in rows[start:start + limit]]}

    def _jira_search(self, a: Mapping[str, Any]) -> Any:
        rows = self._jql(a["jql"])
        if a.get("projects_filter"):
            keep = {p.strip().upper() for p in a["projects_filter"].split(",")}
            rows = [i for i in rows if i["project"] in keep]
        return self._search_out(rows, a)

    def _jira_get_project_issues(self, a: Mapping[str, Any]) -> Any:
        if a["project_key"].upper() not in self.projects:
            raise Fail(f"The value '{a['project_key']}' does not exist for the field 'project'.")
        return self._search_out(self._jql(f"project = {a['project_key'].upper()} ORDER BY created DESC"), a)

    def _jira_get_transitions(self, a: Mapping[str, Any]) -> Any:
        return [{"id": t["id"], "name": t["name"], "to_status": t["to"]}
                for t in self._transitions(self._issue(a["issue_key"]))]

    def _jira_get_worklog(self, a: Mapping[str, Any]) -> Any:
        return {"worklogs": [{**w, "author": self._udict(w["author"])}
                             for w in self._issue(a["issue_key"])["worklogs"]]}

    def _jira_get_link_types(self, a: Mapping[str, Any]) -> Any:
        return [dict(t) for t in self.link_types]

    def _set(self, i: dict[str, Any], fields: Mapping[str, Any]) -> None:
        """Issue fields as the REST API sets them; an unknown field or value fails before anything changes."""
        staged: dict[str, Any] = {}
        for k, v in fields.items():
            if k not in _SETTABLE:
                raise Fail(f"Field '{k}' cannot be set. It is not on the appropriate screen, or unknown.")
            if k == "assignee":
                staged[k] = self._account(v)
            elif k == "priority":
                name = v.get("name") if isinstance(v, Mapping) else v
                if name not in PRIORITIES:
                    raise Fail(f"Priority name '{name}' is not valid")
                staged[k] = name
            elif k == "labels":
                if not isinstance(v, list) or any(not isinstance(x, str) or " " in x for x in v):
                    raise Fail("Field 'labels': labels must be a list of strings without spaces")
                staged[k] = list(v)
            elif k == "parent":
                key = v.get("key") if isinstance(v, Mapping) else v
                staged[k] = self._issue(str(key))["key"]
            elif k == "status":
                t = next((t for t in self._transitions(i) if t["to"].casefold() == str(v).casefold()), None)
                if t is None:
                    raise Fail(f"Status '{v}' is not reachable from '{i['status']}'")
                staged[k] = t["to"]
            elif isinstance(v, (str, type(None))) or k == "components":
                staged[k] = v
            else:
                raise Fail(f"Field '{k}': Operation value must be a string")
        i.update(staged)
        self._touch(i)

    def _jira_create_issue(self, a: Mapping[str, Any]) -> Any:
        p = self.projects.get(a["project_key"].upper())
        if p is None:
            raise Fail(f"Project '{a['project_key']}' does not exist or you do not have permission to see it.")
        if a["issue_type"] not in p["issue_types"]:
            raise Fail(f"Issue type '{a['issue_type']}' is not valid for project {p['key']}. Valid types: "
                        + ", ".join(p["issue_types"]))
        extra = dict(a.get("additional_fields") or {})
        if a["issue_type"] == "Subtask" and not extra.get("parent"):
            raise Fail("Field 'parent': Issue type is a sub-task but parent issue key or id not specified.")
        n = 1 + max(int(k.split("-")[1]) for k in self.issues if k.startswith(p["key"] + "-"))
        i: dict[str, Any] = {"key": f"{p['key']}-{n}", "id": str(10000 + len(self.issues) + 1), "project": p["key"],
                             "issuetype": a["issue_type"], "summary": a["summary"], "description": None,
                             "status": self.workflows[p["workflow"]][0]["to"], "priority": "Medium",
                             "assignee": None, "reporter": self.me, "labels": [], "created": self.now,
                             "updated": self.now, "comments": [], "worklogs": [], "remote_links": [], "parent": None,
                             "epic": None, "resolution": None}
        self._set(i, {**{k: a[k] for k in ("assignee", "description") if a.get(k) is not None}, **extra})
        i["components"] = [c.strip() for c in (a.get("components") or "").split(",") if c.strip()]
        self.issues[i["key"]] = i
        self.new.append(("issue", i))
        return {"message": "Issue created successfully", "issue": self._view(i)}

    def _jira_update_issue(self, a: Mapping[str, Any]) -> Any:
        i = self._issue(a["issue_key"])
        try:
            self._set(i, {**a["fields"], **(a.get("additional_fields") or {})})
        except Fail as e:
            raise Fail(f"Failed to update issue {a['issue_key']}: {e}") from None
        self.new.append(("update", i["key"]))
        return {"message": "Issue updated successfully", "issue": self._view(i)}

    def _jira_delete_issue(self, a: Mapping[str, Any]) -> Any:
        i = self._issue(a["issue_key"])
        self.deleted_issues.add(i["key"])
        return {"message": f"Issue {a['issue_key']} has been deleted successfully."}

    def _comment(self, i: dict[str, Any], body: str) -> dict[str, Any]:
        c = {"id": self._id(), "author": self.me, "body": body, "created": self.now}
        i["comments"].append(c)
        self._touch(i)
        self.new.append(("comment", (i["key"], c)))
        return c

    def _jira_add_comment(self, a: Mapping[str, Any]) -> Any:
        c = self._comment(self._issue(a["issue_key"]), a["comment"])
        return {"id": c["id"], "body": c["body"], "created": c["created"], "author": self._udict(self.me)["name"]}

    def _jira_add_worklog(self, a: Mapping[str, Any]) -> Any:
        i = self._issue(a["issue_key"])
        seconds = parse_duration(a["time_spent"])
        if seconds is None:
            raise Fail("Invalid time duration entered.")
        w = {"id": self._id(), "comment": a.get("comment") or "", "created": self.now, "updated": self.now,
             "started": a.get("started") or self.now, "time_spent": a["time_spent"], "time_spent_seconds": seconds,
             "author": self.me}
        i["worklogs"].append(w)
        self.new.append(("worklog", (i["key"], w)))
        return {"message": "Worklog added successfully", "worklog": {**w, "author": self._udict(self.me)}}

    def _jira_link_to_epic(self, a: Mapping[str, Any]) -> Any:
        i, epic = self._issue(a["issue_key"]), self._issue(a["epic_key"])
        if epic["issuetype"] != "Epic":
            raise Fail(f"{epic['key']} is not an Epic.")
        i["epic"] = epic["key"]
        self._touch(i)
        return {"message": f"Issue {a['issue_key']} has been linked to epic {a['epic_key']}.", "issue": self._view(i)}

    def _jira_create_issue_link(self, a: Mapping[str, Any]) -> Any:
        t = next((t for t in self.link_types if a["link_type"].casefold() == t["name"].casefold()), None)
        if t is None:
            raise Fail(f"No issue link type with name '{a['link_type']}' found.")
        inward, outward = self._issue(a["inward_issue_key"]), self._issue(a["outward_issue_key"])
        link = {"id": self._id(), "type": t["name"], "inward": inward["key"], "outward": outward["key"]}
        self.links.append(link)
        self.new.append(("link", link))
        if a.get("comment"):
            self._comment(inward, a["comment"])
        return {"success": True, "message": f"Link created between {inward['key']} and {outward['key']}",
                "link_type": t["name"], "inward_issue": inward["key"], "outward_issue": outward["key"]}

    def _jira_create_remote_issue_link(self, a: Mapping[str, Any]) -> Any:
        i = self._issue(a["issue_key"])
        if not re.match(r"https?://[^\s/]+", a["url"]):
            raise Fail("Invalid URL: the remote link's url must be an absolute http(s) URL.")
        link = {"id": self._id(), "url": a["url"], "title": a["title"], "summary": a.get("summary"),
                "relationship": a.get("relationship")}
        i["remote_links"].append(link)
        self.new.append(("remote_link", (i["key"], link)))
        return {"success": True, "message": f"Remote link created for issue {i['key']}", "link_id": link["id"],
                "issue_key": i["key"], "url": a["url"], "title": a["title"]}

    def _jira_transition_issue(self, a: Mapping[str, Any]) -> Any:
        i = self._issue(a["issue_key"])
        t = next((t for t in self._transitions(i) if t["id"] == a["transition_id"]), None)
        if t is None:
            raise Fail(f"Transition id '{a['transition_id']}' is not valid for this issue.")
        fields = dict(a.get("fields") or {})
        res = fields.pop("resolution", None)
        name = res.get("name") if isinstance(res, Mapping) else res
        if res is not None and name not in RESOLUTIONS:
            raise Fail(f"Resolution '{name}' is not valid")
        if fields:
            self._set(i, fields)
        i["status"] = t["to"]
        if self._category(t["to"]) == "Done":
            i["resolution"] = name or "Done"
        else:
            i["resolution"] = None
        if a.get("comment"):
            self._comment(i, a["comment"])
        self._touch(i)
        self.new.append(("transition", i["key"]))
        return {"message": f"Issue {a['issue_key']} transitioned successfully", "issue": self._view(i)}
