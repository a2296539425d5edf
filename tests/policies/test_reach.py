"""What a file tool's call may reach (session 19, :mod:`agentguard.policies.reach`, :func:`~.arguments.base_dirs`).

A differential oracle: a secret tree is made in a temporary directory, reference tools read their arguments the
ways real file tools do (``os.path.join`` of a directory and a name, ``glob.glob`` with ``recursive`` and
``include_hidden``, ``os.listdir``, ``os.walk`` with ``fnmatch``, an include list split at commas, a
case-insensitive or normalisation-insensitive file system's lookup, Windows' trailing dots and streams), and every
call that reaches a denied file (opens it, or lists a directory whose entries are denied) must be refused by the
guard. Each hole found in session 19 is an attack test; the hypothesis properties generate its variants.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import re
import unicodedata
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentguard.config import load_stack
from agentguard.core.types import Context, ToolCall
from agentguard.policies.arguments import MAX_BASES, MAX_JOINS, MAX_PATH, base_dirs
from agentguard.policies.rules import ToolRuleGuard

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = load_stack(str(ROOT / "src/agentguard/server/examples/rules.toml"))
CTX = Context(run_id="reach")
SECRETS = ("home/u/.ssh/id_rsa", "home/u/.ssh/known_hosts", "home/u/.aws/credentials", "etc/shadow", "home/u/proj/.env",
           "home/u/Données/plan.txt")
PUBLIC = ("home/u/proj/src/app.py", "home/u/proj/README.md", "home/u/proj/docs/guide.md", "etc/hostname",
          "home/u/notes.txt")


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    top = tmp_path_factory.mktemp("reach")
    for rel in SECRETS + PUBLIC:
        (top / rel).parent.mkdir(parents=True, exist_ok=True)
        (top / rel).write_text("secret" if rel in SECRETS else "public")
    return top


def guard(top: Path, **kw: Any) -> ToolRuleGuard:
    t = str(top)
    return ToolRuleGuard(deny_paths=[f"{t}/etc/shadow*", f"{t}/home/u/.ssh/*", f"{t}/home/u/.aws/*", "*/.env",
                                     "*id_rsa", f"{t}/home/u/Données/*"], **kw)


def refused(g: Any, name: str, args: dict[str, Any]) -> bool:
    return g.check(CTX, ToolCall(name, args)).decision.refuses


# -- reference tools: how real file tools read these arguments --------------------------------------------------

def _denied(top: Path, path: str) -> bool:
    real = os.path.realpath(path)
    return any(real == os.path.realpath(top / s) for s in SECRETS)


def _lists_denied(top: Path, path: str) -> bool:
    real = os.path.realpath(path)
    return os.path.isdir(real) and any(_denied(top, os.path.join(real, e)) for e in os.listdir(real))


def join_read(args: dict[str, Any], cwd: str) -> list[str]:
    """``open(os.path.join(directory, name))``: a directory argument of any name, then the name."""
    dirs = [v for k, v in args.items() if k not in ("name", "file", "path", "include", "pattern")]
    name = args.get("name") or args.get("file") or args.get("path") or ""
    return [os.path.join(cwd, *dirs, name)] if dirs else [os.path.join(cwd, name)]


def glob_search(args: dict[str, Any], cwd: str) -> list[str]:
    """``glob.glob(os.path.join(root, "**", pattern), recursive=True, include_hidden=True)`` per comma piece."""
    root = os.path.join(cwd, args.get("path", "."))
    pat = args.get("include") or args.get("pattern") or args.get("glob") or args.get("query") or "*"
    out: list[str] = []
    for piece in re.split(r"[,\s]+", pat):
        if piece:
            out += glob.glob(os.path.join(root, "**", piece), recursive=True, include_hidden=True)
    return out


def walk_find(args: dict[str, Any], cwd: str) -> list[str]:
    """``os.walk`` below the root, names matched with ``fnmatch`` (a ``find -name``)."""
    root = os.path.join(cwd, args.get("path", "."))
    pat = args.get("name") or args.get("query") or "*"
    return [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if fnmatch.fnmatch(f, pat)]


def _fold(name: str) -> str:
    return unicodedata.normalize("NFD", name).casefold()


def insensitive_open(args: dict[str, Any], cwd: str) -> list[str]:
    """A case- and normalisation-insensitive file system's lookup (APFS, NTFS): each component is the entry whose
    case-folded NFD form is the name's; Windows' trailing dots and spaces and a ``::$DATA`` stream dropped."""
    path = os.path.join(cwd, args["path"])
    here = "/"
    for comp in path.split("/"):
        comp = re.sub(r"(?::[^/]*)?[. ]*$", "", comp) or comp
        if comp in ("", "."):
            continue
        if comp == "..":
            here = os.path.dirname(here)
            continue
        found = [e for e in (os.listdir(here) if os.path.isdir(here) else []) if _fold(e) == _fold(comp)]
        here = os.path.join(here, found[0] if found else comp)
    return [here]


def list_dir(args: dict[str, Any], cwd: str) -> list[str]:
    return [os.path.join(cwd, args["path"])]


TOOLS: dict[str, tuple[str, Callable[[dict[str, Any], str], list[str]]]] = {
    "read_file": ("read", join_read), "search_files": ("read", glob_search), "find_files": ("read", walk_find),
    "open_file": ("read", insensitive_open), "list_dir": ("list", list_dir)}


def reaches(top: Path, tool: str, args: dict[str, Any], cwd: str) -> bool:
    kind, run = TOOLS[tool]
    got = run(args, cwd)
    return any(_denied(top, p) if kind == "read" else _lists_denied(top, p) for p in got)


# -- attacks of session 19: each one reaches a denied file (the oracle) and is refused ------------------------------

def attacks(t: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("read_file", {"workspace": f"{t}/home/u/.aws", "name": "credentials"}),   # a base argument of any name
        ("read_file", {"repo": f"{t}/home/u/.ssh", "path": "id_rsa"}),
        ("read_file", {"project": f"{t}/home/u", "subdir": ".aws", "name": "credentials"}),  # chained bases
        ("read_file", {"a": "/x", "b": "/y", "c": f"{t}/home/u/.aws", "name": "credentials"}),
        ("search_files", {"path": f"{t}/home/u/proj", "include": "*.py,.env"}),     # an include list
        ("search_files", {"path": f"{t}/home/u/proj", "include": "*.md .env"}),
        ("search_files", {"path": f"{t}/home/u/proj", "query": ".env"}),           # a query matched as a name
        ("find_files", {"path": f"{t}/home/u", "name": "id_rsa"}),
        ("find_files", {"path": f"{t}/home/u", "query": "*_rsa"}),
        ("list_dir", {"path": f"{t}/home/u/.aws"}),                                 # a listing of a denied dir
        ("list_dir", {"path": f"{t}/home/u/.ssh/"}),
        ("open_file", {"path": f"{t}/ETC/SHADOW"}),                                 # case-insensitive
        ("open_file", {"path": f"{t}/home/u/.AWS/Credentials"}),
        ("open_file", {"path": f"{t}/home/u/Donne\u0301es/plan.txt"}),               # NFD on APFS
        ("open_file", {"path": f"{t}/home/u/DONNÉES/plan.txt"}),
        ("open_file", {"path": f"{t}/etc/shadow."}),                                # Windows trailing dots
        ("open_file", {"path": f"{t}/etc/shadow::$DATA"}),
    ]


def test_oracle_every_attack_reaches_a_secret_and_is_refused(tree: Path) -> None:
    g = guard(tree)
    for tool, args in attacks(str(tree)):
        assert reaches(tree, tool, args, str(tree / "home/u/proj")), (tool, args)  # the attack is real
        assert refused(g, tool, args), (tool, args)


@pytest.mark.parametrize("args", [
    {"workspace": "/home/u/.aws", "path": "credentials"}, {"repo": "/home/u/.ssh", "file": "id_rsa"},
    {"cwd": "/home/u", "subdir": ".aws", "name": "credentials"},
    {"spec": {"folder": "/home/u/.aws", "name": "credentials"}}, {"location": {"dir": "~/.ssh", "name": "id_rsa"}},
    {"dir": "/a", "folder": "/b", "root": "/c", "cwd": "/d", "base": "/home/u/.aws", "name": "credentials"},
    {"name": "id_rsa"}, {"name": ".env"},
    {"query": "/etc/shadow" + " " * 5000}, {"query": " " * 5000 + "/etc/shadow"},
    {"query": "/etc/shadow" + "\u200b" * 5000},
])
def test_example_refuses_names_joined_to_any_directory(args: dict[str, Any]) -> None:
    assert refused(EXAMPLE, "read_file", args), args


@pytest.mark.parametrize("name,args", [
    ("search_files", {"include": "id_rsa", "query": "BEGIN"}), ("search_files", {"pattern": "id_rsa"}),
    ("search_files", {"query": "id_rsa"}), ("search_files", {"include": "x.py\n/etc/shadow"}),
    ("search_files", {"path": ".", "include": "x.py\n.env"}), ("search_files", {"path": ".", "include": "*.py,.env"}),
    ("search_files", {"path": ".", "include": "*.py .env"}),
    ("list_files", {"path": "~/.aws"}), ("list_files", {"path": "/home/u/.gnupg"}),
    ("list_files", {"path": "/etc/ssh"}),
    ("list_files", {"path": "/run/secrets"}), ("list_files", {"path": "proj/.git"}),
    ("run_command", {"command": "ls ~/.aws"}), ("run_command", {"command": "ls /run/secrets"}),
])
def test_example_refuses_searches_and_listings(name: str, args: dict[str, Any]) -> None:
    assert refused(EXAMPLE, name, args), (name, args)


@pytest.mark.parametrize("name,args", [
    ("list_files", {"path": "~"}), ("list_files", {"path": "/etc"}), ("list_files", {"path": "src"}),
    ("search_files", {"path": "src", "pattern": "*.py"}), ("search_files", {"path": "src", "query": "def main"}),
    ("read_file", {"path": "README.md"}), ("read_file", {"workspace": "/home/u/proj", "path": "src/app.py"}),
    ("read_file", {"dir": "docs", "name": "guide.md"}), ("write_file", {"path": "notes.txt", "content": "a b c"}),
    ("run_command", {"command": "ls src"}), ("run_command", {"command": "ls ~"}),
])
def test_example_still_allows_everyday_calls(name: str, args: dict[str, Any]) -> None:
    assert not refused(EXAMPLE, name, args), (name, args)


@pytest.mark.parametrize("name,args", [
    ("directory_tree", {"path": "/home/u"}), ("file_tree", {"path": "~"}), ("list_files", {"path": "~", "depth": 3}),
    ("list_files", {"path": "/home/u", "max_depth": "2"}), ("list_files", {"path": "/home/u", "levels": "many"}),
    ("read_file", {"dir": "/etc" + " " * 5000, "name": "shadow"}),
    ("read_file", {"root": "/", "folder": "etc", "name": "shadow"}),
    ("read_file", {"opts": '{"root": "/home/u/.aws"}', "name": "credentials"}),
    ("read_file", {"dirs": ["/tmp", "/home/u/.aws"], "names": ["x", "credentials"]}),
    ("read_file", {"dir": "C:\\Users\\u\\.aws", "name": "credentials"}),
    ("read_file", {"dir": "file:///etc", "name": "shadow"}),
    ("ls", {"path": "/home/u", "flags": "-R"}), ("ls", {"path": "~", "options": ["-l", "--recursive"]}),
    ("grep", {"path": "/home/u", "flags": "-rn"}), ("list_files", {"path": "~/.aws/."}),
])
def test_trees_and_bases_in_any_shape(name: str, args: dict[str, Any]) -> None:
    """A listing of a whole tree (a tree tool, a depth above 1) names the files below; a directory padded, nested in
    JSON, listed, written as a Windows path or a URL is still a base."""
    g = ToolRuleGuard(deny_paths=["/etc/shadow", "~/.aws/*"])
    assert refused(g, name, args), (name, args)


@pytest.mark.parametrize("name,args", [
    ("list_files", {"path": "/home/u", "depth": 1}), ("directory_tree", {"path": "/home/u/proj"}),
    ("read_file", {"dir": "/etc", "name": "hostname"}), ("read_file", {"path": "/home/u/proj", "mode": "r"}),
    ("ls", {"path": "/home/u", "flags": ["-l", "-a"]}), ("ls", {"path": "/home/u", "flags": "-lh"}),
])
def test_trees_and_bases_still_allow(name: str, args: dict[str, Any]) -> None:
    assert not refused(ToolRuleGuard(deny_paths=["/etc/shadow", "~/.aws/*"]), name, args), (name, args)


@pytest.mark.parametrize("rule", ["~/.aws/*", "~/.aws/**", "/home/*/.aws/*"])
def test_listing_a_directory_whose_entries_are_denied(rule: str) -> None:
    g = ToolRuleGuard(deny_paths=[rule])
    for path in ("~/.aws", "/home/u/.aws/", "/home/u/.AWS", "~/.a?s", "/home/u/x/../.aws"):
        if rule.startswith("~") or not path.startswith("~"):  # (a "~" path meets a "~" rule and this host's home)
            assert refused(g, "list_files", {"path": path}), (rule, path)
    for path in ("~", "/home/u", "/home/u/.awsx", "/etc"):
        assert not refused(g, "list_files", {"path": path}), (rule, path)


def test_full_case_folding_of_literal_paths() -> None:
    g = ToolRuleGuard(deny_paths=["*/Straße.txt"])
    for p in ("/x/STRASSE.txt", "/x/strasse.TXT", "/x/straße.txt", "/x/STRAẞE.txt"):
        assert refused(g, "read_file", {"path": p}), p
    assert not refused(g, "read_file", {"path": "/x/strase.txt"})


def test_bases_past_the_bounds_refuse_the_call_unread() -> None:
    """Past MAX_BASES directories or MAX_JOINS readings (directories times values) the call is refused unread: the
    reading's cost grows as the product (a glob's reading takes milliseconds)."""
    args = {f"d{i}": f"/dir{i}" for i in range(MAX_BASES + 1)}
    assert base_dirs(args, str) is None
    g = ToolRuleGuard(deny_paths=["~/.aws/*"])
    assert refused(g, "read_file", {**args, "name": "credentials"})
    many = {**{f"d{i}": f"/dir{i}" for i in range(8)}, **{f"w{i}": f"word{i}" for i in range(MAX_JOINS // 8)}}
    assert base_dirs(many, str) is None and refused(g, "read_file", many)
    assert len(base_dirs({"dir": "/a", "sub_dir": "b"}, str) or ()) == 3  # /a, b, /a/b
    assert not refused(g, "read_file", {"dir": "/a", "sub_dir": "b", "name": "c"})


# -- properties: variants generated, each checked against the oracle ------------------------------------------------

_DIR_KEYS = st.sampled_from(["dir", "folder", "workspace", "repo", "root", "base_dir", "project", "cwd", "spec_home"])
_NAME_KEYS = st.sampled_from(["name", "file", "path", "filename"])
_SECRET = st.sampled_from([("home/u/.aws", "credentials"), ("home/u/.ssh", "id_rsa"), ("etc", "shadow"),
                           ("home/u/proj", ".env"), ("home/u/Données", "plan.txt")])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(dkey=_DIR_KEYS, nkey=_NAME_KEYS, secret=_SECRET, split=st.integers(0, 3),
       extra=st.dictionaries(st.sampled_from(["mode", "encoding", "note"]), st.sampled_from(["r", "utf-8", "hi"]),
                             max_size=2))
def test_property_a_name_joined_to_any_directory_argument(tree: Path, dkey: str, nkey: str,
                                                          secret: tuple[str, str], split: int,
                                                          extra: dict[str, str]) -> None:
    """A directory under any argument name, the name under a file-name argument, the directory's last components
    moved into the name (``.aws/credentials``): when ``os.path.join`` reaches a secret, the guard refuses."""
    folder, name = secret
    comps = f"{tree}/{folder}".split("/")
    k = min(split, len(folder.split("/")))
    base, rest = "/".join(comps[:len(comps) - k]), "/".join(comps[len(comps) - k:] + [name])
    args = {**extra, dkey: base, nkey: rest}
    if nkey in args and nkey in extra:
        return
    got = [os.path.join(base, rest)]
    assert any(_denied(tree, p) for p in got)
    assert refused(guard(tree), "read_file", args), args


_PIECE = st.sampled_from(["*.py", "*.md", "README*", "src", "docs/*", "*.txt"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pieces=st.lists(_PIECE, max_size=3), secret=st.sampled_from([".env", "id_rsa", "*id_rsa", ".e?v", "[.]env",
                                                                      "credentials", "shadow"]),
       sep=st.sampled_from([",", " ", ", ", "\n"]), key=st.sampled_from(["include", "pattern", "glob", "query"]),
       root=st.sampled_from(["home/u", "home/u/proj", "home/u/.aws", "etc", ""]), at=st.integers(0, 3))
def test_property_search_patterns_reaching_a_secret_are_refused(tree: Path, pieces: list[str], secret: str, sep: str,
                                                                key: str, root: str, at: int) -> None:
    """A search tool's name list, the secret's name (or a glob of it) at any place in it: when the reference
    search (``glob.glob`` recursive, hidden files included) matches a denied file, the guard refuses; when it matches
    none, a list of ordinary patterns below the project is allowed."""
    pieces = pieces[:at] + [secret] + pieces[at:]
    args = {"path": str(tree / root) if root else str(tree), key: sep.join(pieces)}
    if reaches(tree, "search_files", args, str(tree)):
        assert refused(guard(tree), "search_files", args), args


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.sampled_from(["etc/shadow", "home/u/.aws/credentials", "home/u/.ssh/id_rsa",
                              "home/u/Données/plan.txt"]),
       case=st.lists(st.booleans(), min_size=40, max_size=40), nfd=st.booleans(),
       tail=st.sampled_from(["", ".", " ", ". .", "::$DATA", ":$DATA"]))
def test_property_insensitive_file_systems(tree: Path, which: str, case: list[bool], nfd: bool, tail: str) -> None:
    """The secret's path in any mix of case, NFD or NFC, with a Windows tail: the insensitive lookup opens the
    secret and the guard refuses."""
    text = "".join(c.upper() if up else c for c, up in zip(which, case + [False] * len(which)))
    text = unicodedata.normalize("NFD" if nfd else "NFC", text) + tail
    args = {"path": f"{tree}/{text}"}
    assert reaches(tree, "open_file", args, "/")
    assert refused(guard(tree), "open_file", args), args


@settings(max_examples=60, deadline=None)
@given(pad=st.sampled_from([" ", "\t", "\u200b", "\ufeff"]), n=st.integers(MAX_PATH, MAX_PATH * 2),
       key=st.sampled_from(["query", "text_input", "q", "value"]), before=st.booleans())
def test_property_padded_values_are_read_as_a_stripping_tool_reads_them(pad: str, n: int, key: str,
                                                                         before: bool) -> None:
    value = pad * n + "/etc/shadow" if before else "/etc/shadow" + pad * n
    assert refused(EXAMPLE, "search_files", {key: value})


# -- symbolic links (resolve_links): decided with the links that exist at decision time ------------------------------

@pytest.fixture()
def linked_tree(tmp_path: Path) -> Path:
    for rel in SECRETS + PUBLIC:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    proj = tmp_path / "home/u/proj"
    (proj / "keys").symlink_to(tmp_path / "home/u/.ssh")            # a directory link out of the workspace
    (proj / "creds.txt").symlink_to(tmp_path / "home/u/.aws/credentials")
    (proj / "sub").mkdir()
    (proj / "sub/up").symlink_to(tmp_path / "etc")                    # "up/shadow" below a link to /etc
    return tmp_path


@pytest.mark.parametrize("name,rel", [
    ("read_file", "keys/known_hosts"), ("read_file", "creds.txt"), ("read_file", "sub/up/shadow"),
    ("read_file", "keys/../.aws/credentials"), ("read_file", "c*s.txt"), ("search_files", "."),
    ("search_files", "sub"), ("list_files", "keys"), ("search_files", "**/known_hosts"), ("read_file", "**/shadow"),
    ("search_files", "keys"),
])
def test_links_resolved_at_decision_time(linked_tree: Path, name: str, rel: str) -> None:
    proj = linked_tree / "home/u/proj"
    args = {"cwd": str(proj), "path": rel}
    real = os.path.realpath(proj / rel) if "*" not in rel else str(proj / "creds.txt")
    if "**" in rel:
        assert any(_denied(linked_tree, p) for p in glob.glob(str(proj / rel), recursive=True))  # glob follows links
    assert _denied(linked_tree, real) or _lists_denied(linked_tree, real) or name == "search_files"
    assert refused(guard(linked_tree, resolve_links=True), name, args), (name, args)
    if name == "read_file" and "*" not in rel and ".." not in rel:
        assert not refused(guard(linked_tree), name, args)  # lexical only: the link is invisible


def test_links_do_not_refuse_the_workspace(linked_tree: Path) -> None:
    g = guard(linked_tree, resolve_links=True)
    proj = linked_tree / "home/u/proj"
    for rel in ("README.md", "src/app.py", "docs", "missing/new.txt"):
        assert not refused(g, "read_file", {"cwd": str(proj), "path": rel}), rel
    (proj / "keys").unlink()
    (proj / "creds.txt").unlink()
    (proj / "sub/up").unlink()
    assert not refused(g, "search_files", {"path": str(proj)})


def test_link_created_after_the_decision_is_not_seen(linked_tree: Path) -> None:
    """The documented limit: the decision judges the links that exist when it is made (a race between the check
    and the use needs an OS sandbox)."""
    g = guard(linked_tree, resolve_links=True)
    proj = linked_tree / "home/u/proj"
    args = {"cwd": str(proj), "path": "later.txt"}
    assert not refused(g, "read_file", args)
    (proj / "later.txt").symlink_to(linked_tree / "etc/shadow")
    assert refused(g, "read_file", args)


def test_resolve_links_must_be_a_boolean() -> None:
    with pytest.raises(Exception):
        ToolRuleGuard(deny_paths=["/x"], resolve_links="yes")  # type: ignore[arg-type]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.sampled_from(["home/u/.aws", "home/u/.ssh", "home/u/Données"]),
       case=st.lists(st.booleans(), min_size=20, max_size=20), tail=st.sampled_from(["", "/", "/.", ".", " ", "::$DATA"]),
       detour=st.sampled_from(["", "/x/..", "/./"]))
def test_property_listing_a_denied_directory(tree: Path, which: str, case: list[bool], tail: str, detour: str) -> None:
    """A listing of a directory whose every entry is denied, in any case, with a detour or a Windows tail: the
    insensitive lookup finds the directory, its listing names a secret, and the guard refuses."""
    head, _, name = which.rpartition("/")
    name = "".join(c.upper() if up else c for c, up in zip(name, case + [False] * len(name)))
    args = {"path": f"{tree}/{head}{detour.rstrip('/') if detour else ''}/{name}{tail}"}
    where = insensitive_open(args, "/")[0]
    assert _lists_denied(tree, where), (args, where)
    assert refused(guard(tree), "list_dir", args), args


# Session 25: a "~/x" rule names x below any directory, since $HOME may be any (a service account's home).
_HOME_DIRS = st.sampled_from(["/var/lib/jenkins", "/var/lib/postgresql", "/srv/app", "/opt/runner", "/home2/bob",
                              "/nonexistent", "/app", "/builds/ci", "/var/www"])
_HOME_SECRETS = st.sampled_from([".aws/credentials", ".ssh/id_ed25519", ".kube/config", ".docker/config.json",
                                 ".git-credentials", ".pgpass", ".npmrc", ".vault-token", ".config/gh/hosts.yml",
                                 ".bash_history", ".gnupg/pubring.kbx", ".s3cfg", ".config/rclone/rclone.conf"])


@settings(max_examples=120, deadline=None)
@given(home=_HOME_DIRS, secret=_HOME_SECRETS, tool=st.sampled_from(["read_file", "list_files", "write_file"]))
def test_property_home_rules_name_any_home(home: str, secret: str, tool: str) -> None:
    path = f"{home}/{secret}"
    verdict = EXAMPLE.check(CTX, ToolCall(name=tool, arguments={"path": path}))
    assert verdict.decision.refuses, (path, verdict)


@pytest.mark.parametrize("rule,path,denied", [
    ("~/.aws/*", "/var/lib/jenkins/.aws/credentials", True),
    ("~/.bashrc", "/srv/app/.bashrc", True),
    ("~/*", "/srv/app/main.py", False),        # a glob first name: only the conventional homes
    ("~/*.txt", "/srv/app/notes.txt", False),
    ("~", "/srv/app", False),
])
def test_home_rule_anywhere_only_for_a_literal_first_name(rule: str, path: str, denied: bool) -> None:
    guard = ToolRuleGuard(deny_paths=[rule])
    assert guard.check(CTX, ToolCall(name="read_file", arguments={"path": path})).decision.refuses is denied


@pytest.mark.parametrize("path", ["/etc/ssl/private/server.key", "deploy/tls.key", "certs/server-key.pem",
                                  "keys/client.p12", "vault.kdbx", "~/.cargo/credentials.toml", "/root/.boto"])
def test_example_refuses_key_containers_and_more_token_files(path: str) -> None:
    assert EXAMPLE.check(CTX, ToolCall(name="read_file", arguments={"path": path})).decision.refuses


# Session 25: a literal tree is decided by two compiled regular expressions; the same answer as the token path.
_TREE = st.lists(st.sampled_from(["/", "~", "home", "u", ".ssh", ".aws", "etc", "root", "src", ".", "..", "Users",
                                  "var", "lib", "jenkins", ".git", "a b", "Ｅtc", "ETC"]), max_size=5).map("/".join)


@settings(max_examples=200, deadline=None)
@given(tree=_TREE, lead=st.sampled_from(["", "/", "~/", "./"]))
def test_literal_trees_are_decided_as_the_token_path_decides(tree: str, lead: str) -> None:
    from agentguard.policies.reach import TreeRules
    from agentguard.policies.shell.globs import literal_tokens

    guard = EXAMPLE.guards[0]
    for rules in (guard._trees, guard._file_trees):
        text = lead + tree
        slow = TreeRules(rules.anchored, (rules.dirs[0], rules.dirs[0]))  # a literal is read with every rule form
        slow._below = slow._inside = None  # no fast path: the token lists only
        as_tokens = literal_tokens(text.rstrip("/"))
        if as_tokens:  # ("" and "/": the root, read as literal by both)
            assert rules.holds(text, None) == slow.holds(text, as_tokens), (text, rules is guard._trees)


_GLOBWORD = st.lists(st.sampled_from(["*", "?", ".ssh", ".aws", "home", "u", "etc", "src", "[ab]", "~", "."]),
                     min_size=1, max_size=4).map("/".join)


@settings(max_examples=150, deadline=None)
@given(word=_GLOBWORD, lead=st.sampled_from(["", "/", "~/"]))
def test_kept_glob_answers_are_the_answers(word: str, lead: str) -> None:
    """Session 25: a glob path's answers are kept per guard (reach._Memo); kept or computed, the same decision."""
    from agentguard.policies.shell import fnmatch_tokens

    call = ToolCall("read_file", {"path": lead + word})
    first = EXAMPLE.check(CTX, call)
    for memo in (g._globs, g._trees, g._file_trees) if (g := EXAMPLE.guards[0]) else ():
        assert len(memo._memo) <= memo.MEMO
    again = EXAMPLE.check(CTX, call)
    fresh = load_stack(str(ROOT / "src/agentguard/server/examples/rules.toml")) if word == "*" else None
    assert (first.decision, first.reason) == (again.decision, again.reason)
    if fresh is not None:
        assert fresh.check(CTX, call).decision == first.decision
    globs = EXAMPLE.guards[0]._globs
    tokens = fnmatch_tokens(lead + word)
    kept = globs.meets(tokens, not lead)
    globs._memo.clear()
    assert globs.meets(tokens, not lead) == kept


def test_the_kept_answers_are_bounded() -> None:
    from agentguard.policies.reach import GlobRules
    from agentguard.policies.shell import fnmatch_tokens

    g = GlobRules(([fnmatch_tokens("*/.ssh/*")], [fnmatch_tokens("~/.ssh/*")]), ([], []), None)
    g.MEMO = 3
    for k in range(10):
        g.meets(fnmatch_tokens(f"x{k}*"), True)
        assert len(g._memo) <= 3


@pytest.mark.parametrize("value,refused", [
    ("docs/**/*.md", False), ("src/*.py", False), ("src/**/*.py", False),          # relative globs: no "*/x" forms
    ("/var/lib/jenkins/.aws/cred*", True), ("/srv/app/.ssh/id_*", True),          # absolute globs: with them
    ("~/.ssh/id_*", True), (".ssh/id_*", True), ("/var/lib/jenkins/.aws/credentials", True),
])
def test_home_rules_anywhere_for_literals_and_absolute_globs_only(value: str, refused: bool) -> None:
    guard = ToolRuleGuard(allow=["read_file"], deny_paths=["~/.ssh/*", "~/.aws/*"])
    assert guard.check(CTX, ToolCall("read_file", {"glob": value})).decision.refuses is refused, value
