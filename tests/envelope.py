"""What every error response must be: AutoMem's envelope plus ours (automem.errors.envelope).
The error-path tests, the fuzzer and the fault tests all check bodies with this one function."""

from __future__ import annotations

from typing import Any

ENVELOPE_KEYS = {"status", "code", "message", "error", "reason", "field"}


def envelope_problem(status: int, body: Any, reason: str | None = None) -> str | None:
    """None when `body` is the error envelope of an answer with this HTTP status, else what is wrong."""
    if not isinstance(body, dict) or body.get("status") != "error":
        return f"{status} body is not the envelope: {body}"
    if body.get("code") != status or isinstance(body.get("code"), bool):
        return f"{status} envelope code is not the HTTP status: {body}"
    message = body.get("message")
    if not isinstance(message, str) or not message or body.get("error") != message:
        return f"{status} envelope lacks message/error: {body}"
    if not isinstance(body.get("reason"), str) or not body["reason"]:
        return f"{status} envelope lacks its reason: {body}"
    if "field" in body and not isinstance(body["field"], str):
        return f"{status} envelope field is not a string: {body}"
    if reason is not None and body["reason"] != reason:
        return f"{status} envelope reason is {body['reason']!r}, not {reason!r}"
    return None
