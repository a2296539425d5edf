"""Secret and PII detection in what an agent sends: every string of a tool call's arguments, decoded.

Detectors are maintained libraries, each made for its job, called in-process:

- **keys and tokens**: the plugin classes of Yelp's ``detect-secrets`` (AWS, GitHub, GitLab, Slack, Stripe,
  OpenAI, SendGrid, Twilio, npm, PyPI, Discord, Telegram, Mailchimp, Square, Azure storage, Artifactory,
  JWTs, PEM/OpenSSH/PGP private keys, basic-auth URLs, ...). Only ``analyze_string`` is called: the regexes
  and format checks (a JWT's header and payload must be JSON), never ``verify`` (which would send the
  secret to its issuer over the network). The high-entropy plugins and the keyword plugin are opt-in
  (``plugins="all"`` or by name): they are what makes a scanner noisy, and
  ``benchmarks/secret_guard.py`` measures each plugin's false positives separately;
- **PII**: card numbers (a 13-19 digit run that passes the Luhn check of ``python-stdnum``), US social
  security numbers written ``ddd-dd-dddd`` (``stdnum.us.ssn``: area, group and serial rules), IBANs
  (``stdnum.iban``: country format and ISO 7064 check digits), phone numbers (Google's libphonenumber
  port ``phonenumbers``, leniency VALID) and e-mail addresses (``email-validator``, syntax only).
  Presidio was measured and not used: its analyzer needs spaCy (the official English models are not
  on PyPI) and its e-mail recognizer fetches the public-suffix list over the network at first use;
  its pattern recognizers wrap the same checks as above. Default PII kinds are cards and SSNs: e-mail
  addresses, IBANs and phone numbers are what benign calls address (``send_email.to``,
  ``send_money.recipient``), so they are opt-in (see the benchmark's per-kind false-positive rates).

Reading like the receiving system (and an attacker): every string leaf of nested arguments, mapping keys
included; NFKC with invisible and default-ignorable characters removed (``AKIA\u200b...``, variation
selectors, Hangul fillers) and Unicode tag characters read as the ASCII they shadow; JSON inside a string; and
the allow-list of decodings and views of :mod:`agentguard.policies.secret_views`, up to :data:`MAX_LAYERS`
deep: percent-encoding, HTML entities, written-out string escapes, quoted-printable, base64/base32/base85/hex
runs (UTF-8 or UTF-16 text, gzip/zlib/bzip2/xz streams, printable runs behind padding bytes), the homoglyph
skeleton, reversed, ROT13, without whitespace or separators, words reordered or each reversed. The string
leaves of one call are also read joined, in every order of up to four pieces (a key split across arguments,
written in one order and joined in another), each URL read as the pieces its receiver reads apart (query values,
path segments, subdomain labels: ``?p=<half>`` twice), also without the pieces every URL repeats (the template:
:func:`varying`). A value nested deeper than :data:`MAX_NESTING`, a string longer
than ``max_chars``, a compressed run that inflates past its bound, or readings that add up to more than
:data:`READ_BUDGET` times a string's length are findings of kind ``unreadable`` (refused: not read is not
allowed).

Cost (session 22): linear in the text's length: a string over :data:`~agentguard.policies.secret_windows.WINDOW`
characters is read in overlapping windows (:mod:`agentguard.policies.secret_windows`), a text joined from pieces in
chunks, and the format gate is one Aho-Corasick pass (:mod:`agentguard.policies.secret_gate`). Session 23: the
binary-to-text runs of a reading are found in one numpy pass (:mod:`agentguard.policies.secret_runs`), a code-point
notation is searched only where its runs can be, a format pattern without a literal only where its literal-led tail
matches; no decision changed (``benchmarks/results/secret_scan_differential_s23.json``; cost side by side with the
older tree: ``benchmarks/results/secret_scan_scaling_s23.json``). A key cut across an
argument's name and its value is read joined (names next to values, as serialised); a checksummed GitHub token without
its ``_`` is read (:mod:`agentguard.policies.secret_checksums`).

Known secrets (:mod:`agentguard.policies.secret_fragments`): given ``known`` (the secrets a guard was configured
with or read in the run), every reading above is also searched for 12 consecutive characters of one of them,
case-folded, separators dropped, forwards, reversed or in ROT13, and every 2nd and 3rd character: a slice of a key
without its prefix, its case changed, interleaved with letters, in any encoding here, is a finding of type
``known secret``. Code-point runs (decimal, hex, octal, binary; a list of numbers in the arguments), a base64 run cut
at any offset, the text lower-cased and every 2nd/3rd character of a long token also restore a key's format for
the detectors (a key the guard never saw).

What no content scanner sees: a secret encrypted or enciphered (ROT47, XOR), spelled out, or transformed twice
by transforms in a row (ROT13 of a reversed key); a slice of a key *the guard never saw* without the prefix its
format is known by (``ghp_`` dropped, or base64 of such a slice: strict xfails in
``tests/policies/test_secrets_redteam_links.py``), fewer than 12 characters of a known one in one reading.
Pair the guard with provenance and flow rules (a value read from a secret store may not reach a third party in
any form).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping, Sequence

from ..core.errors import InputError, require
from .secret_checksums import github_tokens
from .secret_fragments import KnownSecrets
from .secret_joins import MAX_NESTING, _elided, _names, _names_and_leaves, _orders, fields_of, pieces, string_leaves, varying
from .secret_gate import Gate
from .secret_spelled import spelled
from .secret_windows import WINDOW, chunks, windows
from .secret_views import (_A85, _B85, GATED_VIEWS, decodings, is_reading, read_bytes, read_invisible, skeleton, untag,
                           url_pieces, views)

__all__ = ["DEFAULT_PII", "DEFAULT_PLUGINS", "Finding", "LeakScanner", "PII_KINDS", "decodings", "fields_of", "pieces",
           "plugin_names",
           "string_leaves", "varying", "views"]

#: detect-secrets plugins used by default: format-specific detectors (no entropy, keyword or IP plugins)
DEFAULT_PLUGINS = (
    "AWSKeyDetector", "ArtifactoryDetector", "AzureStorageKeyDetector", "BasicAuthDetector",
    "DiscordBotTokenDetector", "GitHubTokenDetector", "GitLabTokenDetector", "JwtTokenDetector",
    "MailchimpDetector", "NpmDetector", "OpenAIDetector", "PrivateKeyDetector", "PypiTokenDetector",
    "SendGridDetector", "SlackDetector", "SquareOAuthDetector", "StripeDetector", "TelegramBotTokenDetector",
    "TwilioKeyDetector",
)
PII_KINDS = ("credit_card", "us_ssn", "iban", "phone", "email")
DEFAULT_PII = ("credit_card", "us_ssn")
MAX_LAYERS = 3

_CARD = re.compile(r"(?<![\w-])(?:\d[ -]?){12,18}\d(?![\w-])")
_SSN = re.compile(r"(?<![\w-])\d{3}-\d{2}-\d{4}(?![\w-])")
# an IBAN as written (any case): country, check digits, groups of four (spaced or not), a short last group
_IBAN = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?(?![A-Za-z0-9])", re.I)
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_B64 = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")
_HEX = re.compile(r"[0-9A-Fa-f]{24}")   # a hex run a decoding reads (any length from 24, odd too)
_DIGIT_OR_AT = re.compile(r"[\d@]")
#: _JOINED (session 22): a format finding in the despaced reading (every blank of the text removed) is kept only when
#: it holds a digit. Prose joined without its blanks is letters: ``Rent-A-Car company name ...`` read as
#: ``ACarcompanyname...`` is a Twilio SID (``AC[a-z0-9]{32}``) and refused a benign 100 KB tool output. A random key
#: without a digit is rare (a 32-hex body: (6/16)**32; an AWS id's 16 base-36 characters: 0.55%) and, written in groups
#: of one width, is still read by the ``ungrouped`` reading; a known secret is searched without this filter.
_DIGIT = re.compile(r"\d")
#: _HEX_ONLY (session 22): a format finding in a view that changed the text's case is kept only when it is not all hex
#: digits. Hex is one value in either case, so a hex id (a request id, a hash: ``acca9ad19dd6b565ab32``) read upper-cased
#: is no AWS key id (``ACCA[0-9A-Z]{16}``) but refused a benign log; a real AWS id has a letter past F (all sixteen
#: characters of its base-32 body in ``A-F2-7``: (12/32)**16).
_HEX_ONLY = re.compile(r"[0-9A-Fa-f]+")
_CASED = ("|uppercased", "|lowercased")
#: the shortest text whose views are read: no format a default plugin detects is shorter (Slack's ``xoxb-`` and
#: ten characters is the shortest); a key cut into shorter pieces is read where the pieces are joined back
_MIN_VIEW = 12
#: the most characters one string's readings (decodings and views, all layers) may add up to, as a multiple of
#: its length (at least 64 Ki characters): past it the string cannot be read in bound and is an ``unreadable``
#: finding (refused), never a silent partial read
READ_BUDGET = 48


@dataclass(frozen=True)
class Finding:
    """One thing found: ``kind`` (``secret``, ``pii`` or ``unreadable``), the detector's ``type`` (``GitHub
    Token``, ``credit_card``), where (``path``: argument path, then the decodings applied, e.g.
    ``body|base64``) and the matched ``value`` (kept in memory; reasons carry :meth:`redacted` only)."""

    kind: str
    type: str
    path: str
    value: str

    def redacted(self) -> str:
        """The first four characters and the length: enough to recognise, not to use."""
        return f"{self.value[:4]}...({len(self.value)} chars)" if self.value else ""


def plugin_names() -> list[str]:
    """Every detect-secrets plugin class name this installation has."""
    util = require("detect_secrets.core.plugins.util", "secrets")
    return sorted(c.__name__ for c in util.get_mapping_from_secret_type_to_class().values())


def _plugins(names: Sequence[str] | str) -> list[Any]:
    util = require("detect_secrets.core.plugins.util", "secrets")
    classes = {c.__name__: c for c in util.get_mapping_from_secret_type_to_class().values()}
    wanted = sorted(classes) if names == "all" else [names] if isinstance(names, str) else list(names)
    unknown = [n for n in wanted if n not in classes]
    if unknown:
        raise InputError(f"unknown detect-secrets plugin(s) {', '.join(unknown)} (known: {', '.join(sorted(classes))})")
    return [classes[n]() for n in wanted]


def _gate(plugins: Sequence[Any]) -> tuple[set[int], re.Pattern[str] | None]:
    """One regex, the alternation of the ``denylist`` regexes of every plugin whose ``analyze_string`` only
    yields matches of its own denylist (detect-secrets' ``RegexBasedDetector`` and the JWT plugin, which
    filters those matches): a string none of them matches cannot make those plugins yield, so one search
    replaces ~20. Plugins that override ``analyze_string`` otherwise are always run."""
    base = require("detect_secrets.plugins.base", "secrets").RegexBasedDetector
    jwt = require("detect_secrets.plugins.jwt", "secrets").JwtTokenDetector
    gated = [p for p in plugins if type(p).analyze_string in (base.analyze_string, jwt.analyze_string)
             and getattr(p, "denylist", None)]
    parts = []
    for p in gated:
        for rx in p.denylist:
            flags = ("i" if rx.flags & re.IGNORECASE else "") + ("m" if rx.flags & re.MULTILINE else "") + \
                    ("s" if rx.flags & re.DOTALL else "")
            parts.append(f"(?{flags}:{rx.pattern})" if flags else f"(?:{rx.pattern})")
    return {id(p) for p in gated}, (re.compile("|".join(parts)) if parts else None)


class LeakScanner:
    """Finds secrets and PII in any value (strings, nested mappings and lists). See the module docstring.

    ``plugins``: detect-secrets plugin class names (default :data:`DEFAULT_PLUGINS`; ``"all"`` for every
    one); ``pii``: PII kinds among :data:`PII_KINDS` (default :data:`DEFAULT_PII`); ``extra_patterns``:
    ``{type name: regex}`` for formats detect-secrets lacks; ``decode``: read the decodings too;
    ``phone_region``: the region a phone number without ``+`` is read in.
    """

    def __init__(self, *, plugins: Sequence[str] | str = DEFAULT_PLUGINS, pii: Sequence[str] = DEFAULT_PII,
                 extra_patterns: Mapping[str, str] | None = None, decode: bool = True,
                 max_chars: int = 1_000_000, phone_region: str = "US") -> None:
        self.plugins = _plugins(plugins)
        unknown = sorted(set(pii) - set(PII_KINDS))
        if unknown:
            raise InputError(f"unknown PII kind(s) {', '.join(unknown)} (known: {', '.join(PII_KINDS)})")
        self.pii = tuple(pii)
        self.extra: list[tuple[str, re.Pattern[str]]] = []
        for k, rx in (extra_patterns or {}).items():
            try:
                self.extra.append((str(k), re.compile(rx)))
            except re.error as exc:
                raise InputError(f"extra_patterns.{k}: bad regular expression {rx!r}: {exc}") from None
        self.decode = decode
        self.max_chars = max_chars
        self.phone_region = phone_region
        self._stdnum = require("stdnum.iban", "secrets") if {"iban", "credit_card", "us_ssn"} & set(self.pii) else None
        self._entropy = [p for p in self.plugins if hasattr(p, "calculate_shannon_entropy")]
        self._regex = [p for p in self.plugins if p not in self._entropy]
        self._entropy_rx = [re.compile("[" + re.escape(p.charset) + "]{20,}") for p in self._entropy]
        self._gated, self._gate = _gate(self._regex)
        self._ungated = [p for p in self._regex if id(p) not in self._gated]
        # the gate's answer, per plugin, found in one Aho-Corasick pass (session 22: the alternation cost ~1.5 us a
        # character on every reading); ``self._gate`` stays the exact alternation it stands for
        self._gates = Gate([p for p in self._regex if id(p) in self._gated])
        self._github = any(type(p).__name__ == "GitHubTokenDetector" for p in self.plugins)

    # -- one string ---------------------------------------------------------------------------------
    def scan_text(self, text: str, path: str = "", *, full: bool = True, known: KnownSecrets | None = None
                  ) -> list[Finding]:
        """Findings in one string (its canonical form and, with ``decode``, its decodings and views).
        ``full=False`` reads with the format detectors only (no PII, no entropy plugins): for text this scanner
        put together itself (joined arguments, views), where a digit run or a random-looking run is an artefact.
        ``known``: secrets whose windows are searched in every reading too (a finding of type ``known secret``:
        :mod:`agentguard.policies.secret_fragments`)."""
        if len(text) > self.max_chars:
            return [Finding("unreadable", "too long", path, "")]
        if len(text) <= WINDOW:
            return self._read(text, path, full, known)
        out = self._json((text if text.isascii() else read_invisible(text)).strip(), path, known)   # a JSON text is read as its values (whole: not windowed)
        for start, end in windows(text):
            out += self._read(text[start:end], path, full, known, json_whole=False)
        return _unique(out)

    def _scan_joined(self, joined: str, path: str, known: KnownSecrets | None) -> list[Finding]:
        """A text this scanner joined from pieces it read whole (format detectors only): read in chunks cut anywhere
        (:func:`~agentguard.policies.secret_windows.chunks`): the pieces of thousands of URLs join into one run
        without a blank, which no window may cut, and which was read whole (session 22)."""
        if len(joined) > self.max_chars:
            return [Finding("unreadable", "too long", path, "")]
        out: list[Finding] = []
        for start, end in chunks(joined):
            out += self._read(joined[start:end], path, False, known)
        return _unique(out)

    def _json(self, stripped: str, where: str, known: KnownSecrets | None) -> list[Finding]:
        """The findings of ``stripped`` read as a JSON object or array ([] when it is none)."""
        if not (stripped[:1] in "{[" and stripped[-1:] in "}]"):
            return []
        try:
            parsed = json.loads(stripped)
        except ValueError:
            return []
        except RecursionError:  # "[[[[...": deeper than any reader goes; not read, not allowed
            return [Finding("unreadable", "nested too deep", f"{where}|json", "")]
        return self.scan(parsed, f"{where}|json", depth=0, known=known) if isinstance(parsed, (dict, list)) else []

    def _read(self, text: str, path: str, full: bool, known: KnownSecrets | None, json_whole: bool = True
              ) -> list[Finding]:
        """The readings of one string (or one window of a long one; ``json_whole=False``: the window itself is not
        parsed as JSON, the whole text was), within :data:`READ_BUDGET`."""
        out: list[Finding] = []
        seen: set[str] = set()
        # (text, path, layers, viewable, whole, unseparate): a separator reading is not read for separators again
        todo: list[tuple[str, str, int, bool, bool, bool]] = [(text, path, 0, True, full, full)]
        budget = READ_BUDGET * max(len(text), 1 << 16)
        while todo:
            t, where, depth, viewable, whole, unsep = todo.pop()
            if t in seen:
                continue
            seen.add(t)
            budget -= len(t)
            if budget < 0:  # the readings did not finish in bound: not read is not allowed
                out.append(Finding("unreadable", "readings exceed their bound", where, ""))
                break
            tagged = None if t.isascii() else untag(t)
            if tagged is not None:  # tag characters shadow ASCII ("ASCII smuggling"): read what they spell
                todo.append((tagged, f"{where}|tags", depth, viewable, whole, unsep))
            canon = t if t.isascii() else read_invisible(t)
            found = self._detect(canon, where, whole)
            if where.endswith("|despaced"):   # words joined across blanks: a key's body has a digit (see _JOINED)
                found = [f for f in found if f.kind != "secret" or _DIGIT.search(f.value)]
            elif where.endswith(_CASED):   # a hex id read in the other case is no key (see _HEX_ONLY)
                found = [f for f in found if f.kind != "secret" or not _HEX_ONLY.fullmatch(f.value)]
            out += found
            if known is not None and _new_to_known(where) and (hit := known.find(canon)) is not None:
                out.append(Finding("secret", "known secret", f"{where}|{hit[1]}" if hit[1] else where, hit[0]))
            if not self.decode or depth >= MAX_LAYERS:
                continue
            # a view is read (and decoded: base64 of a reversed key) but not viewed again, except a reading of the
            # same text (the homoglyph skeleton; without its separators: is_reading), which keeps the views of the
            # text it reads; the skeleton keeps its layer budget too. PII and entropy are read in the homoglyph view
            # only (a reversed digit run is no card)
            if len(canon) >= _MIN_VIEW and (viewable or not canon.isascii()):
                for name, v in views(canon, unsep and viewable):
                    if v in seen or not (viewable or name == "homoglyph") or not self._worth_reading(name, v, whole,
                                                                                                     known):
                        continue
                    todo.append((v, f"{where}|{name}", depth + (name != "homoglyph"), viewable if is_reading(name)
                                 else False, whole and name == "homoglyph", unsep and name == "homoglyph"))
            if json_whole or depth:
                out += self._json(canon.strip(), where, known)
            cased = where.endswith(_CASED)   # session 22: see decodings(runs=False) and _HEX_ONLY
            for layer, d in (*decodings(canon, not cased), *spelled(canon)):   # spelled: a key read out in words
                if d is None:  # a decoding that cannot be finished in bound (a compression bomb)
                    out.append(Finding("unreadable", f"{layer} inflates past its bound", f"{where}|{layer}", ""))
                else:
                    todo.append((d, f"{where}|{layer}", depth + 1, True, whole, whole))
        return _unique(out)

    def _worth_reading(self, name: str, view: str, whole: bool, known: KnownSecrets | None = None) -> bool:
        """Whether a view can show anything its text did not: a detector's pattern opens on it, or it holds a
        run a decoder reads (base64, hex, percent-encoding, JSON); the homoglyph view of a fully read text always.
        Without plugins outside the gate a closed gate means no finding (see :func:`_gate`), so this is exact
        for secrets and keeps the views' cost to a few regex searches on benign text. The views of
        :data:`~agentguard.policies.secret_views.GATED_VIEWS` (case, every n-th character) only where a pattern opens
        (a known secret's search is case-folded and reads every n-th character itself); with known secrets the
        reordering views (chunks in reverse order) always."""
        if name == "homoglyph" and whole:
            return True
        if not view.isascii():  # judged as it will be read: through its homoglyph skeleton too
            view = skeleton(view)
        if self._ungated or self.extra or self._gate is None or self._gates.open(view):
            return True
        if name in GATED_VIEWS:
            return False
        if known is not None and len(known) and name in ("words-reversed", "each-word-reversed"):
            return True
        return bool(_B64.search(view) or _HEX.search(view) or _B85.search(view) or _A85.search(view)
                    or any(c in view for c in "%&\\=") or view.lstrip()[:1] in "{[")

    def _detect(self, text: str, where: str, full: bool = True) -> list[Finding]:
        out: list[Finding] = []
        # a plugin the gate leaves out has no pattern that matches, so it cannot yield (exact, see _gate and Gate)
        for p in (self._regex if self._gate is None else self._ungated + self._gates.plugins(text)):
            hits = set(p.analyze_string(text))  # the plugin's own decision (JWT: header and payload are JSON)
            if hits:  # report the whole token, not the regex group a plugin yields
                whole = {m.group(0) for rx in getattr(p, "denylist", ()) for m in rx.finditer(text)}
                vals = [w for w in sorted(whole) if any(h in w for h in hits)] or sorted(hits)
                out += [Finding("secret", str(p.secret_type), where, str(w)) for w in vals]
        if self._github:   # a checksummed GitHub token without its separator (secret_checksums, session 22)
            out += [Finding("secret", "GitHub Token", where, t) for t in github_tokens(text)]
        for p, rx in zip(self._entropy, self._entropy_rx) if full else ():
            for m in rx.finditer(text):
                if p.calculate_shannon_entropy(m.group(0)) > p.entropy_limit:
                    out.append(Finding("secret", str(p.secret_type), where, m.group(0)))
        for name, rx in self.extra:
            out += [Finding("secret", name, where, m.group(0)) for m in rx.finditer(text)]
        if self.pii and full:
            out += self._pii(text, where)
        return out

    def _pii(self, text: str, where: str) -> list[Finding]:
        out: list[Finding] = []
        if _DIGIT_OR_AT.search(text) is None:
            return out
        if "credit_card" in self.pii:
            from stdnum import luhn

            for m in _CARD.finditer(text):
                digits = re.sub(r"[ -]", "", m.group(0))
                if 13 <= len(digits) <= 19 and digits[0] in "23456" and luhn.is_valid(digits):
                    out.append(Finding("pii", "credit_card", where, m.group(0)))
        if "us_ssn" in self.pii:
            from stdnum.us import ssn

            out += [Finding("pii", "us_ssn", where, m.group(0)) for m in _SSN.finditer(text) if ssn.is_valid(m.group(0))]
        if "iban" in self.pii:
            out += [Finding("pii", "iban", where, m.group(0)) for m in _IBAN.finditer(text)
                    if self._stdnum.is_valid(m.group(0))]  # type: ignore[union-attr]
        if "email" in self.pii and "@" in text:
            ev = require("email_validator", "secrets")
            for m in _EMAIL.finditer(text):
                try:
                    ev.validate_email(m.group(0), check_deliverability=False)
                except ev.EmailNotValidError:
                    continue
                out.append(Finding("pii", "email", where, m.group(0)))
        if "phone" in self.pii:
            pn = require("phonenumbers", "secrets")
            for m in pn.PhoneNumberMatcher(text, self.phone_region, leniency=pn.Leniency.VALID):
                out.append(Finding("pii", "phone", where, m.raw_string))
        return out

    # -- any value ----------------------------------------------------------------------------------
    def scan(self, value: Any, path: str = "", *, depth: int = 0, known: KnownSecrets | None = None) -> list[Finding]:
        """Findings in every string leaf (and mapping key) of ``value``; deeper than :data:`MAX_NESTING`
        is a finding of kind ``unreadable``. A list of numbers is also read as one text (``[103, 104, 112]``: the
        code points of a key, read by the code-point decoding). ``known``: see :meth:`scan_text`."""
        if isinstance(value, str):
            found = self.scan_text(value, path, known=known)
            if depth == 0 and len(parts := url_pieces(value)) > 1 and len(value) <= self.max_chars:
                for joined in _orders(_elided(parts)):   # a key cut into a URL's query values, path segments, labels
                    found += self._scan_joined(joined, f"{path}<joined>", known)
            return _unique(found)
        if depth > MAX_NESTING:
            return [Finding("unreadable", "nested too deep", path, "")]
        if hasattr(value, "model_dump"):
            value = value.model_dump()
        out: list[Finding] = []
        if isinstance(value, Mapping):
            for k, v in value.items():
                sub = f"{path}.{k}" if path else str(k)
                out += self.scan_text(str(k), sub, known=known) + self.scan(v, sub, depth=depth + 1, known=known)
        elif isinstance(value, (list, tuple, set, frozenset)):
            for i, v in enumerate(value):
                out += self.scan(v, f"{path}[{i}]", depth=depth + 1, known=known)
            if isinstance(value, (list, tuple)) and len(value) >= 8 and all(
                    isinstance(v, int) and not isinstance(v, bool) for v in value):
                out += self.scan_text(" ".join(map(str, value)), f"{path}|numbers", full=False, known=known)
        elif isinstance(value, (bytes, bytearray, memoryview)):  # read as the decoded runs are (gzip, UTF-16...)
            raw = bytes(value)
            out += self.scan_text(raw.decode("utf-8", "replace"), path, known=known)
            for text in read_bytes(raw, True) if len(raw) <= self.max_chars else ():
                out += ([Finding("unreadable", "bytes inflate past their bound", path, "")] if text is None
                        else self.scan_text(text, f"{path}|bytes", known=known))
        elif value is not None and not isinstance(value, bool):
            out += self.scan_text(str(value), path, known=known)
        if depth == 0 and isinstance(value, (Mapping, list, tuple)):
            groups = [url_pieces(leaf) for leaf in string_leaves(value, 0)]
            leaves, var = [p for g in groups for p in g], [p for g in varying(groups) for p in g]
            for parts in ([leaves] + ([var] if var != leaves and len(var) > 1 else [])):
                if len(parts) > 1 and sum(map(len, parts)) <= self.max_chars:  # a secret split across arguments, as
                    for joined in _orders(_elided(parts)):  # the receiver joins it back, in whatever order
                        out += self._scan_joined(joined, f"{path}<joined>", known)
            # session 22: a key cut across argument names and values, read as serialised (names next to their values,
            # in the order written: urlencode, json.dumps) and the names alone; not reordered (a value joined before a
            # name made keys of benign calls: ``{"text": "AKIA<12>"}`` -> ``AKIA<12>TEXT``)
            named = _names_and_leaves(value)
            names = _names(value)
            for joined in dict.fromkeys(["".join(named)] + (["".join(names)] if len(names) > 1 else [])):
                if len(named) > 1 and joined not in ("".join(leaves),) and len(joined) <= self.max_chars:
                    out += self._scan_joined("".join(_elided([joined])), f"{path}<names>", known)
            for name, vals in fields_of(string_leaves(value, 0)).items():   # each query field's values joined
                if len(vals) > 1 and sum(map(len, vals)) <= self.max_chars:
                    for joined in dict.fromkeys(["".join(vals), "".join(reversed(vals))]):
                        out += self._scan_joined(joined, f"{path}<{name}>", known)
        return _unique(out)


#: views whose text a known secret's search reads already (it folds case, drops separators and blanks, reads the
#: homoglyph skeleton, every 2nd and 3rd character, and holds each window reversed and in ROT13): not searched again
_KNOWN_READS = frozenset({"reversed", "rot13", "uppercased", "lowercased", "despaced", "homoglyph", "alphanumeric",
                          "interleaved", "separators as _", "separators as -"})


def _new_to_known(where: str) -> bool:
    """Whether the reading at path ``where`` can show a known secret's search anything its text did not: the text
    itself, a decoding, or a reordering of chunks; not a view of :data:`_KNOWN_READS`, a separator or every-n-th one."""
    last = where.rsplit("|", 1)[-1] if "|" in where else ""
    return not (last in _KNOWN_READS or last.startswith(("without ", "every ")))


def _unique(found: Iterable[Finding]) -> list[Finding]:
    """Each (kind, type, value) once, at the shortest path it was found under; values that differ only in case are
    one (a key and its lower-cased view's reading of it)."""
    best: dict[tuple[str, str, str], Finding] = {}
    for f in found:
        key = (f.kind, f.type, f.value.casefold())
        if key not in best or len(f.path) < len(best[key].path):
            best[key] = f
    return list(best.values())
