"""Per-conversion state handed to readers and writers, and the generic loss check."""

from __future__ import annotations

import functools

import msgspec
from msgspec import Raw

from .canonical import Envelope, NextStep, Problem
from .diagnostics import Diagnostic, Kind, Report
from .errors import EnvglotError
from .excerpt import quoted
from .mappings import DialectMap, Mappings, type_for

__all__ = [
    "Context",
    "carried_meaning",
    "carry_meaning",
    "code_returns",
    "missing_problem",
    "non_negative_ms",
    "problem_message",
    "read_problem",
    "report_losses",
    "respelled",
    "retryable_implied",
    "retryable_there",
    "type_implied",
    "whole_ms",
    "write_code",
]


class Context:
    """What a reader or writer needs besides the document.

    Attributes:
        mappings: the compiled tables (bundled plus overlays).
        report: where diagnostics go.
        source: the source dialect's table (for source JSON paths in diagnostics).
        synth: caller-supplied values for fields a target requires (``tool``, ``request_id``,
            ``timestamp``, ...); see ``docs/python-api.md``.
    """

    __slots__ = ("compact", "mappings", "report", "source", "synth")

    def __init__(
        self,
        mappings: Mappings,
        report: Report,
        source: DialectMap | None = None,
        synth: dict[str, object] | None = None,
        compact: bool = False,
    ) -> None:
        self.mappings = mappings
        self.report = report
        self.source = source
        self.synth = synth or {}
        self.compact = compact
        """True when the source document was minified before reading (its Raw values carry no
        insignificant whitespace), so a writer need not minify its output again."""

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

    def failure_payload_path(self) -> str:
        """JSON path of a failure's payload in the source document: its own place when the source
        keeps it apart from a success's (result's ``error_data``: a ``failure.payload`` row)."""
        p = self.source.path("failure.payload") if self.source is not None else None
        return p if p is not None else self.path("payload")

    def step_path(self, steps: tuple[NextStep, ...], i: int) -> str:
        """JSON path of next step ``i`` of ``steps`` in the source document.

        A kind the source keeps in a place of its own is there (dotbot's ``$.intent``); the
        other steps are entries of its shared list (``$.actions[j]``, ``j`` counted among them);
        without a source table, ``$.next_steps[i]``.
        """
        src = self.source
        if src is None:
            return f"$.next_steps[{i}]"
        kind = steps[i].kind
        own = src.path(f"next_step.{kind}", sum(1 for st in steps[:i] if st.kind == kind))
        if own is not None:
            return own
        j = sum(1 for st in steps[:i] if src.path(f"next_step.{st.kind}") is None)
        return f"{self.path('next_steps')}[{j}]"

    def synthesized(self, target: DialectMap, field: str, message: str, index: int | None = None) -> None:
        """Report a value ``target`` requires and the source lacks (at the target's path)."""
        if not self.report.collecting:
            return
        self.report.add(Kind.SYNTHESIZED, target.path(field, index) or f"$.{field}", message, target.name)

    def synth_value(
        self, target: DialectMap, field: str, what: str, rule: object = None, index: int | None = None
    ) -> object:
        """The caller's ``context`` value for ``field``, else the rule value; reported.

        The rule value is ``rule`` when given (a computed rule), else the target table's
        ``[synthesize]`` entry for ``field``.
        """
        value = self.synth.get(field, target.synthesize[field] if rule is None else rule)
        if not self.report.collecting:
            return value
        how = "from the caller" if field in self.synth else "by rule"
        self.synthesized(target, field, f"{target.name} requires {what}; wrote {quoted(value)} ({how})", index)
        return value

    def dropped(self, field: str, target: str, index: int | None = None, what: str | None = None) -> None:
        """Report that ``field`` has no place in ``target``."""
        if not self.report.collecting:
            return
        key = (self.source, field, target, index, what)
        d = _DROPPED.get(key)
        if d is None:
            d = Diagnostic(
                kind=Kind.FIELD_DROPPED,
                path=self.path(field, index),
                message=f"{what or field} has no place in {target}",
                dialect=target,
            )
            if len(_DROPPED) >= 4096:
                _DROPPED.clear()
            _DROPPED[key] = d
        self.report.append(d)


_DROPPED: dict[tuple[object, ...], Diagnostic] = {}
"""field_dropped diagnostics by (source table, field, target, index, what): they depend on
nothing else, and Diagnostics are frozen, so one instance serves every conversion."""


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
    "pagination": ("cursor", "has_more", "total", "page_size", "count", "offset", "limit", "extra"),
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


