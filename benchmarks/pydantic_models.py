"""The same hand-written conversions with pydantic v2 models (the optional ``bench`` extra).

A pydantic user would model the source and the target envelope, validate the input
with ``model_validate_json`` (pydantic-core's JSON parser), build the target model
and serialize it with ``model_dump_json``. Payloads are ``dict[str, Any]``: pydantic
has no way to carry an unparsed JSON value through a model. Output documents are
the same as envglot's for these records (checked by ``benchmarks/run.py``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from handwritten import DOTBOT_TO_V2, PRECONDITION_CODES
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

__all__ = [
    "CONVERSIONS",
    "DotbotEnvelope",
    "LegacyFlat",
    "LegacyInterim",
    "V2Envelope",
    "dotbot_to_v2",
    "legacy_v1_to_v2",
]

_INTERNAL = ("INTERNAL_ERROR", "internal")


# -- dotbot (source) ----------------------------------------------------------


class DotbotIssue(BaseModel):
    code: str
    message: str
    path: str | None = None
    details: dict[str, Any] | None = None


class DotbotAudit(BaseModel):
    timestamp: str
    duration_ms: int | float
    source: str
    host: str | None = None
    correlation_id: str | None = None
    write_to: str | None = None


class DotbotIntent(BaseModel):
    recommended_next: str | None = None
    reason: str | None = None
    parameters: dict[str, Any] | None = None


class DotbotAction(BaseModel):
    id: str | None = None
    type: str | None = None
    label: str | None = None
    reason: str | None = None
    tool: str | None = None
    parameters: dict[str, Any] | None = None


class DotbotEnvelope(BaseModel):
    schema_id: Literal["dotbot-mcp-response@1"]
    tool: str
    version: str
    status: Literal["ok", "warning", "error"]
    summary: str
    data: dict[str, Any]
    warnings: list[str | DotbotIssue]
    errors: list[DotbotIssue]
    audit: DotbotAudit
    intent: DotbotIntent | None = None
    actions: list[DotbotAction] | None = None


# -- legacy-v1 (source) -------------------------------------------------------


class LegacyPagination(BaseModel):
    offset: int | None = None
    limit: int | None = None
    total: int | None = None
    has_more: bool | None = None


class LegacyTiming(BaseModel):
    duration_ms: int | float | None = None


class LegacyMeta(BaseModel):
    version: str | None = None
    pagination: LegacyPagination | None = None
    timing: LegacyTiming | None = None


class LegacyInterim(BaseModel):
    """The interim ``{success, data, error}`` envelope (``data._meta``, ``data._warnings``)."""

    model_config = ConfigDict(extra="forbid")

    success: bool
    data: dict[str, Any]
    error: str | None


class LegacyFlat(BaseModel):
    """A flat v1 tool dict: payload keys at the top level, outcome by ``success``/``found``/``error``."""

    model_config = ConfigDict(extra="allow")

    success: bool | None = None
    error: str | None = None
    schema_version: str | None = None


_LEGACY = TypeAdapter(Annotated[LegacyInterim | LegacyFlat, Field(union_mode="left_to_right")])
_LEGACY_META = TypeAdapter(LegacyMeta)


# -- response-v2 (target) -----------------------------------------------------


class V2Pagination(BaseModel):
    cursor: str | None = None
    has_more: bool | None = None
    page_size: int | None = None
    total_count: int | None = None
    offset: int | None = None
    limit: int | None = None


class V2Meta(BaseModel):
    version: Literal["response-v2"]
    request_id: str | None = None
    warnings: list[str] | None = None
    pagination: V2Pagination | None = None
    telemetry: dict[str, Any] | None = None


class V2Envelope(BaseModel):
    success: bool
    data: dict[str, Any]
    error: str | None
    meta: V2Meta


# -- conversions --------------------------------------------------------------


def _dump(env: V2Envelope) -> bytes:
    # exclude_unset: optional meta keys are omitted when not set, `error: null` stays.
    return env.model_dump_json(exclude_unset=True).encode()


def dotbot_to_v2(buf: bytes) -> bytes:
    """dotbot-mcp-response@1 -> response-v2, through pydantic models."""
    src = DotbotEnvelope.model_validate_json(buf)
    meta: dict[str, Any] = {"version": "response-v2"}
    if src.audit.correlation_id is not None:
        meta["request_id"] = src.audit.correlation_id
    if src.warnings:
        meta["warnings"] = [w if isinstance(w, str) else w.message for w in src.warnings]
    meta["telemetry"] = {"duration_ms": src.audit.duration_ms}
    if src.errors:
        err = src.errors[0]
        code, etype = DOTBOT_TO_V2.get(err.code, _INTERNAL)
        data = dict(src.data, error_code=code, error_type=etype)
        details = err.details
        if err.code in PRECONDITION_CODES:
            details = {**(details or {}), "category": "failed_precondition"}
        if details is not None:
            data["details"] = details
        return _dump(V2Envelope(success=False, data=data, error=err.message, meta=V2Meta(**meta)))
    return _dump(V2Envelope(success=True, data=src.data, error=None, meta=V2Meta(**meta)))


def legacy_v1_to_v2(buf: bytes) -> bytes:
    """legacy foundry-mcp (flat v1 dicts or the interim envelope) -> response-v2, through pydantic models."""
    src = _LEGACY.validate_json(buf)
    meta: dict[str, Any] = {"version": "response-v2"}
    if isinstance(src, LegacyInterim):
        ok = src.success
        error = src.error
        data = dict(src.data)
        warnings = data.pop("_warnings", None)
        if warnings:
            meta["warnings"] = warnings
        raw_meta = data.pop("_meta", None)
        if raw_meta:
            m = _LEGACY_META.validate_python(raw_meta)
            if m.pagination is not None:
                pg = m.pagination
                page = {"has_more": pg.has_more, "total_count": pg.total, "offset": pg.offset, "limit": pg.limit}
                meta["pagination"] = V2Pagination(**{k: v for k, v in page.items() if v is not None})
            if m.timing is not None and m.timing.duration_ms is not None:
                meta["telemetry"] = {"duration_ms": m.timing.duration_ms}
    else:
        error = src.error
        ok = src.success if src.success is not None else not error
        data = dict(src.model_extra or {})
    if not ok:
        data["error_code"], data["error_type"] = _INTERNAL
        return _dump(
            V2Envelope(success=False, data=data, error=error or "INTERNAL_ERROR (internal)", meta=V2Meta(**meta))
        )
    return _dump(V2Envelope(success=True, data=data, error=None, meta=V2Meta(**meta)))


CONVERSIONS = {
    ("dotbot", "response-v2"): dotbot_to_v2,
    ("legacy-v1", "response-v2"): legacy_v1_to_v2,
}
"""(source, target) -> pydantic bytes -> bytes conversion."""
