"""Session 25: ordinary commands the network guard refused (a ``no_proxy`` list, a listening server's address,
``echo URL | xargs curl``) pass, and what they must not hide is still refused."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.core.types import Context, ToolCall
from agentguard.policies.network_programs import quiet_text, without_listening, xargs_literal
from agentguard.policies.networks import NetworkGuard

GUARD = NetworkGuard()


def net_refuses(command: str) -> bool:
    return GUARD.check(Context(run_id="s25"), ToolCall("run_command", {"command": command})).decision.refuses


_NO_PROXY_NAME = st.sampled_from(["no_proxy", "NO_PROXY", "No_Proxy"])
_NO_PROXY_VALUE = st.lists(st.sampled_from(["localhost", "127.0.0.1", "::1", ".internal", "10.0.0.0/8",
                                            "*.local", "[::1]", "169.254.169.254", "metadata.google.internal"]),
                           min_size=1, max_size=4).map(",".join)
_QUOTE = st.sampled_from(["", "'", '"'])
_FORM = st.sampled_from(["{a} curl https://example.com", "export {a}; curl https://example.com",
                         "env {a} wget https://example.com", "{a} pip install requests"])


@settings(max_examples=150, deadline=None)
@given(name=_NO_PROXY_NAME, value=_NO_PROXY_VALUE, quote=_QUOTE, form=_FORM)
def test_a_no_proxy_list_is_no_destination(name: str, value: str, quote: str, form: str) -> None:
    command = form.format(a=f"{name}={quote}{value}{quote}")
    assert not net_refuses(command), command


@pytest.mark.parametrize("command", [
    "no_proxy=localhost curl localhost", "no_proxy=x;curl${IFS}localhost", "no_proxy=x curl 10.0.0.1",
    "NO_PROXY=localhost http_proxy=10.0.0.1:3128 curl https://example.com",
    "no_proxy=localhost$(curl 10.0.0.1) true", "no_proxy='x y' curl localhost:8080"])
def test_a_no_proxy_list_hides_nothing_else(command: str) -> None:
    assert net_refuses(command)


_SERVERS = st.sampled_from(["uvicorn app:app --host {a}", "uvicorn app:app --host={a} --port 8000",
                            "python -m uvicorn app:app --host {a}", "gunicorn -b {a}:8000 app:app",
                            "gunicorn --bind={a}:8000 app:app", "hypercorn -b {a}:8000 app:app",
                            "python -m http.server --bind {a} 8000", "python3 -m http.server -b {a}",
                            "flask run --host {a}", "flask run -h {a} -p 5000", "jupyter lab --ip {a}",
                            "mkdocs serve -a {a}:8000"])
_BIND = st.sampled_from(["127.0.0.1", "0.0.0.0", "localhost", "10.0.0.7", "::1"])


@settings(max_examples=150, deadline=None)
@given(server=_SERVERS, address=_BIND)
def test_a_listening_address_is_no_destination(server: str, address: str) -> None:
    command = server.format(a=address if ":" not in address or "{a}:" not in server else f"[{address}]")
    assert not net_refuses(command), command


@pytest.mark.parametrize("command", [
    "uvicorn app:app --host 127.0.0.1 & curl 127.0.0.1:8000", "gunicorn -b 127.0.0.1:8000 app:app & nc 127.0.0.1 8000",
    "uvicorn app:app --host 127.0.0.1 & redis-cli --host 127.0.0.1",
    "gunicorn -b 127.0.0.1:8000 app:app & curl http://127.0.0.1:8000/", "flask --host 127.0.0.1",
    "uvicorn --port 8000 app:app && curl --host 127.0.0.1", "uvicorn app:app --proxy 10.0.0.1:3128",
    "uvicorn x --host 10.0.0.1 & python -c 'print(1)' --host 10.0.0.1 && curl --proxy 10.0.0.1 https://x.com"])
def test_a_listening_address_hides_nothing_else(command: str) -> None:
    assert net_refuses(command)


_URLS = st.lists(st.sampled_from(["https://example.com", "https://pypi.org/simple/x", "example.org"]), min_size=1,
                 max_size=3).map(" ".join)


@settings(max_examples=100, deadline=None)
@given(urls=_URLS, opts=st.sampled_from(["", " -n1", " -r", " -n 2 -t"]), prog=st.sampled_from(["curl -sS", "wget"]))
def test_echo_plain_words_to_xargs_are_read(urls: str, opts: str, prog: str) -> None:
    assert not net_refuses(f"echo {urls} | xargs{opts} {prog}")
    assert net_refuses(f"echo {urls} 0:8080 | xargs{opts} {prog}")


@pytest.mark.parametrize("command", [
    "echo https://example.com; xargs curl < urls.txt", "echo https://example.com | xargs -I{} curl {}/x",
    "cat urls.txt | xargs curl", "echo $U | xargs curl", "echo https://example.com | xargs -a f curl",
    "echo -e 'http://example.com\\n' | xargs curl", "echo https://example.com | xargs curl && curl 10.1"])
def test_other_xargs_input_stays_unknown(command: str) -> None:
    assert net_refuses(command)


def test_helpers() -> None:
    assert without_listening(["uvicorn", "a:b", "--host", "127.0.0.1", "--port", "1"]) == ["uvicorn", "a:b",
                                                                                          "--port", "1"]
    assert without_listening(["curl", "--host", "x"]) == ["curl", "--host", "x"]
    assert without_listening(["flask", "--host", "x"]) == ["flask", "--host", "x"]
    assert quiet_text("no_proxy=localhost curl x", ()) == "  curl x"
    assert xargs_literal("echo a b | xargs -n1 curl -s") == ("curl", "-s", "a", "b")
    assert xargs_literal("echo a | xargs curl; ls") is None