class _LossPlan:
    """What one target cannot carry, computed once from its field table."""

    __slots__ = ("nested", "notice", "problem", "retryable", "scalars", "step")

    def __init__(self, target: DialectMap) -> None:
        carried = target.carried

        def pairs(prefix: str, attrs: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
            return tuple((a, f"{prefix}.{a}") for a in attrs if f"{prefix}.{a}" not in carried)

        self.scalars = tuple(f for f in _SCALARS if f not in carried)
        self.nested = tuple((group, pairs(group, subs)) for group, subs in _NESTED.items())
        self.problem = pairs("problem", _PROBLEM)
        self.notice = pairs("warning", _NOTICE)
        self.step = pairs("next_step", _STEP)
        self.retryable = "problem.retryable" not in carried and not target.types
        """The target has no place for a stated ``retryable`` (neither a field nor a category
        word that implies one, as response-v2's ``error_type``, whose writer reports itself)."""


def report_losses(env: Envelope, target: DialectMap, ctx: Context) -> None:
    """Report every canonical field set in ``env`` that ``target``'s field table cannot carry."""
    if not ctx.report.collecting:
        return
    plan = target.loss_plan
    if plan is None:
        plan = target.loss_plan = _LossPlan(target)
    assert isinstance(plan, _LossPlan)
    carried = target.carried
    name = target.name
    for f in plan.scalars:
        if getattr(env, f) is not None:
            ctx.dropped(f, name)
    for group, subs in plan.nested:
        obj = getattr(env, group)
        if obj is None:
            continue
        for s, key in subs:
            if getattr(obj, s) is not None:
                ctx.dropped(key, name)
    if env.problems:
        limit = target.shape.max_problems
        for i, p in enumerate(env.problems):
            if limit and i >= limit:
                ctx.report.add(
                    Kind.EXTRA_PROBLEM_DROPPED,
                    ctx.path("problems", i)
                    if ctx.source and ctx.source.shape.max_problems != 1
                    else ctx.path("problems"),
                    f"{name} carries one error; error #{i + 1} ({p.code or p.category}) was left out",
                    name,
                )
                continue
            at = i if ctx.source and ctx.source.shape.max_problems != 1 else None
            for s, key in plan.problem:
                if getattr(p, s) is not None:
                    ctx.dropped(key, name, at)
            if (
                p.type is not None
                # a target with category words reports a replaced word itself; another one's
                # type place (problem-json's type URI) holds only its own dialect's types
                and ("problem.type" not in carried or (p.domain != name and not target.types))
                and not (type_implied(p, ctx.mappings) and code_returns(p, target, ctx.mappings))
            ):
                ctx.dropped("problem.type", name, at, f"{p.domain or 'source'} error type {quoted(p.type)}")
            if plan.retryable and p.retryable is not None and p.retryable != retryable_there(p, target, ctx.mappings):
                said = f"the {p.domain or 'source'} error's stated retryable={str(p.retryable).lower()}"
                ctx.dropped("problem.retryable", name, at, said)
    if env.warnings:
        if "warnings" not in carried:
            whole = ctx.path("warnings")
            for i, w in enumerate(env.warnings):
                ctx.dropped("warnings", name, None, f"warning #{i + 1}")
                apart = None  # parts the source keeps elsewhere (response-v2 warning_details), message too
                for s in _NOTICE:
                    part = ctx.path(f"warning.{s}", i)
                    if getattr(w, s) is not None and not _within(part, whole):
                        ctx.dropped(f"warning.{s}", name, i)
                        apart = part.rpartition(".")[0]
                if apart is not None:
                    said = f"warning #{i + 1} has no place in {name}"
                    ctx.report.add(Kind.FIELD_DROPPED, apart + ".message", said, name)
            flag = ctx.source.path("warnings.status") if ctx.source is not None else None
            if flag is not None and env.ok and not env.problems:  # dotbot's status "warning" goes with them
                ctx.report.add(Kind.FIELD_DROPPED, flag, f"the status that says warnings has no place in {name}", name)
        else:
            for i, w in enumerate(env.warnings):
                lost = [key for s, key in plan.notice if getattr(w, s) is not None]
                for key in lost:
                    ctx.dropped(key, name, i)
                if lost and "warning.message" in carried:
                    # the source's entry (dotbot's warning object, response-v2's warning_details
                    # item) goes with those parts: its message comes back as a plain warning
                    entry = ctx.path(lost[0], i).rpartition(".")[0]
                    said = f"warning #{i + 1} keeps only its message in {name}; converting back gives a plain warning"
                    ctx.report.add(Kind.VALUE_COERCED, entry + ".message", said, name)
    if env.next_steps:
        # A kind the source keeps in a place of its own has a ``next_step.<kind>`` row (dotbot's
        # intent); the other steps share the ``next_steps`` list, indexed among themselves.
        seen: dict[str, int] = {}
        flattened = 0  # steps of a kind with a place of its own written as plain steps before this one
        for i, st in enumerate(env.next_steps):
            own = ctx.source is not None and ctx.source.path(f"next_step.{st.kind}") is not None
            key = st.kind if own else ""
            j = seen[key] = seen.get(key, -1) + 1
            where = ctx.source.path(f"next_step.{st.kind}", j) if own and ctx.source is not None else None
            what = f"next step #{i + 1} ({st.kind})"
            if not own and flattened and "next_steps" in carried:
                # converting back, the flattened steps come first in the shared list: this one moves on
                said = f"{what} moves {flattened} place(s) on in {name}: the steps before it become plain ones"
                ctx.report.add(Kind.VALUE_COERCED, ctx.step_path(env.next_steps, i), said, name)
            if "next_steps" not in carried:
                if where is not None:
                    ctx.report.add(Kind.FIELD_DROPPED, where, f"{what} has no place in {name}", name)
                else:
                    ctx.dropped("next_steps", name, None, what)
                continue
            if where is not None and f"next_step.{st.kind}" not in carried:
                said = f"{what}: {name} has no place for its kind; it can only be a plain next step there"
                ctx.report.add(Kind.FIELD_DROPPED, where, said, name)
                flattened += 1
            for s, key in plan.step:
                if getattr(st, s) is not None:
                    ctx.dropped(key, name, j)
    for ex in env.extras:
        if ex.dialect != name:
            ctx.report.add(Kind.FIELD_DROPPED, ex.path, f"{ex.dialect} field has no place in {name}", name)
    if ctx.source is not None and ctx.source.name != name:
        for path, parent, fields in _constants(ctx.source):
            present = [f for f in fields if _field_value(env, f) is not None]
            if present and not any(f in carried for f in present):
                said = (
                    f"{ctx.source.name} {path[2:]} (the contract's constant) goes with {parent[2:]}, "
                    f"and none of {parent[2:]}'s values has a place in {name}"
                )
                ctx.report.add(Kind.FIELD_DROPPED, path, said, name)


@functools.cache
def _constants(source: DialectMap) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """Each constant member of an optional object of ``source``'s contract
    (:func:`~envglot.checker.optional_constants`), the
    object it belongs to, and the canonical fields (not a problem's) the source keeps in that object:
    the constant is there only because one of them is, and goes when none of them can."""
    from .checker import optional_constants
    from .dialect import get_dialect

    try:
        wire = get_dialect(source.name).wire
    except EnvglotError:
        return ()
    out = []
    for path in sorted(optional_constants(wire)) if wire is not None else ():
        parent = path.rpartition(".")[0]
        inside = tuple(
            f for f, p in source.fields.items() if not f.startswith("problem") and p != "$" and _within(p, parent)
        )
        if parent != "$" and inside:
            out.append((path, parent, inside))
    return tuple(out)


def _field_value(env: Envelope, field: str) -> object:
    """The value of canonical ``field`` (``duration_ms``, ``pagination.count``) in ``env``, or ``None``."""
    obj: object = env
    for part in field.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def retryable_there(p: Problem, target: DialectMap, m: Mappings) -> bool | None:
    """The ``retryable`` a reader of ``target`` takes from the code its writer chooses for ``p``
    (that code row's own value); when that row states none, what ``p``'s own code implies in
    its dialect (:func:`retryable_implied`) if converting back gives that code again, else
    ``None`` (nothing restores it)."""
    code = target.choose(p.category, p.code, p.domain, p.origin, p.upstream, p.aspect, p.partial, p.retryable)
    row = target.codes.get(code)
    if row is not None and row.retryable is not None:
        return row.retryable
    return retryable_implied(p, m) if code_returns(p, target, m) else None


def code_returns(p: Problem, target: DialectMap, m: Mappings) -> bool:
    """True if converting ``p`` to ``target`` and back gives its own code again (what its code
    implies is then restored by the source's reader)."""
    code = target.choose(p.category, p.code, p.domain, p.origin, p.upstream, p.aspect, p.partial, p.retryable)
    row = target.codes.get(code)
    src = m.dialects.get(p.domain) if p.domain is not None else None
    if row is None or src is None or not src.shape.writable or p.code not in src.codes:
        return True  # nothing to go back to: the code's own reading decides
    back = src.choose(row.category, code, target.name, row.origin, row.upstream, row.aspect, row.partial)
    return back == p.code


def _within(path: str, parent: str) -> bool:
    """True if JSON path ``path`` is ``parent`` or lies inside it."""
    return path == parent or path.startswith((parent + ".", parent + "["))


def type_implied(p: Problem, m: Mappings) -> bool:
    """True if ``p.type`` is the type its own code implies (a reader restores it from the code)."""
    dmap = m.dialects.get(p.domain) if p.domain is not None else None
    row = dmap.codes.get(p.code) if dmap is not None and p.code is not None else None
    return row is not None and row.type == p.type


def retryable_implied(p: Problem, m: Mappings) -> bool | None:
    """What ``p``'s own code row (else its own category word) states for ``retryable`` in the
    dialect that minted it; ``None`` when neither row states one (a category's default is no
    statement: the target's own code may imply another).

    A stated ``retryable`` equal to this is restored by a reader of the source from the code
    alone; any other value is information of its own.
    """
    dmap = m.dialects.get(p.domain) if p.domain is not None else None
    if dmap is None:
        return None
    row = dmap.codes.get(p.code) if p.code is not None else None
    if row is not None and row.retryable is not None:
        return row.retryable
    word = dmap.types.get(p.type) if p.type is not None else None
    return word.retryable if word is not None else None


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
                f"{dmap.name} code {quoted(code)} is not in the tables; read as category {category!r}",
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


def respelled(p: Problem, code: str, dmap: DialectMap, m: Mappings) -> bool:
    """True if writing ``p`` (a known code of its own dialect) as ``dmap``'s ``code`` is an exact,
    table-reversible re-spelling: ``code`` reads as the same category and retryability, and the
    source dialect's writer turns it back into ``p.code``."""
    src = m.dialects.get(p.domain) if p.domain is not None else None
    row = dmap.codes.get(code)
    if src is None or not src.shape.writable or p.code is None or p.code not in src.codes or row is None:
        return False
    there, here = dmap.plan(code), src.plan(p.code)
    if there is None or here is None or (there.category, there.retryable) != (here.category, here.retryable):
        return False
    read = row.retryable  # what a reader of the target takes: the row's, else its category word's
    if read is None and dmap.types:
        word = row.type or type_for(m, dmap.name, row.category, row.origin, row.upstream, row.aspect, row.partial)
        read = dmap.types[word].retryable if word in dmap.types else None
    if read is not None and read != here.retryable:
        return False
    back = src.choose(row.category, code, dmap.name, row.origin, row.upstream, row.aspect, row.partial, read)
    return back == p.code


def write_code(p: Problem, dmap: DialectMap, ctx: Context, index: int | None = None) -> str:
    """The native code ``dmap``'s writer emits for ``p``; reports any change of code.

    A code the tables do not know goes back verbatim to the dialect that minted it,
    unless that dialect's vocabulary is a closed enum.
    """
    if p.code is not None and p.domain == dmap.name and p.code not in dmap.codes and not dmap.shape.closed:
        return p.code
    code = dmap.choose(p.category, p.code, p.domain, p.origin, p.upstream, p.aspect, p.partial, p.retryable)
    if not ctx.report.collecting:
        return code
    if code != p.code:
        where = ctx.path("problem.code", index)
        row = dmap.codes.get(code)
        if p.code is None:
            chose = f"chose {code!r} for category {p.category!r}"
            if row is not None and row.category != p.category:
                chose = f"chose {code!r}, which reads as {row.category!r}, not {p.category!r}"
            ctx.synthesized(dmap, "problem.code", f"{dmap.name} needs a code; {chose}", index)
        elif respelled(p, code, dmap, ctx.mappings):
            said = f"{p.domain} code {quoted(p.code)} written as {dmap.name} {quoted(code)}, which reads back as it"
            ctx.report.add(Kind.CODE_RESPELLED, where, said, dmap.name)
        else:
            what = f"wrote {quoted(code)} ({p.category})"
            if row is not None and row.category != p.category:
                kept = "; the category travels in details" if "problem.category" in dmap.carried else ""
                what = f"wrote {quoted(code)}, which reads as {row.category!r}, not {p.category!r}{kept}"
            ctx.report.add(
                Kind.CODE_MAPPED,
                where,
                f"{p.domain or 'source'} code {quoted(p.code)} has no exact {dmap.name} equivalent; {what}",
                dmap.name,
            )
            _implied_changes(p, code, dmap, ctx, where)
    row = dmap.codes.get(code)
    if row is not None and row.ext:
        ctx.report.add(
            Kind.CODE_EXTENSION,
            ctx.path("problem.code", index),
            f"{code!r} is outside {dmap.name}'s documented catalogue",
            dmap.name,
        )
    return code


def _implied_changes(p: Problem, code: str, dmap: DialectMap, ctx: Context, where: str) -> None:
    """Report each member the source derives from its code (its table's ``code_implies.*`` rows:
    problem-json's type, title, status) when ``code``, written for ``p`` in ``dmap``, does not
    come back as ``p.code``: converting back derives them from another code."""
    src = ctx.source
    if src is None or src.name != p.domain or p.code is None:
        return
    implied = [path for f, path in src.fields.items() if f.startswith("code_implies.")]
    if not implied:
        return
    row = dmap.codes.get(code)
    if row is not None:
        travels = row.category != p.category and "problem.category" in dmap.carried
        category = p.category if travels else row.category
        hints = (None, None, None, False) if travels else (row.origin, row.upstream, row.aspect, row.partial)
        if src.choose(category, code, dmap.name, *hints) == p.code:
            return
    base = where.rpartition(".")[0]
    for path in implied:
        member = path.rpartition(".")[2]
        said = f"{src.name} {member} follows its code {quoted(p.code)}, which does not come back from {dmap.name}"
        ctx.report.add(Kind.CODE_MAPPED, f"{base}.{member}", said, dmap.name)


def problem_message(
    p: Problem, summary: str | None, ctx: Context, target: DialectMap, index: int | None = None, fallback: str = ""
) -> str:
    """The error message a writer that requires one emits for ``p``.

    The problem's own message, else the envelope's summary, else ``fallback``; a
    substitute is reported as synthesized.
    """
    if p.message:
        return p.message
    msg = summary or fallback
    if msg != p.message and ctx.report.collecting:
        ctx.synthesized(
            target, "problem.message", f"{target.name} requires an error message; wrote {quoted(msg)}", index
        )
    return msg


def missing_problem(summary: str | None, ctx: Context, target: DialectMap) -> Problem:
    """The problem a writer emits for a failure that names none (fallback category), reported."""
    category = ctx.mappings.unknown_category
    if ctx.report.collecting:
        ctx.synthesized(target, "problems", f"failure without an error object; wrote category {category!r}")
    return Problem(category=category, message=summary or "failed")


def non_negative_ms(value: int | float, target: DialectMap, ctx: Context, what: str) -> int | float:
    """A duration a target can carry: a negative one (a clock glitch upstream) is written as 0, reported."""
    if value >= 0:
        return value
    ctx.report.add(
        Kind.VALUE_COERCED,
        ctx.path("duration_ms"),
        f"{target.name} {what} cannot be negative; {value} written as 0",
        target.name,
    )
    return 0


def whole_ms(value: int | float | None, target: DialectMap, ctx: Context, what: str) -> int:
    """``duration_ms`` for a target that takes whole milliseconds: synthesized 0, or rounded (reported)."""
    if value is None:
        return ctx.synth_value(target, "duration_ms", what)  # type: ignore[return-value]
    value = non_negative_ms(value, target, ctx, what)
    if isinstance(value, int):
        return value
    if ctx.report.collecting:
        ctx.report.add(
            Kind.VALUE_COERCED,
            ctx.path("duration_ms"),
            f"{target.name} {what} is a whole number of milliseconds; {value} rounded",
            target.name,
        )
    return round(value)


_RAW_DICT = msgspec.json.Decoder(dict[str, Raw])
_ENC = msgspec.json.Encoder()
_TRUE, _FALSE = Raw(b"true"), Raw(b"false")


def _meaning_keys(dmap: DialectMap) -> tuple[str | None, str | None]:
    """The members of the error's ``details`` object where ``dmap``'s table keeps a category and a
    ``retryable`` its codes cannot say (``problem.category`` / ``problem.retryable`` rows whose
    path lies inside ``problem.details``); ``None`` for a place the table does not declare."""
    base = dmap.fields.get("problem.details")
    if base is None:
        return None, None
    keys: list[str | None] = []
    for field in ("problem.category", "problem.retryable"):
        p = dmap.fields.get(field)
        keys.append(p[len(base) + 1 :] if p is not None and p.startswith(base + ".") else None)
    return keys[0], keys[1]


def _read_retryable(p: Problem, code: str, dmap: DialectMap) -> bool | None:
    """The ``retryable`` a reader of ``dmap`` takes from ``code``: its row's, else (a dialect
    with category words) the word written beside it."""
    row = dmap.codes.get(code)
    if row is not None and row.retryable is not None:
        return row.retryable
    if not dmap.types or dmap.tables is None:
        return None
    if p.domain == dmap.name and p.code == code and p.type is not None:
        word = p.type
    elif row is not None and row.type is not None:
        word = row.type
    else:
        word = type_for(dmap.tables, dmap.name, p.category, p.origin, p.upstream, p.aspect, p.partial)
    trow = dmap.types.get(word)
    return trow.retryable if trow is not None else None


def _way_back(p: Problem, dmap: DialectMap) -> Mappings | None:
    """``dmap``'s tables if ``p`` is a known code of a writable dialect (a way back exists to
    restore it), else ``None``."""
    m = dmap.tables
    src = m.dialects.get(p.domain) if m is not None and p.domain is not None else None
    return m if src is not None and src.shape.writable and p.code in src.codes else None


def carry_meaning(p: Problem, code: str, details: Raw | None, dmap: DialectMap) -> Raw | None:
    """``details`` with the problem's category (and stated ``retryable``) added where ``code``,
    the code ``dmap``'s writer chose, reads as another category or implies another
    ``retryable`` (an unstated one is the category's default):
    the target's extension place (its table's ``problem.category`` row) carries what its codes
    cannot, and :func:`carried_meaning` reads it back. ``details`` unchanged otherwise, or when
    it is no object (the writer wraps it first)."""
    cat_key, retry_key = _meaning_keys(dmap)
    if cat_key is None:
        return details
    plan = dmap.plan(code)
    if plan is None:  # an unknown code written back verbatim to its own dialect: read back as it was read
        return details
    read_as = plan.category
    implied = _read_retryable(p, code, dmap)
    add: dict[str, Raw] = {}
    if read_as != p.category:
        add[cat_key] = Raw(_ENC.encode(p.category))
        if p.retryable is not None and retry_key is not None:
            add[retry_key] = _TRUE if p.retryable else _FALSE
    elif retry_key is None:
        pass
    elif p.retryable is not None:
        if p.retryable != implied:
            add[retry_key] = _TRUE if p.retryable else _FALSE
    elif implied is not None and (m := _way_back(p, dmap)) is not None and implied != m.default_retryable(p.category):
        # an unstated retryable is the category's default; a code whose row implies another
        # would flip it on the way back (response-v2 INTERNAL_ERROR is retryable, internal is not)
        add[retry_key] = _FALSE if implied else _TRUE
    if not add:
        return details
    if details is None or details == Raw(b"null"):
        return Raw(_ENC.encode(add))
    if memoryview(details)[:1] != b"{":
        return details
    return Raw(_ENC.encode({**_RAW_DICT.decode(details), **add}))


def carried_meaning(p: Problem, dmap: DialectMap, ctx: Context) -> Problem:
    """``p`` with the category and ``retryable`` its ``details`` carry (:func:`carry_meaning`)
    taken out of them: a category the code could not say wins over the code's, and the code's
    hints (which describe another category) are dropped."""
    cat_key, retry_key = _meaning_keys(dmap)
    d = p.details
    if cat_key is None or d is None or memoryview(d)[:1] != b"{":
        return p
    members = _RAW_DICT.decode(d)
    cat_raw, retry_raw = members.get(cat_key), members.get(retry_key) if retry_key else None
    category = msgspec.json.decode(cat_raw) if cat_raw is not None and memoryview(cat_raw)[:1] == b'"' else None
    if category not in ctx.mappings.categories:
        category = None
    retryable = None if retry_raw is None else {bytes(_TRUE): True, bytes(_FALSE): False}.get(bytes(retry_raw))
    if category is None and retryable is None:
        return p
    rest = {
        k: v for k, v in members.items() if (k != cat_key or category is None) and (k != retry_key or retryable is None)
    }
    details = Raw(_ENC.encode(rest)) if rest else None
    if category is None:
        return msgspec.structs.replace(p, retryable=retryable, details=details)
    return msgspec.structs.replace(
        p,
        category=category,
        retryable=retryable,
        details=details,
        origin=None,
        upstream=None,
        aspect=None,
        partial=False,
    )
