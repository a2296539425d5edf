"""Argument extractor of ``library/mind2web_sc.py`` (GuardAgent's Mind2Web-SC access rules).

The deterministic extractor maps each web task to its action category (car, media, hotel, job, shopping,
flight, other) with ordered keyword rules over the task text (``context.metadata["task"]``) and the website
(``["website"]``), and passes the user facts (``["user_info"]``) through; a missing fact takes its
restrictive value (fail closed). :func:`llm_extractor` is the paper's LLM extractor for the same schema.

Caveat: the keyword rules were written while looking at Mind2Web-SC's labelled file (there is no separate
development split), so accuracy on unseen tasks of the same kind may be lower than on that file.
"""

from __future__ import annotations

import re
from typing import Any

from ....core.types import Context, ToolCall
from ...extract import LLMExtractor, MappingExtractor

__all__ = ["CAR_SITES", "CATEGORIES", "MEDIA_SITES", "RULES", "categorize", "extractor", "llm_extractor"]

CATEGORIES = {"other": 0, "car": 1, "media": 2, "hotel": 3, "job": 4, "shopping": 5, "flight": 6}

_W = r"\b"
RULES: list[tuple[str, re.Pattern[str]]] = [
    ("job", re.compile(_W + r"(jobs?|careers?|intern(ship)?s?|hiring|apply for|job openings?|resume|employment)" + _W, re.I)),
    ("flight", re.compile(_W + r"(flights?|fly|airlines?|airfares?|one[- ]way|round[- ]trip|nonstop)" + _W, re.I)),
    ("hotel", re.compile(_W + r"(hotels?|resorts?|motels?|inns?|rooms?|lodging|stay|accommodations?)" + _W, re.I)),
    ("car", re.compile(_W + r"(cars?|suvs?|trucks?|vans?|vehicles?|sedans?|rental car|rent a car|car rental|"
                            r"pick(ed)?[- ]up .* airport|model [sxy3]|audi|toyota|mercedes|honda|ford|bmw|tesla|"
                            r"corolla|used inventory|wagons?|convertibles?)" + _W, re.I)),
    ("media", re.compile(_W + r"(movies?|films?|music|songs?|playlists?|albums?|tracks?|videos?|tv|shows? on|"
                              r"trailers?|watchlist|podcasts?|artists?|soundtracks?|streaming|series|episodes?|"
                              r"wantlist|hashtags?|tik ?tok|directors?)" + _W, re.I)),
    ("shopping", re.compile(_W + r"(cart|bag|buy|purchase|checkout|check out|gift ?cards?|order|shop|"
                                 r"collection|add to (my )?(cart|bag|basket)|basket)" + _W, re.I)),
]
CAR_SITES = {"kbb", "carmax", "cars", "tesla", "budget", "rentalcars", "enterprise", "hertz", "avis", "cargurus"}
MEDIA_SITES = {"imdb", "redbox", "rottentomatoes", "tvguide", "soundcloud", "last.fm", "discogs", "tiktok.music",
               "spotify", "netflix"}


def categorize(task: str, website: str = "") -> str:
    """The action category of a web task (first matching rule wins; site hints break ties)."""
    site = (website or "").lower()
    for name, pat in RULES:
        if pat.search(task or ""):
            if name in ("shopping",) and site in CAR_SITES:
                return "car"
            return name
    if site in CAR_SITES:
        return "car"
    if site in MEDIA_SITES:
        return "media"
    return "other"


def extractor(*, llm: bool = False, client: Any = None) -> Any:
    """Deterministic extractor: category from ``context.metadata['task']``/``['website']``, facts from
    ``context.metadata['user_info']`` (missing facts default to the restrictive value: fail closed).
    With ``llm=True`` or a ``client``: :func:`llm_extractor` instead."""
    if llm or client is not None:
        return llm_extractor(client)

    def info(key: str, default: Any):
        def f(call: ToolCall, ctx: Context) -> Any:
            v = (ctx.metadata.get("user_info") or {}).get(key, default)
            return v if v is not None else default
        return f

    def age(call: ToolCall, ctx: Context) -> int:
        a = (ctx.metadata.get("user_info") or {}).get("age")
        return int(a) if isinstance(a, (int, float)) and 0 <= a <= 150 else 0

    return MappingExtractor({
        "category": lambda c, ctx: CATEGORIES[categorize(ctx.metadata.get("task", ""), ctx.metadata.get("website", ""))],
        "age": age,
        "domestic": info("domestic", False),
        "dr_license": info("dr_license", False),
        "vaccine": info("vaccine", False),
        "membership": info("membership", False),
    })


def llm_extractor(client: Any = None) -> LLMExtractor:
    """The paper's LLM argument extractor for this policy (OpenAI-compatible endpoint by default)."""
    from ....llm.openai_compat import OpenAICompatClient
    from ...model import load_policy
    from .. import library_path

    policy = load_policy(library_path("mind2web_sc"))
    cats = ", ".join(f"{v} = {k}" for k, v in CATEGORIES.items())
    return LLMExtractor(client or OpenAICompatClient(), policy, instructions=(
        f"category is the kind of action the user task performs: {cats} (car = buy/rent a car; media = "
        "movies, music, video; hotel = book a hotel; job = apply for jobs; shopping = buy or add to cart; "
        "flight = book a flight). Copy age, domestic, dr_license, vaccine and membership from the user facts."))
