"""OpenAPI helpers the route modules share: the request body of a lean endpoint, the error responses."""

from __future__ import annotations

from typing import Any

from ..models import ErrorOut

__all__ = ["body", "err_responses"]


def body(model: type) -> dict[str, Any]:
    """``openapi_extra`` declaring ``model`` as the JSON body of an endpoint that parses it itself."""
    return {"requestBody": {"required": True, "content": {"application/json": {
        "schema": {"$ref": f"#/components/schemas/{model.__name__}"}}}}}


def err_responses() -> dict[int | str, dict[str, Any]]:
    return {c: {"model": ErrorOut, "description": d} for c, d in (
        (400, "malformed JSON or bad input"), (401, "missing or invalid bearer token"),
        (403, "the credential's role does not cover this path (or self-approval)"),
        (413, "body too large"), (422, "body fails validation"), (503, "audit store unavailable: no verdict"))}
