"""The canonical envelope: the hub every conversion passes through.

Every field is optional except ``ok``; ``None`` means "the source did not say".
Free-form JSON (payloads, details, parameters) is kept as :class:`msgspec.Raw`
so it travels byte for byte unless a writer must change it.
"""

from __future__ import annotations

import typing

from msgspec import Raw, Struct

from .introspect import struct_fields

__all__ = [
    "ENVELOPE_FIELDS",
    "GROUPS",
    "SCALARS",
    "Envelope",
    "Extra",
    "Fidelity",
    "NextStep",
    "Notice",
    "Pagination",
    "Problem",
    "Workspace",
]


class _Frozen(Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Base for canonical Structs: immutable, keyword-only, compact when encoded."""


class Problem(_Frozen, frozen=True):
    """One error, in the AIP-193 spirit: canonical category plus the native code verbatim."""

    category: str
    """Canonical category (google.rpc.Code name in snake_case, see ``mappings/canonical.toml``)."""
    message: str | None = None
    """``None`` when the source gave no message (a Result failure may say ``"error": null``)."""
    code: str | None = None
    """The native code as the source dialect spelled it (AIP-193 ``reason``)."""
    domain: str | None = None
    """Dialect that minted ``code`` (AIP-193 ``domain``)."""
    type: str | None = None
    """The source's own category word (response-v2 ``error_type``), kept when it was stated."""
    retryable: bool | None = None
    """As stated (errorcode) or implied (response-v2 error_type, code table) by the source."""
    retry_after_ms: int | None = None
    rate_limit_reset: str | None = None
    policy_decision: str | None = None
    remediation: str | None = None
    details: Raw | None = None
    path: str | None = None
    exception_type: str | None = None
    exception_message: str | None = None
    origin: str | None = None
    """Hint: input | state | config | policy | upstream | server | io | protocol."""
    upstream: str | None = None
    """Hint: the upstream system at fault (x, llm, db, ...)."""
    aspect: str | None = None
    """Hint: a finer sub-kind inside the category (missing, format, action, ...)."""
    partial: bool = False
    """Side effects happened before the failure."""
    extra: Raw | None = None
    """Fields of the source error object that have no canonical meaning (an object)."""


class Notice(_Frozen, frozen=True):
    """A warning: non-fatal, possibly coded."""

    message: str
    code: str | None = None
    severity: str | None = None
    path: str | None = None
    context: Raw | None = None


class NextStep(_Frozen, frozen=True):
    """A suggested next step: dotbot intent/action, code-graph nextQuerySuggestion."""

    kind: str
    """``intent`` (the one recommended next call), ``action`` or ``query``."""
    tool: str | None = None
    args: Raw | None = None
    reason: str | None = None
    id: str | None = None
    type: str | None = None
    label: str | None = None


class Pagination(_Frozen, frozen=True):
    """Paging state, the union of every dialect's notion: each fact has one field, and a
    dialect maps only the facts it has (``docs/canonical-model.md``)."""

    cursor: str | None = None
    """Where the next page starts (response-v2 ``cursor``, errorcode ``next_token``)."""
    has_more: bool | None = None
    total: int | None = None
    """Items in all pages together (response-v2 ``total_count``)."""
    page_size: int | None = None
    """The requested page size: the most items a page holds (response-v2 ``page_size``)."""
    count: int | None = None
    """Items in this page (errorcode ``result_count``): not the page size."""
    offset: int | None = None
    limit: int | None = None
    extra: Raw | None = None
    null_cursor: bool = False
    """The source stated ``cursor: null`` (there is no next page), as opposed to saying nothing;
    a writer whose cursor member may be ``null`` writes it back."""


class Fidelity(_Frozen, frozen=True):
    """How complete the payload is (truncation, content fidelity)."""

    truncated: bool | None = None
    level: str | None = None
    schema_version: str | None = None
    dropped_ids: Raw | None = None
    archive_hashes: Raw | None = None


class Workspace(_Frozen, frozen=True):
    """The workspace a tool ran in (code-graph)."""

    root: str | None = None
    repo_name: str | None = None
    rev: str | None = None


class Extra(_Frozen, frozen=True):
    """A source field with no canonical meaning, kept for same-dialect writes and loss reports."""

    dialect: str
    path: str
    """JSON path in the source document, e.g. ``$.meta.trace``."""
    value: Raw


class Envelope(_Frozen, frozen=True):
    """A tool response in canonical form."""

    ok: bool
    payload: Raw | None = None
    """The tool's payload; ``None`` when the source had none (not JSON ``null``)."""
    summary: str | None = None
    problems: tuple[Problem, ...] = ()
    warnings: tuple[Notice, ...] = ()
    tool: str | None = None
    tool_version: str | None = None
    request_id: str | None = None
    timestamp: str | None = None
    duration_ms: int | float | None = None
    source: str | None = None
    host: str | None = None
    write_to: str | None = None
    next_steps: tuple[NextStep, ...] = ()
    instruction: str | None = None
    additional_instructions: str | None = None
    disposition: str | None = None
    arguments: Raw | None = None
    pagination: Pagination | None = None
    fidelity: Fidelity | None = None
    token_estimate: int | None = None
    limits: Raw | None = None
    workspace: Workspace | None = None
    rate_limit: Raw | None = None
    telemetry: Raw | None = None
    """Timing/perf metrics beyond ``duration_ms`` (an object)."""
    mode: str | None = None
    approval_mode: bool | None = None
    extras: tuple[Extra, ...] = ()
    residue: Raw | None = None
    """``preserve`` mode: what another dialect needs to restore its original document."""


ENVELOPE_FIELDS: tuple[str, ...] = Envelope.__struct_fields__


def _metadata() -> tuple[tuple[str, ...], dict[str, type[Struct]]]:
    scalars: list[str] = []
    groups: dict[str, type[Struct]] = {}
    for f in struct_fields(Envelope):  # its types are the annotations evaluated
        if f.name in ("ok", "payload", "residue") or typing.get_origin(f.type) is tuple:
            continue
        struct = [t for t in typing.get_args(f.type) if isinstance(t, type) and issubclass(t, Struct)]
        if struct:
            groups[f.name] = struct[0]
        else:
            scalars.append(f.name)
    return tuple(scalars), groups


SCALARS, GROUPS = _metadata()
"""The envelope's metadata, derived from :class:`Envelope` (the one list of it): ``SCALARS`` are
the fields holding one value (``summary`` ... ``approval_mode``), ``GROUPS`` the fields holding a
Struct of them (``pagination``, ``fidelity``, ``workspace``) -> that Struct; neither holds the
outcome, the payload, the lists (problems, warnings, next steps, extras) or ``residue``."""
