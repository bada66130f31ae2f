"""What a user would write instead of envglot: hand-written dict conversions with orjson.

Written as a competent user would for a migration script: parse with ``orjson.loads``,
move keys between dicts, look the error code up in a literal table, ``orjson.dumps``
the result. No validation beyond what the conversion needs, no loss reports. The
output is the same document envglot writes for these records (checked by
``benchmarks/run.py`` before timing), so the comparison is like for like.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["CONVERSIONS", "DOTBOT_TO_V2", "PRECONDITION_CODES", "dotbot_to_v2", "legacy_v1_to_v2"]

_loads = orjson.loads
_dumps = orjson.dumps

DOTBOT_TO_V2: dict[str, tuple[str, str]] = {
    "DOTBOT_NOT_FOUND": ("NOT_FOUND", "not_found"),
    "STATE_FILE_INVALID": ("INTERNAL_ERROR", "internal"),
    "PROJECT_NOT_FOUND": ("NOT_FOUND", "not_found"),
    "ALIAS_CONFLICT": ("DUPLICATE_ENTRY", "conflict"),
    "REGISTRY_PARSE_ERROR": ("INTERNAL_ERROR", "internal"),
    "TECH_STACK_MISSING": ("NOT_FOUND", "not_found"),
    "STANDARDS_NOT_FOUND": ("NOT_FOUND", "not_found"),
    "BROKEN_FILE_REFERENCE": ("VALIDATION_ERROR", "validation"),
    "FRONTMATTER_MISSING": ("MISSING_REQUIRED", "validation"),
    "FRONTMATTER_INVALID": ("INVALID_FORMAT", "validation"),
    "CIRCULAR_DEPENDENCY": ("CIRCULAR_DEPENDENCY", "conflict"),
    "INVALID_PARAMETER": ("VALIDATION_ERROR", "validation"),
    "INVALID_STATE": ("CONFLICT", "conflict"),
    "STATE_NOT_INITIALIZED": ("CONFLICT", "conflict"),
    "STATE_ALREADY_EXISTS": ("DUPLICATE_ENTRY", "conflict"),
    "INVALID_PHASE": ("VALIDATION_ERROR", "validation"),
    "INVALID_TASK_ID": ("INVALID_FORMAT", "validation"),
    "PHASE_ORDER_MISSING": ("CONFLICT", "conflict"),
    "TASK_NOT_FOUND": ("TASK_NOT_FOUND", "not_found"),
    "CONFIRMATION_REQUIRED": ("MISSING_REQUIRED", "validation"),
    "HISTORY_FILE_INVALID": ("INTERNAL_ERROR", "internal"),
    "IO_ERROR": ("INTERNAL_ERROR", "internal"),
    "UNAUTHORIZED_OPERATION": ("FORBIDDEN", "authorization"),
    "INVALID_ARGUMENTS": ("VALIDATION_ERROR", "validation"),
    "SCRIPT_NOT_FOUND": ("NOT_FOUND", "not_found"),
    "EXECUTION_FAILED": ("INTERNAL_ERROR", "internal"),
}
"""dotbot error code -> response-v2 (error_code, error_type), as a user would table it."""

PRECONDITION_CODES = frozenset(
    {
        "STATE_FILE_INVALID",
        "REGISTRY_PARSE_ERROR",
        "BROKEN_FILE_REFERENCE",
        "FRONTMATTER_MISSING",
        "FRONTMATTER_INVALID",
        "INVALID_STATE",
        "STATE_NOT_INITIALIZED",
        "PHASE_ORDER_MISSING",
        "HISTORY_FILE_INVALID",
    }
)
"""dotbot codes meaning ``failed_precondition``, which no response-v2 code says: the category
goes in ``details.category`` (as envglot carries it)."""

_INTERNAL = ("INTERNAL_ERROR", "internal")
_INTERIM_KEYS = {"success", "data", "error"}
_LEGACY_DROP = ("success", "error", "schema_version")


def dotbot_to_v2(buf: bytes) -> bytes:
    """dotbot-mcp-response@1 -> response-v2."""
    src = _loads(buf)
    audit = src["audit"]
    meta: dict[str, Any] = {"version": "response-v2"}
    cid = audit.get("correlation_id")
    if cid is not None:
        meta["request_id"] = cid
    warnings = src["warnings"]
    if warnings:
        meta["warnings"] = [w if isinstance(w, str) else w["message"] for w in warnings]
    meta["telemetry"] = {"duration_ms": audit["duration_ms"]}
    errors = src["errors"]
    if errors:
        err = errors[0]
        code, etype = DOTBOT_TO_V2.get(err["code"], _INTERNAL)
        data = src["data"]
        data["error_code"] = code
        data["error_type"] = etype
        details = err.get("details")
        if err["code"] in PRECONDITION_CODES:
            details = {**(details or {}), "category": "failed_precondition"}
        if details is not None:
            data["details"] = details
        return _dumps({"success": False, "data": data, "error": err["message"], "meta": meta})
    return _dumps({"success": True, "data": src["data"], "error": None, "meta": meta})


def legacy_v1_to_v2(buf: bytes) -> bytes:
    """legacy foundry-mcp (flat v1 dicts or the interim envelope) -> response-v2."""
    src = _loads(buf)
    meta: dict[str, Any] = {"version": "response-v2"}
    if src.keys() == _INTERIM_KEYS and isinstance(src["data"], dict):
        ok = src["success"]
        error = src["error"]
        data = src["data"]
        warnings = data.pop("_warnings", None)
        if warnings:
            meta["warnings"] = warnings
        m = data.pop("_meta", None)
        if m:
            pg = m.get("pagination")
            if pg:
                page = {
                    "has_more": pg.get("has_more"),
                    "total_count": pg.get("total"),
                    "offset": pg.get("offset"),
                    "limit": pg.get("limit"),
                }
                meta["pagination"] = {k: v for k, v in page.items() if v is not None}
            timing = m.get("timing")
            if timing and timing.get("duration_ms") is not None:
                meta["telemetry"] = {"duration_ms": timing["duration_ms"]}
    else:
        error = src.get("error")
        ok = src["success"] if "success" in src else not error
        data = {k: v for k, v in src.items() if k not in _LEGACY_DROP}
    if not ok:
        data["error_code"], data["error_type"] = _INTERNAL
        return _dumps({"success": False, "data": data, "error": error or "INTERNAL_ERROR (internal)", "meta": meta})
    return _dumps({"success": True, "data": data, "error": None, "meta": meta})


CONVERSIONS = {
    ("dotbot", "response-v2"): dotbot_to_v2,
    ("legacy-v1", "response-v2"): legacy_v1_to_v2,
}
"""(source, target) -> hand-written bytes -> bytes conversion."""
