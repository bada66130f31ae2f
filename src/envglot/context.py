"""Per-conversion state handed to readers and writers, and the generic loss check."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, TypeVar

from msgspec import Struct

from .canonical import GROUPS, SCALARS, Envelope, NextStep, Notice, Problem
from .codes import Choice, planned
from .diagnostics import Diagnostic, Kind, Report, diagnostic
from .excerpt import quoted
from .tables import DialectMap, Mappings

__all__ = [
    "ConstantLoss",
    "Context",
    "FieldLosses",
    "constant_losses",
    "field_losses",
    "non_negative_ms",
    "report_losses",
    "whole_ms",
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

    __slots__ = ("choices", "compact", "mappings", "report", "source", "synth")

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
        self.choices: dict[tuple[int, str], tuple[Problem, Choice]] | None = None
        """The writer's :class:`~envglot.codes.Choice` per problem and target, derived once per
        conversion (:func:`~envglot.codes.planned`)."""

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

    def synthesized(self, target: DialectMap, field: str, index: int | None = None, /, **facts: object) -> None:
        """Report a value ``target`` requires and the source lacks (at the target's path); ``facts``
        fill the ``synthesized`` template."""
        if not self.report.collecting:
            return
        self.report.add(Kind.SYNTHESIZED, target.path(field, index) or f"$.{field}", target.name, **facts)

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
        self.synthesized(target, field, index, need=f"{target.name} requires {what}", value=quoted(value), how=how)
        return value

    def dropped(self, field: str, target: str, index: int | None = None, what: str | None = None) -> None:
        """Report that ``field`` has no place in ``target``."""
        if self.report.collecting:
            self.report.append(self.dropped_diagnostic(field, target, index, what))

    def dropped_diagnostic(
        self, field: str, target: str, index: int | None = None, what: str | None = None
    ) -> Diagnostic:
        """The diagnostic :meth:`dropped` reports (one frozen instance per source table and arguments)."""
        key = (self.source, field, target, index, what)
        d = _DROPPED.get(key)
        if d is None:
            d = diagnostic(Kind.FIELD_DROPPED, self.path(field, index), target, field=what or field)
            if len(_DROPPED) >= 4096:
                _DROPPED.clear()
            _DROPPED[key] = d
        return d


_K = TypeVar("_K")
_V = TypeVar("_V")

_DROPPED: dict[tuple[object, ...], Diagnostic] = {}
"""field_dropped diagnostics by (source table, field, target, index, what): they depend on
nothing else, and Diagnostics are frozen, so one instance serves every conversion."""


def _said(struct: type[Struct], own: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """The fields of a canonical Struct that may be unsaid (``None`` by default), in model
    order, but those ``own`` names (the loss check treats them on their own). Read from msgspec's
    ``__struct_defaults__`` (those of the trailing fields), which evaluates no annotation."""
    names, defaults = struct.__struct_fields__, struct.__struct_defaults__
    optional = names[len(names) - len(defaults) :]
    return tuple(n for n, d in zip(optional, defaults, strict=True) if d is None and n not in own)


_PROBLEM_OWN = frozenset({"message", "code", "domain", "type", "retryable", "origin", "upstream", "aspect"})
"""A problem's fields the loss check does not look for one by one: the message, and the code with
the category and hints it implies, travel as the target's own; ``type`` and ``retryable`` are
checked against what the target's code implies."""
_PROBLEM_FIRST = ("path", "details", "remediation")
_PROBLEM = (*_PROBLEM_FIRST, *(f for f in _said(Problem, _PROBLEM_OWN) if f not in _PROBLEM_FIRST))
"""A problem's other fields, in model order but for these three, reported first (the order its
diagnostics have always come in)."""
_NOTICE = _said(Notice)
_STEP = _said(NextStep)


class _LossPlan:
    """What one target cannot carry, computed once from its field table."""

    __slots__ = ("nested", "notice", "problem", "retryable", "scalars", "step")

    def __init__(self, target: DialectMap) -> None:
        carried = target.carried

        def pairs(prefix: str, attrs: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
            return tuple((a, f"{prefix}.{a}") for a in attrs if f"{prefix}.{a}" not in carried)

        self.scalars = tuple(f for f in SCALARS if f not in carried)
        self.nested = tuple((group, pairs(group, _said(struct))) for group, struct in GROUPS.items())
        self.problem = pairs("problem", _PROBLEM)
        self.notice = pairs("warning", _NOTICE)
        self.step = pairs("next_step", _STEP)
        self.retryable = "problem.retryable" not in carried and not target.types
        """The target has no place for a stated ``retryable`` (neither a field nor a category
        word that implies one, as response-v2's ``error_type``, whose writer reports itself)."""


_LOSS_PLANS: dict[tuple[frozenset[str], bool], _LossPlan] = {}
"""Loss plans by what they are computed from: a target's carried fields, and whether it has no
category words."""


def _kept(cache: dict[_K, _V], key: _K, make: Callable[[], _V]) -> _V:
    """``cache[key]``, made by ``make()`` the first time (at most 256 entries: full, it starts over)."""
    found = cache.get(key)
    if found is None:
        if len(cache) >= 256:
            cache.clear()
        found = cache[key] = make()
    return found


def _plan(target: DialectMap) -> _LossPlan:
    return _kept(_LOSS_PLANS, (target.carried, not target.types), lambda: _LossPlan(target))


def report_losses(env: Envelope, target: DialectMap, ctx: Context, fields: bool = True) -> None:
    """Report every canonical field set in ``env`` that ``target``'s field table cannot carry.

    ``fields=False``: all but the scalars, groups' members and the contract's constants, which the
    caller (a counting fused path, from :func:`field_losses` and :func:`constant_losses`) has checked itself."""
    if not ctx.report.collecting:
        return
    carried = target.carried
    plan = _plan(target)
    name = target.name
    if fields:
        losses = field_losses(target, ctx)
        append = ctx.report.append
        for f, d in losses.scalars:
            if getattr(env, f) is not None:
                append(d)
        for group, subs in losses.nested:
            obj = getattr(env, group)
            if obj is not None:
                for s, d in subs:
                    if getattr(obj, s) is not None:
                        append(d)
    if env.problems:
        limit = target.shape.max_problems
        for i, p in enumerate(env.problems):
            if limit and i >= limit:
                ctx.report.add(
                    Kind.EXTRA_PROBLEM_DROPPED,
                    ctx.path("problems", i)
                    if ctx.source and ctx.source.shape.max_problems != 1
                    else ctx.path("problems"),
                    name,
                    number=i + 1,
                    code=p.code or p.category,
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
                and not ((ch := planned(p, target, ctx)).type_implied and ch.returns)
            ):
                ctx.dropped("problem.type", name, at, f"{p.domain or 'source'} error type {quoted(p.type)}")
            if plan.retryable and p.retryable is not None and p.retryable != planned(p, target, ctx).there:
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
                    ctx.report.add(Kind.FIELD_DROPPED, apart + ".message", name, field=f"warning #{i + 1}")
            flag = ctx.source.path("warnings.status") if ctx.source is not None else None
            if flag is not None and env.ok and not env.problems:  # dotbot's status "warning" goes with them
                ctx.report.add(Kind.FIELD_DROPPED, flag, name, field="the status that says warnings")
        else:
            for i, w in enumerate(env.warnings):
                lost = [key for s, key in plan.notice if getattr(w, s) is not None]
                for key in lost:
                    ctx.dropped(key, name, i)
                if lost and "warning.message" in carried:
                    # the source's entry (dotbot's warning object, response-v2's warning_details
                    # item) goes with those parts: its message comes back as a plain warning
                    entry = ctx.path(lost[0], i).rpartition(".")[0]
                    ctx.report.add(
                        Kind.VALUE_COERCED,
                        entry + ".message",
                        name,
                        value=f"warning #{i + 1}",
                        change=f"keeps only its message in {name}",
                        because="converting back gives a plain warning",
                    )
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
                ctx.report.add(
                    Kind.VALUE_COERCED,
                    ctx.step_path(env.next_steps, i),
                    name,
                    value=what,
                    change=f"moves {flattened} place(s) on in {name}",
                    because="the steps before it become plain ones",
                )
            if "next_steps" not in carried:
                if where is not None:
                    ctx.report.add(Kind.FIELD_DROPPED, where, name, field=what)
                else:
                    ctx.dropped("next_steps", name, None, what)
                continue
            if where is not None and f"next_step.{st.kind}" not in carried:
                ctx.report.add(
                    Kind.FIELD_DROPPED,
                    where,
                    name,
                    field=f"the kind of {what}",
                    because="it can only be a plain next step there",
                )
                flattened += 1
            for s, key in plan.step:
                if getattr(st, s) is not None:
                    ctx.dropped(key, name, j)
    for ex in env.extras:
        if ex.dialect != name:
            ctx.report.add(Kind.FIELD_DROPPED, ex.path, name, field=f"{ex.dialect} field")
    if fields and ctx.source is not None and ctx.source.name != name:
        for loss in constant_losses(ctx.source, target):
            # dropped when one of its fields is set and none that is set has a place in the target
            if any(_value_at(env, f) is not None for f in loss.dropped) and not any(
                _value_at(env, f) is not None for f in loss.kept
            ):
                ctx.report.append(loss.diagnostic)


class FieldLosses(NamedTuple):
    """What the loss check reports of the scalars and groups' members from one source table
    into one target table: each field the target cannot carry, with its diagnostic."""

    scalars: tuple[tuple[str, Diagnostic], ...]
    nested: tuple[tuple[str, tuple[tuple[str, Diagnostic], ...]], ...]
    """Each group with a member the target cannot carry: ``(member, diagnostic)`` pairs."""
    by_field: dict[str, Diagnostic]
    """:attr:`scalars` by field."""
    by_group: dict[str, tuple[tuple[str, Diagnostic], ...]]
    """:attr:`nested` by group."""
    constants: bool
    """The source's contract has constants the check may report (it reads any field then)."""


def field_losses(target: DialectMap, ctx: Context) -> FieldLosses:
    """The :class:`FieldLosses` from ``ctx``'s source table into ``target`` (computed once per pair of tables)."""
    found = _FIELD_LOSSES.get((ctx.source, target))  # per document on a fused path: no closure made
    if found is not None:
        return found

    def make() -> FieldLosses:
        name = target.name
        plan = _plan(target)
        scalars = tuple((f, ctx.dropped_diagnostic(f, name)) for f in plan.scalars)
        nested = tuple(
            (group, tuple((s, ctx.dropped_diagnostic(k, name)) for s, k in subs)) for group, subs in plan.nested if subs
        )
        constants = ctx.source is not None and ctx.source.name != name and bool(_constants(ctx.source))
        return FieldLosses(scalars, nested, dict(scalars), dict(nested), constants)

    return _kept(_FIELD_LOSSES, (ctx.source, target), make)


_FIELD_LOSSES: dict[tuple[DialectMap | None, DialectMap], FieldLosses] = {}
""":func:`field_losses` by source and target table (tables never change once built)."""


def _constants(source: DialectMap) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """Each constant member of an optional object of ``source``'s contract
    (:attr:`~envglot.tables.DialectMap.constants`), the object it belongs to, and the canonical
    fields (not a problem's) the source keeps in that object: the constant is there only because
    one of them is, and goes when none of them can. Computed once per table."""
    return _kept(_CONSTANTS, source, lambda: _constants_of(source))


_CONSTANTS: dict[DialectMap, tuple[tuple[str, str, tuple[str, ...]], ...]] = {}
""":func:`_constants` by source table (a table never changes once built)."""


class ConstantLoss(NamedTuple):
    """One constant of :func:`_constants` for one target: the fields it goes with (each as its
    attribute names), split by whether the target carries them, and its diagnostic."""

    kept: tuple[tuple[str, ...], ...]
    dropped: tuple[tuple[str, ...], ...]
    diagnostic: Diagnostic


def constant_losses(source: DialectMap, target: DialectMap) -> tuple[ConstantLoss, ...]:
    """:func:`_constants` of ``source``: the fields each goes with, and the diagnostic it is
    dropped with in ``target`` (frozen, so built once per pair of tables, not per document)."""

    def make() -> tuple[ConstantLoss, ...]:
        carried = target.carried
        return tuple(
            ConstantLoss(
                tuple(tuple(f.split(".")) for f in inside if f in carried),
                tuple(tuple(f.split(".")) for f in inside if f not in carried),
                diagnostic(
                    Kind.FIELD_DROPPED,
                    path,
                    target.name,
                    field=f"{source.name} {path[2:]} (the contract's constant)",
                    because=f"it goes with {parent[2:]}, and none of {parent[2:]}'s values has a place there",
                ),
            )
            for path, parent, inside in _constants(source)
        )

    return _kept(_CONSTANT_LOSSES, (source, target), make)


_CONSTANT_LOSSES: dict[tuple[DialectMap, DialectMap], tuple[ConstantLoss, ...]] = {}
""":func:`constant_losses` by (source table, target table)."""


def _constants_of(source: DialectMap) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    out = []
    for path in sorted(source.constants):
        parent = path.rpartition(".")[0]
        inside = tuple(
            f for f, p in source.fields.items() if not f.startswith("problem") and p != "$" and _within(p, parent)
        )
        if parent != "$" and inside:
            out.append((path, parent, inside))
    return tuple(out)


def _value_at(env: Envelope, field: tuple[str, ...]) -> object:
    """The value of canonical ``field`` by its attribute names (``("pagination", "count")``) in ``env``, or ``None``."""
    obj: object = env
    for part in field:
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _within(path: str, parent: str) -> bool:
    """True if JSON path ``path`` is ``parent`` or lies inside it."""
    return path == parent or path.startswith((parent + ".", parent + "["))


def non_negative_ms(value: int | float, target: DialectMap, ctx: Context, what: str) -> int | float:
    """A duration a target can carry: a negative one (a clock glitch upstream) is written as 0, reported."""
    if value >= 0:
        return value
    ctx.report.add(
        Kind.VALUE_COERCED,
        ctx.path("duration_ms"),
        target.name,
        value=f"{target.name} {what} {value}",
        change="written as 0",
        because="it cannot be negative",
    )
    return 0


def whole_ms(value: int | float | None, target: DialectMap, ctx: Context, what: str) -> int:
    """``duration_ms`` for a target that takes whole milliseconds: synthesized 0, or rounded (reported)."""
    if value is None:
        return ctx.synth_value(target, "duration_ms", what)  # type: ignore[return-value]
    if not value >= 0:  # non_negative_ms asked only when its test fails (NaN too): a call less
        value = non_negative_ms(value, target, ctx, what)
    if isinstance(value, int):
        return value
    if ctx.report.collecting:
        ctx.report.add(
            Kind.VALUE_COERCED,
            ctx.path("duration_ms"),
            target.name,
            value=f"{target.name} {what} {value}",
            change="rounded",
            because="it is a whole number of milliseconds",
        )
    return round(value)
