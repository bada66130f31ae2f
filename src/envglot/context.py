"""Per-conversion state handed to readers and writers, and the generic loss check."""

from __future__ import annotations

from .canonical import Envelope, Problem
from .diagnostics import Kind, Report
from .mappings import DialectMap, Mappings

__all__ = ["Context", "report_losses", "read_problem", "write_code"]


class Context:
    """What a reader or writer needs besides the document.

    Attributes:
        mappings: the compiled tables (bundled plus overlays).
        report: where diagnostics go.
        source: the source dialect's table (for source JSON paths in diagnostics).
        synth: caller-supplied values for fields a target requires (``tool``, ``request_id``,
            ``timestamp``, ...); see ``docs/python-api.md``.
    """

    __slots__ = ("mappings", "report", "source", "synth")

    def __init__(
        self,
        mappings: Mappings,
        report: Report,
        source: DialectMap | None = None,
        synth: dict[str, object] | None = None,
    ) -> None:
        self.mappings = mappings
        self.report = report
        self.source = source
        self.synth = synth or {}

    def path(self, field: str, index: int | None = None) -> str:
        """JSON path of a canonical field in the source document."""
        if self.source is not None:
            p = self.source.path(field, index)
            if p is not None:
                return p
            if "." in field:
                head = self.source.path(field.split(".", 1)[0] + "s", index)
                if head is not None:
                    return head
        return "$." + field if index is None else f"$.{field}[{index}]"

    def dropped(self, field: str, target: str, index: int | None = None, what: str | None = None) -> None:
        """Report that ``field`` has no place in ``target``."""
        p = self.path(field, index)
        self.report.add(Kind.FIELD_DROPPED, p, f"{what or field} has no place in {target}", target)


_SCALARS = (
    "summary",
    "tool",
    "tool_version",
    "request_id",
    "timestamp",
    "duration_ms",
    "source",
    "host",
    "write_to",
    "instruction",
    "additional_instructions",
    "disposition",
    "arguments",
    "token_estimate",
    "limits",
    "rate_limit",
    "telemetry",
    "mode",
    "approval_mode",
)
_NESTED = {
    "pagination": ("cursor", "has_more", "total", "page_size", "offset", "limit", "extra"),
    "fidelity": ("truncated", "level", "schema_version", "dropped_ids", "archive_hashes"),
    "workspace": ("root", "repo_name", "rev"),
}
_PROBLEM = (
    "path",
    "details",
    "remediation",
    "retry_after_ms",
    "rate_limit_reset",
    "policy_decision",
    "exception_type",
    "exception_message",
    "extra",
)
_NOTICE = ("code", "severity", "path", "context")
_STEP = ("tool", "args", "reason", "id", "type", "label")


def report_losses(env: Envelope, target: DialectMap, ctx: Context) -> None:
    """Report every canonical field set in ``env`` that ``target``'s field table cannot carry."""
    carried = target.carried
    name = target.name
    for f in _SCALARS:
        if getattr(env, f) is not None and f not in carried:
            ctx.dropped(f, name)
    for group, subs in _NESTED.items():
        obj = getattr(env, group)
        if obj is None:
            continue
        for s in subs:
            key = f"{group}.{s}"
            if getattr(obj, s) is not None and key not in carried:
                ctx.dropped(key, name)
    if env.problems:
        limit = target.shape.max_problems
        for i, p in enumerate(env.problems):
            if limit and i >= limit:
                ctx.report.add(
                    Kind.EXTRA_PROBLEM_DROPPED,
                    ctx.path("problems", i) if ctx.source and ctx.source.shape.max_problems != 1 else ctx.path("problems"),
                    f"{name} carries one error; error #{i + 1} ({p.code or p.category}) was left out",
                    name,
                )
                continue
            for s in _PROBLEM:
                if getattr(p, s) is not None and f"problem.{s}" not in carried:
                    ctx.dropped(f"problem.{s}", name, i if ctx.source and ctx.source.shape.max_problems != 1 else None)
    if env.warnings:
        if "warnings" not in carried:
            for i, _ in enumerate(env.warnings):
                ctx.dropped("warnings", name, None, f"warning #{i + 1}")
        else:
            for i, w in enumerate(env.warnings):
                for s in _NOTICE:
                    if getattr(w, s) is not None and f"warning.{s}" not in carried:
                        ctx.dropped(f"warning.{s}", name, i)
    if env.next_steps:
        if "next_steps" not in carried:
            for i, _ in enumerate(env.next_steps):
                ctx.dropped("next_steps", name, None, f"next step #{i + 1}")
        else:
            for i, st in enumerate(env.next_steps):
                for s in _STEP:
                    if getattr(st, s) is not None and f"next_step.{s}" not in carried:
                        ctx.dropped(f"next_step.{s}", name, i)
    for ex in env.extras:
        if ex.dialect != name:
            ctx.report.add(Kind.FIELD_DROPPED, ex.path, f"{ex.dialect} field has no place in {name}", name)


def read_problem(
    dmap: DialectMap,
    code: str | None,
    ctx: Context,
    where: str,
    retryable: bool | None = None,
    **fields: object,
) -> Problem:
    """A canonical problem for native ``code`` of ``dmap``'s dialect, hints from its row.

    An unknown code takes the documented fallback category and a ``code_unknown``
    diagnostic; the code itself is kept.
    """
    row = dmap.codes.get(code) if code is not None else None
    if row is None:
        category = dmap.default_category or ctx.mappings.unknown_category
        if code is not None:
            ctx.report.add(
                Kind.CODE_UNKNOWN,
                where,
                f"{dmap.name} code {code!r} is not in the tables; read as category {category!r}",
                dmap.name,
            )
        return Problem(category=category, code=code, domain=dmap.name, retryable=retryable, **fields)  # type: ignore[arg-type]
    return Problem(
        category=row.category,
        code=code,
        domain=dmap.name,
        retryable=row.retryable if retryable is None else retryable,
        origin=row.origin,
        upstream=row.upstream,
        aspect=row.aspect,
        partial=row.partial,
        **fields,  # type: ignore[arg-type]
    )


def write_code(p: Problem, dmap: DialectMap, ctx: Context, index: int | None = None) -> str:
    """The native code ``dmap``'s writer emits for ``p``; reports any change of code."""
    code = dmap.choose(p.category, p.code, p.domain, p.origin, p.upstream, p.aspect, p.partial)
    if code != p.code:
        where = ctx.path("problem.code", index)
        if p.code is None:
            ctx.report.add(
                Kind.SYNTHESIZED, where, f"{dmap.name} needs a code; chose {code!r} for category {p.category!r}", dmap.name
            )
        else:
            ctx.report.add(
                Kind.CODE_MAPPED,
                where,
                f"{p.domain or 'source'} code {p.code!r} has no exact {dmap.name} equivalent; wrote {code!r} ({p.category})",
                dmap.name,
            )
    row = dmap.codes.get(code)
    if row is not None and row.ext:
        ctx.report.add(
            Kind.CODE_EXTENSION,
            ctx.path("problem.code", index),
            f"{code!r} is outside {dmap.name}'s documented catalogue",
            dmap.name,
        )
    return code
