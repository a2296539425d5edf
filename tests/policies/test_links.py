"""Links found by the public suffix list (agentguard.policies.links): any suffix, IP literals, spelled-out dots."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.policies.links import deobfuscate, links, same_site


@pytest.mark.parametrize("text,site", [
    ("see https://www.Evil.example.co.uk/a?b=1", "example.co.uk"),
    ("bit.ly/sUf7tOJ", "bit.ly"),
    ("evil.xyz", "evil.xyz"),
    ("go to evil dot com now", "evil.com"),
    ("evil[.]com/login", "evil.com"),
    ("evil(dot)co(dot)uk", "evil.co.uk"),
    ("hxxps://secure-login.top/x", "secure-login.top"),
    ("http://203.0.113.7:8080/p", "203.0.113.7"),
    ("[2001:db8::1]/p", "[2001:db8::1]"),
    ("our website www.our-company.com.They sent", "our-company.com"),
    ("%77ww.evil.com", "evil.com"),
    ("evil\u200b.com", "evil.com"),
])
def test_every_form_of_a_link_is_found(text, site):
    assert site in {lk.site for lk in links(text)}


@pytest.mark.parametrize("text", ["hawaii-packing-list.docx", "version 1.5", "e.g. U.S. and Mr.Smith", "a@b.com",
                                  "2024.05.13", "score 4.5/5", "999.999.999.999"])
def test_file_names_numbers_and_addresses_are_not_links(text):
    assert links(text) == []


def test_same_site_and_deobfuscate():
    assert same_site("a.b.evil.com/x", "evil.com") and not same_site("evil.com", "evil.co")
    assert deobfuscate("EVIL dot COM") == "evil.com"


@settings(max_examples=60, deadline=None)
@given(label=st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=2, max_size=12),
       suffix=st.sampled_from(["com", "xyz", "io", "co.uk", "ly", "top", "zip", "app", "com.au", "info"]),
       form=st.sampled_from(["{l}.{s}", "https://{l}.{s}/p", "{l} dot {s}", "{l}[.]{s}", "www.{l}.{s}"]))
def test_any_public_suffix_is_a_link(label, suffix, form):
    text = "click " + form.format(l=label, s=suffix.replace(".", " dot ") if "dot" in form else suffix) + " now"
    assert f"{label}.{suffix}" in {lk.site for lk in links(text)}



@settings(max_examples=60, deadline=None)
@given(label=st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=2, max_size=12),
       suffix=st.sampled_from(["berlin", "com", "xyz", "io", "co.uk", "app"]),
       tail=st.sampled_from(["", ".2026", "+cal", ".team"]),
       domain=st.sampled_from(["gmail.com", "group.calendar.google.com", "example.org"]))
def test_the_local_part_of_an_e_mail_address_is_no_link(label, suffix, tail, domain):
    """``devconf.berlin.2026@gmail.com`` is an address a mail client sends to (fresh Google Calendar set, blind run):
    its local part names no host, whatever public suffix it happens to contain; the domain is no link either (it
    is the address's), and a link beside it is still found."""
    address = f"{label}.{suffix}{tail}@{domain}"
    assert links(address) == [] and links(f"list the events of {address} please") == []
    assert f"{label}.{suffix}" in {lk.site for lk in links(f"{address} or visit {label}.{suffix}")}
