"""Code and problem helpers readers and writers share: a native code read into a
:class:`~envglot.canonical.Problem`, the code a writer chooses, and what a code implies
(category, retryability, type) across dialects.

Over 500 lines: the read side and the write side (a ``Choice`` per problem and target) share
one ``CodePlan`` and stay together, so that a code is looked up once per side."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Literal, NamedTuple

import msgspec
from msgspec import Raw

from .canonical import Problem
from .diagnostics import Counting, Kind
from .excerpt import quoted
from .tables import CodePlan, CodeRow, DialectMap, Mappings, TypeRow, type_for

if TYPE_CHECKING:
    from .context import Context

__all__ = [
    "Choice",
    "FailurePlan",
    "FailurePlans",
    "WireFailure",
    "carried_meaning",
    "carries_meaning",
    "carry_meaning",
    "choice",
    "details_object",
    "failure_plans",
    "meaning_to_carry",
    "missing_problem",
    "planned",
    "problem_message",
    "problem_of",
    "read_planned",
    "read_problem",
    "respelled",
    "retryable_implied",
    "row_problem",
    "stated_word",
    "with_carried",
    "worded_problem",
    "write_code",
    "write_plan",
    "written_message",
]


def _chosen(p: Problem, target: DialectMap) -> str:
    """The code ``target``'s writer-choice rows give ``p`` (:meth:`DialectMap.choose`)."""
    return target.choose(p.category, p.code, p.domain, p.origin, p.upstream, p.aspect, p.partial, p.retryable)


def _there(p: Problem, code: str, target: DialectMap, m: Mappings) -> bool | None:
    """The ``retryable`` a reader of ``target`` takes from ``code``, the code its writer-choice
    rows give ``p`` (that row's own value); when that row states none, what ``p``'s own code
    implies in its dialect (:func:`retryable_implied`) if converting back gives that code again,
    else ``None`` (nothing restores it)."""
    row = target.codes.get(code)
    if row is not None and row.retryable is not None:
        return row.retryable
    return retryable_implied(p, m) if _returns(p, code, target, m) else None


def _returns(p: Problem, code: str, target: DialectMap, m: Mappings) -> bool:
    """True if converting ``p``, written as ``code`` in ``target``, back gives its own code again
    (what its code implies is then restored by the source's reader)."""
    row = target.codes.get(code)
    src = m.dialects.get(p.domain) if p.domain is not None else None
    if row is None or src is None or not src.shape.writable or p.code not in src.codes:
        return True  # nothing to go back to: the code's own reading decides
    back = src.choose(row.category, code, target.name, row.origin, row.upstream, row.aspect, row.partial)
    return back == p.code


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
    contradiction: str | None = None,
    **fields: object,
) -> Problem:
    """A canonical problem for native ``code`` of ``dmap``'s dialect (:func:`read_planned` with
    the code's plan, the read side's one lookup)."""
    plan = dmap.plan(code) if code is not None else None
    return _read(dmap, code, plan, ctx, where, retryable, contradiction, fields)


def read_planned(
    dmap: DialectMap,
    code: str | None,
    plan: CodePlan | None,
    ctx: Context,
    where: str,
    retryable: bool | None = None,
    contradiction: str | None = None,
    **fields: object,
) -> Problem:
    """A canonical problem for native ``code`` of ``dmap``'s dialect, hints from its ``plan``'s
    row (a reader that reads more of the plan looks it up once and passes it here).

    An unknown code takes the documented fallback category and a ``code_unknown``
    diagnostic; the code itself is kept. A stated ``retryable`` its row contradicts is kept,
    reported (``status_mismatch``) at ``contradiction`` when given (errorcode's ``retryable``).
    """
    return _read(dmap, code, plan, ctx, where, retryable, contradiction, fields)


def _read(
    dmap: DialectMap,
    code: str | None,
    plan: CodePlan | None,
    ctx: Context,
    where: str,
    retryable: bool | None,
    contradiction: str | None,
    fields: dict[str, object],
) -> Problem:
    """:func:`read_planned` with ``fields`` as one dict (a reader's call packs them once)."""
    row = plan.row if plan is not None else None
    if row is None:
        category = dmap.default_category or ctx.mappings.unknown_category
        if code is not None:
            ctx.report.add(
                Kind.CODE_UNKNOWN,
                where,
                dmap.name,
                member="code",
                value=quoted(code),
                category=repr(category),
            )
        return Problem(category=category, code=code, domain=dmap.name, retryable=retryable, **fields)  # type: ignore[arg-type]
    if contradiction is not None and retryable is not None and row.retryable not in (None, retryable):
        ctx.report.add(
            Kind.STATUS_MISMATCH,
            contradiction,
            dmap.name,
            conflict=f"retryable={str(retryable).lower()} contradicts the code {quoted(code)}",
            resolved="kept as stated",
        )
    return _of(row, code, dmap.name, retryable, fields)


def problem_of(
    row: CodeRow | TypeRow, code: str | None, domain: str, retryable: bool | None = None, **fields: object
) -> Problem:
    """The problem a reader takes from a table row (a code's, or a category word's): the row's
    category and hints, its ``retryable`` unless one is stated, and ``fields`` as they are.

    What the row gives is built once per row, code and dialect (:func:`row_problem`); each
    problem is that one with its own ``fields`` (and a stated ``retryable``) put in."""
    return _of(row, code, domain, retryable, fields)


def _of(
    row: CodeRow | TypeRow, code: str | None, domain: str, retryable: bool | None, fields: dict[str, object]
) -> Problem:
    """:func:`problem_of` with ``fields`` as one dict (changed here: each call's own)."""
    base = row_problem(row, code, domain)
    if retryable is not None:
        fields["retryable"] = retryable
    return msgspec.structs.replace(base, **fields) if fields else base


_ROW_PROBLEMS: dict[tuple[int, str | None, str], tuple[CodeRow | TypeRow, Problem]] = {}
""":func:`row_problem` by (row, code, dialect), the row kept beside its problem (rows are
compared by identity: a table's rows are never changed once loaded); bounded like :data:`_CHOICES`."""


def row_problem(row: CodeRow | TypeRow, code: str | None, domain: str) -> Problem:
    """The problem a table row gives ``code`` of ``domain`` with nothing else stated: the row's
    category, ``retryable`` and hints, built once and shared (a ``Problem`` is immutable)."""
    key = (id(row), code, domain)
    hit = _ROW_PROBLEMS.get(key)
    if hit is not None and hit[0] is row:
        return hit[1]
    p = Problem(
        category=row.category,
        code=code,
        domain=domain,
        retryable=row.retryable,
        origin=row.origin,
        upstream=row.upstream,
        aspect=row.aspect,
        partial=row.partial if isinstance(row, CodeRow) else False,
    )
    if len(_ROW_PROBLEMS) >= 4096:
        _ROW_PROBLEMS.clear()
    _ROW_PROBLEMS[key] = (row, p)
    return p


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


class Choice(NamedTuple):
    """What writing a problem's code to one dialect implies, derived once per target and problem
    (:func:`choice`): the one table lookup a writer makes for it. The writer, its diagnostics
    and the loss report (:func:`~envglot.context.report_losses`) read it here (:func:`planned`),
    never from the tables again."""

    code: str
    """The native code the writer emits."""
    plan: CodePlan | None
    """What ``code`` implies in the target; ``None`` for an unknown code written back verbatim."""
    table_plan: CodePlan
    """What the code the target's writer-choice rows give implies: ``plan``, unless ``code`` is
    an unknown code written back verbatim (google-rpc writes that one's status beside it)."""
    respelled: bool
    """``code`` replaces the problem's own code and reads back as it (:func:`respelled`)."""
    implied: bool | None
    """The ``retryable`` a reader of the target takes from ``code`` (for :func:`carry_meaning`;
    ``None`` too where the target has no place for a category its codes cannot say)."""
    word: str | None
    """The category word written beside ``code`` (a dialect with words: response-v2's
    ``error_type``): the problem's own word for its own code, else the code's, else the
    category's; ``None`` for a dialect without words."""
    word_retryable: bool | None
    """What ``word``'s row states for ``retryable``."""
    source: CodePlan | None
    """What the problem's own code implies in the dialect that minted it (``None``: unknown there)."""
    returns: bool
    """Converting back gives the problem's own code again (its reader restores what it implies)."""
    there: bool | None
    """The ``retryable`` a reader of the target restores: the written code's row's, else (the
    code returning) what the problem's own code implies, else ``None``."""
    type_implied: bool
    """The problem's ``type`` is the word its own code implies (a reader restores it from the code)."""
    source_retryable: bool | None
    """What the problem's own code (else its own word) states for ``retryable`` in the dialect
    that minted it (:func:`retryable_implied`)."""
    way_back: bool
    """The problem's code is a known code of a writable dialect: converting back restores it."""
    restores: bool
    """Converting ``code`` back (its category travelling in details where the target carries
    one) gives the problem's own code again, so what its dialect derives from the code
    (problem-json's type, title, status: ``code_implies.*`` rows) comes back; always true for
    a dialect that derives nothing from its codes."""


_CHOICES: dict[tuple[object, ...], Choice] = {}
"""Choices by (tables, target, the problem's code-related fields); a bounded cache."""


def choice(p: Problem, dmap: DialectMap, m: Mappings) -> Choice:
    """The :class:`Choice` of ``dmap``'s writer for ``p`` under tables ``m``, computed once.

    A code the tables do not know goes back verbatim to the dialect that minted it, unless that
    dialect's vocabulary is a closed enum; any other takes :meth:`~envglot.tables.DialectMap.choose`.
    """
    key = (m, dmap, p.category, p.code, p.domain, p.type, p.origin, p.upstream, p.aspect, p.partial, p.retryable)
    hit = _CHOICES.get(key)
    if hit is not None:
        return hit
    chosen = _chosen(p, dmap)
    src = m.dialects.get(p.domain) if p.domain is not None else None
    source = src.plan(p.code) if src is not None and p.code is not None else None
    returns = _returns(p, chosen, dmap, m)
    there = _there(p, chosen, dmap, m)
    if p.code is not None and p.domain == dmap.name and p.code not in dmap.codes and not dmap.shape.closed:
        code, plan, again = p.code, None, False
    else:
        code, plan = chosen, dmap.plan(chosen)
        again = p.code is not None and code != p.code and respelled(p, code, dmap, m)
    word = _word(p, code, plan, dmap) if dmap.types and dmap.tables is not None else None
    trow = dmap.types.get(word) if word is not None else None
    word_retryable = trow.retryable if trow is not None else None
    implied = None  # for carry_meaning: the target has a place for what its codes cannot say
    if plan is not None and dmap.meaning_keys[0] is not None:
        implied = plan.row.retryable if plan.row.retryable is not None else word_retryable
    way_back = source is not None and src is not None and src.shape.writable
    restores = True
    if src is not None and p.code is not None and any(f.startswith("code_implies.") for f in src.fields):
        restores = plan is not None and _back(p, plan, dmap, src) == p.code
    table_plan = dmap.plan(chosen)
    assert table_plan is not None  # a writer choice is a known code (validated)
    hit = Choice(
        code,
        plan,
        table_plan,
        again,
        implied,
        word,
        word_retryable,
        source,
        returns,
        there,
        _type_implied(p, source),
        retryable_implied(p, m),
        way_back,
        restores,
    )
    if len(_CHOICES) >= 4096:
        _CHOICES.clear()
    _CHOICES[key] = hit
    return hit


def _back(p: Problem, plan: CodePlan, dmap: DialectMap, src: DialectMap) -> str:
    """The code ``src``'s writer gives ``plan``'s code written for ``p`` in ``dmap`` on the way
    back: a category that travels in ``dmap``'s details is read back without the code's hints."""
    row = plan.row
    if row.category != p.category and "problem.category" in dmap.carried:
        return src.choose(p.category, plan.code, dmap.name)
    return src.choose(row.category, plan.code, dmap.name, row.origin, row.upstream, row.aspect, row.partial)


def _type_implied(p: Problem, source: CodePlan | None) -> bool:
    return source is not None and source.word == p.type


def _word(p: Problem, code: str, plan: CodePlan | None, dmap: DialectMap) -> str:
    """The category word ``dmap``'s writer writes beside ``code`` for ``p``: the problem's own
    word for its own code, else the code's, else the category's (``error-types.toml``)."""
    if p.domain == dmap.name and p.code == code and p.type is not None:
        return p.type
    if plan is not None and plan.word is not None:
        return plan.word
    assert dmap.tables is not None
    return type_for(dmap.tables, dmap.name, p.category, p.origin, p.upstream, p.aspect, p.partial)


def planned(p: Problem, dmap: DialectMap, ctx: Context) -> Choice:
    """The :func:`choice` of ``dmap``'s writer for ``p``, derived once per conversion: the
    writer and the loss report of one conversion read the same :class:`Choice`."""
    memo = ctx.choices
    if memo is None:
        memo = ctx.choices = {}
    key = (id(p), dmap.name)
    hit = memo.get(key)
    if hit is not None and hit[0] is p:
        return hit[1]
    ch = choice(p, dmap, ctx.mappings)
    if len(memo) >= _CHOICES_KEPT:  # a context a fused path shares across documents: kept bounded
        memo.clear()
    memo[key] = (p, ch)
    return ch


_CHOICES_KEPT = 64
"""Choices a context keeps (:func:`planned`): more than one document's problems, bounded for a
context bound once and shared by every document a pipeline converts (``choice`` is pure: one
cleared is derived again alike)."""


def write_plan(p: Problem, dmap: DialectMap, ctx: Context, index: int | None = None) -> Choice:
    """The :func:`choice` of ``dmap``'s writer for ``p``; reports any change of code."""
    ch = planned(p, dmap, ctx)
    report = ctx.report
    if not report.collecting:
        return ch
    code, plan = ch.code, ch.plan
    counting = report if isinstance(report, Counting) else None  # kinds and paths only: no facts formatted
    if code != p.code:
        where = ctx.path("problem.code", index)
        if p.code is None:
            chose = f"{code!r} for category {p.category!r}"
            if plan is not None and plan.category != p.category:
                chose = f"{code!r}, which reads as {plan.category!r}, not {p.category!r}"
            ctx.synthesized(dmap, "problem.code", index, need=f"{dmap.name} needs a code", value=chose)
        elif counting is not None:
            counting.count(Kind.CODE_RESPELLED if ch.respelled else Kind.CODE_MAPPED, where)
            if not ch.respelled:
                _implied_changes(p, ch, dmap, ctx, where)
        elif ch.respelled:
            ctx.report.add(
                Kind.CODE_RESPELLED, where, dmap.name, source=p.domain, code=quoted(p.code), chosen=quoted(code)
            )
        else:
            changed = plan is not None and plan.category != p.category
            ctx.report.add(
                Kind.CODE_MAPPED,
                where,
                dmap.name,
                source=p.domain or "source",
                code=quoted(p.code),
                result=f"wrote {quoted(code)}" if changed else f"wrote {quoted(code)} ({p.category})",
                reads_as=plan.category if changed and plan is not None else None,
                was=p.category if changed else None,
                kept="; the category travels in details" if "problem.category" in dmap.carried else "",
            )
            _implied_changes(p, ch, dmap, ctx, where)
    if plan is not None and plan.ext and counting is not None:
        counting.count(Kind.CODE_EXTENSION, ctx.path("problem.code", index))
    elif plan is not None and plan.ext:
        ctx.report.add(
            Kind.CODE_EXTENSION,
            ctx.path("problem.code", index),
            dmap.name,
            code=repr(code),
        )
    return ch


def write_code(p: Problem, dmap: DialectMap, ctx: Context, index: int | None = None) -> str:
    """The native code ``dmap``'s writer emits for ``p`` (:func:`write_plan`); reports any change of code."""
    return write_plan(p, dmap, ctx, index).code


@lru_cache(maxsize=64)
def _implied(src: DialectMap) -> tuple[str, ...]:
    """The source paths of ``src``'s ``code_implies.*`` rows (what its code implies), in table order."""
    return tuple(path for f, path in src.fields.items() if f.startswith("code_implies."))


def _implied_changes(p: Problem, ch: Choice, dmap: DialectMap, ctx: Context, where: str) -> None:
    """Report each member the source derives from its code (its table's ``code_implies.*`` rows:
    problem-json's type, title, status) when the code ``ch`` writes for ``p`` in ``dmap`` does
    not come back as ``p.code`` (``ch.restores``): converting back derives them from another code."""
    src = ctx.source
    if ch.restores or src is None or src.name != p.domain or p.code is None:
        return
    implied = _implied(src)
    if not implied:
        return
    base = where.rpartition(".")[0]
    report = ctx.report
    for path in implied:
        member = path.rpartition(".")[2]
        if isinstance(report, Counting):
            report.count(Kind.CODE_MAPPED, f"{base}.{member}")
            continue
        report.add(
            Kind.CODE_MAPPED,
            f"{base}.{member}",
            dmap.name,
            source=src.name,
            code=quoted(p.code),
            result=f"its {member}, which follows the code, does not come back",
        )


def problem_message(
    p: Problem, summary: str | None, ctx: Context, target: DialectMap, index: int | None = None, fallback: str = ""
) -> str:
    """The error message a writer that requires one emits for ``p``.

    The problem's own message, else the envelope's summary, else ``fallback``; a
    substitute is reported as synthesized.
    """
    return written_message(p.message, summary, ctx, target, index, fallback)


def written_message(
    message: str | None,
    summary: str | None,
    ctx: Context,
    target: DialectMap,
    index: int | None = None,
    fallback: str = "",
) -> str:
    """:func:`problem_message` of a problem whose own message is ``message`` (a failure written
    from its :class:`FailurePlan` has no ``Problem`` of its own)."""
    if message:
        return message
    msg = summary or fallback
    if msg != message and ctx.report.collecting:
        ctx.synthesized(
            target, "problem.message", index, need=f"{target.name} requires an error message", value=quoted(msg)
        )
    return msg


def missing_problem(summary: str | None, ctx: Context, target: DialectMap) -> Problem:
    """The problem a writer emits for a failure that names none (fallback category), reported."""
    category = ctx.mappings.unknown_category
    if ctx.report.collecting:
        ctx.synthesized(target, "problems", need="failure without an error object", value=f"category {category!r}")
    return Problem(category=category, message=summary or "failed")


_RAW_DICT = msgspec.json.Decoder(dict[str, Raw])
_ENC = msgspec.json.Encoder()
_TRUE, _FALSE = Raw(b"true"), Raw(b"false")


@lru_cache(maxsize=64)
def _carries(keys: tuple[str | None, str | None]) -> Callable[[Raw], bool]:
    """A test whether an object has a member named in ``keys`` at its top level: one decode
    that skips every other member in C (a key written with escapes is read as its text); a
    value that is no object raises ``msgspec.ValidationError``."""
    names = [k for k in keys if k is not None]
    unsaid = Raw(b"")
    fields = [(f"m{i}", Raw, unsaid) for i in range(len(names))]
    try:
        said = msgspec.defstruct("Said", fields, rename=dict(zip([f for f, _, _ in fields], names, strict=True)))
    except ValueError:  # a key msgspec cannot name a field after (a quote, a control character)
        wanted = frozenset(names)

        def any_member(d: Raw) -> bool:
            return not wanted.isdisjoint(_RAW_DICT.decode(d))

        return any_member
    decode, none = msgspec.json.Decoder(said).decode, said()

    def carries(d: Raw) -> bool:
        return bool(decode(d) != none)

    return carries


def carry_meaning(
    p: Problem, ch: Choice, details: Raw | None, dmap: DialectMap, members: dict[str, Raw] | None = None
) -> Raw | None:
    """``details`` with the problem's category (and stated ``retryable``) added where the code
    ``dmap``'s writer chose (its :class:`Choice`, from :func:`write_plan`) reads as another
    category or implies another ``retryable`` (an unstated one is the category's default):
    the target's extension place (its table's ``problem.category`` row) carries what its codes
    cannot, and :func:`carried_meaning` reads it back. ``details`` unchanged otherwise, or when
    it is no object (the writer wraps it first). ``members``: the top level of ``details`` where
    a reader decoded it already (:attr:`WireFailure.details_members`), taken instead of decoding
    ``details`` again when ``details`` is their encoding byte for byte (their decode then)."""
    return with_carried(details, meaning_to_carry(p, ch, dmap), members)


def meaning_to_carry(p: Problem, ch: Choice, dmap: DialectMap) -> dict[str, Raw]:
    """The members :func:`carry_meaning` adds to the details of ``p`` written as ``ch`` says
    (empty: none), a function of the three alone (a :class:`FailurePlan` keeps them: do not change
    the dict)."""
    cat_key, retry_key = dmap.meaning_keys
    plan, implied = ch.plan, ch.implied
    add: dict[str, Raw] = {}
    if cat_key is None or plan is None:  # an unknown code written back verbatim: read back as it was read
        return add
    read_as = plan.category
    if read_as != p.category:
        add[cat_key] = Raw(_ENC.encode(p.category))
        if p.retryable is not None and retry_key is not None:
            add[retry_key] = _TRUE if p.retryable else _FALSE
    elif retry_key is None:
        pass
    elif p.retryable is not None:
        if p.retryable != implied:
            add[retry_key] = _TRUE if p.retryable else _FALSE
    elif (
        implied is not None
        and ch.way_back
        and dmap.tables is not None
        and implied != dmap.tables.default_retryable(p.category)
    ):
        # an unstated retryable is the category's default; a code whose row implies another
        # would flip it on the way back (response-v2 INTERNAL_ERROR is retryable, internal is not)
        add[retry_key] = _FALSE if implied else _TRUE
    return add


def with_carried(details: Raw | None, add: dict[str, Raw], members: dict[str, Raw] | None = None) -> Raw | None:
    """``details`` with the members ``add`` (:func:`meaning_to_carry`) put after its own, as
    :func:`carry_meaning` writes them (``members`` as there)."""
    if not add:
        return details
    if details is None or details == Raw(b"null"):
        return Raw(_ENC.encode(add))
    if memoryview(details)[:1] != b"{":
        return details
    if members is None or not _spelled_as(members, details):
        members = _RAW_DICT.decode(details)
    return Raw(_ENC.encode({**members, **add}))


def _spelled_as(members: dict[str, Raw], raw: Raw) -> bool:
    """Whether ``raw`` is msgspec's encoding of ``members``, so that decoding it gives them (two
    copies at memory speed, where the decode skips every value again)."""
    try:
        return Raw(_ENC.encode(members)) == raw
    except UnicodeEncodeError:  # a lone surrogate in a key: the decode and its encoding decide
        return False


def carries_meaning(details: Raw | None, dmap: DialectMap, members: dict[str, Raw] | None = None) -> bool:
    """True if ``details`` (an object) has a member where ``dmap``'s writer carries what its
    codes cannot say (:func:`carry_meaning`); :func:`carried_meaning` reads only such details.
    ``members``: the top level of ``details`` where a reader decoded it already (a lookup then
    answers, no decode)."""
    cat_key, retry_key = dmap.meaning_keys
    if cat_key is None or details is None:
        return False
    if members is not None:
        return _meaning_in(members, cat_key, retry_key)
    try:
        return _carries(dmap.meaning_keys)(details)
    except msgspec.ValidationError:  # details that are no object carry nothing
        return False


def details_object(details: Raw | None, dmap: DialectMap) -> dict[str, Raw] | Literal[False] | None:
    """The top level of ``details`` where ``dmap``'s writer carries meaning there, for a reader's
    fused failure whose reader did not decode it, once the carried-meaning test
    (:func:`carries_meaning`) has looked its keys up: ``False`` when ``details`` carries meaning
    (the failure takes the problem hooks), ``None`` when ``details`` is absent or no object, or
    ``dmap`` carries none (nothing to test). One decode that both the test and a writer's
    :func:`carry_meaning` take, where each decoded ``details`` once before (it skips what
    :func:`carries_meaning`'s decode skips)."""
    cat_key, retry_key = dmap.meaning_keys
    if details is None or cat_key is None:
        return None
    try:
        members = _RAW_DICT.decode(details)
    except msgspec.ValidationError:  # no object: it carries nothing, a writer wraps it
        return None
    return False if _meaning_in(members, cat_key, retry_key) else members


def _meaning_in(members: dict[str, Raw], cat_key: str, retry_key: str | None) -> bool:
    """Whether a details object's top level ``members`` has a key its writer carries meaning in
    (the carried-meaning test of :func:`carries_meaning` and :func:`details_object`)."""
    return cat_key in members or (retry_key is not None and retry_key in members)


def carried_meaning(p: Problem, dmap: DialectMap, ctx: Context, members: dict[str, Raw] | None = None) -> Problem:
    """``p`` with the category and ``retryable`` its ``details`` carry (:func:`carry_meaning`)
    taken out of them: a category the code could not say wins over the code's, and the code's
    hints (which describe another category) are dropped. ``members``: the top level of
    ``p.details`` where the reader decoded it already (see :func:`carries_meaning`)."""
    cat_key, retry_key = dmap.meaning_keys
    d = p.details
    if cat_key is None or d is None or not carries_meaning(d, dmap, members):
        return p
    if members is None:
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


# ---- failures on a fused path: from a source code straight to the target's -------------------


def stated_word(row: CodeRow | None, word: TypeRow | None) -> bool:
    """True if a stated category word's row (``word``, response-v2's ``error_type``) decides a
    failure's category over its code's ``row``: the code is unknown, or an extension code (read
    by what its spelling suggests) whose row names another category."""
    return word is not None and (row is None or (row.ext and word.category != row.category))


def worded_problem(
    row: CodeRow | TypeRow,
    word: TypeRow | None,
    code: str | None,
    domain: str,
    retryable: bool | None = None,
    **fields: object,
) -> Problem:
    """:func:`problem_of` ``row`` for a failure that states a category word beside its code: a
    ``retryable`` neither stated nor the row's is the ``word``'s row's."""
    p = _of(row, code, domain, retryable, fields)
    return p if p.retryable is not None or word is None else msgspec.structs.replace(p, retryable=word.retryable)


class WireFailure(msgspec.Struct, frozen=True, gc=False):
    """A failure's one wire error as a reader's fused form gives it (``Reading.failure``): its
    native code and stated ``retryable``, then the document's own fields a writer moves as they
    are. Not a canonical object: what the code implies is in its :class:`FailurePlan`. A Struct,
    not a ``NamedTuple``: built once per failure, by keyword, in C (a ``NamedTuple``'s ``__new__``
    is Python)."""

    code: str | None
    retryable: bool | None = None
    message: str | None = None
    path: str | None = None
    details: Raw | None = None
    retry_after_ms: int | None = None
    rate_limit_reset: str | None = None
    policy_decision: str | None = None
    remediation: str | None = None
    exception_type: str | None = None
    exception_message: str | None = None
    extra: Raw | None = None
    type: str | None = None
    """The category word the source states beside its code (response-v2's ``error_type``): part
    of the problem its plan gives (a writer reads it), so part of the plan's key."""
    details_members: dict[str, Raw] | None = None
    """The top level of ``details`` where the reader decoded it in its own parse
    (:class:`~envglot.keyed.KeyedItems`): a writer that adds members to the details
    (:func:`carry_meaning`) takes them instead of parsing the details again."""


class FailurePlan(NamedTuple):
    """What a known code of a source dialect implies when written by one target's writer,
    computed once per pair of tables and code (:class:`FailurePlans`)."""

    problem: Problem
    """The problem the code's row gives with the stated ``retryable`` (:func:`problem_of`, shared):
    category, ``retryable`` and hints; a failure's own fields are in its :class:`WireFailure`."""
    choice: Choice
    """The target writer's :class:`Choice` for it: its code, what that implies, what is reported."""
    carried: dict[str, Raw]
    """What :func:`carry_meaning` adds to the failure's details for them (:func:`meaning_to_carry`,
    computed once: a writer passes it to :func:`with_carried`); not to be changed."""
    code_json: bytes
    """``choice.code`` as msgspec encodes it (a JSON string), encoded once for a writer that
    writes its output's members as bytes."""
    word_json: bytes | None
    """``choice.word`` encoded likewise (``None`` where the target writes no word)."""


class FailurePlans(dict[tuple[str | None, bool | None, str | None], FailurePlan | None]):
    """A pair's :class:`FailurePlan` by a :class:`WireFailure`'s ``(code, retryable, type)``, each
    built on first use (one lookup a document); ``None`` for a code the source's tables do not
    know, whose failure takes the reader's and writer's problem hooks (kept too, so that those look
    it up once: the codes of input are unbounded, so the dict starts over past :attr:`limit`
    entries). No code plans as the source's reader reads one: its table's fallback category
    (``default_category``, a dialect without codes: legacy-v1), else ``None`` (the hooks)."""

    __slots__ = ("limit", "source", "target")

    def __init__(self, source: DialectMap, target: DialectMap) -> None:
        super().__init__()
        self.source, self.target = source, target
        self.limit = 3 * len(source.codes) + 256

    def __missing__(self, key: tuple[str | None, bool | None, str | None]) -> FailurePlan | None:
        code, retryable, type_ = key
        src, tables = self.source, self.target.tables
        stated: dict[str, object] = {} if type_ is None else {"type": type_}
        hit, p = None, None
        if code is None:
            if src.default_category is not None:  # as read_problem reads a failure without a code
                p = Problem(category=src.default_category, domain=src.name, retryable=retryable, **stated)  # type: ignore[arg-type]
        else:  # a stated word the tables do not know: the hooks report it
            plan = src.plan(code)
            word = src.types.get(type_) if type_ is not None else None
            if plan is not None and (type_ is None or word is not None):
                row: CodeRow | TypeRow = word if word is not None and stated_word(plan.row, word) else plan.row
                p = worded_problem(row, word, code, src.name, retryable, **stated)
        if p is not None and tables is not None:
            ch = choice(p, self.target, tables)
            word_json = None if ch.word is None else _ENC.encode(ch.word)
            hit = FailurePlan(p, ch, meaning_to_carry(p, ch, self.target), _ENC.encode(ch.code), word_json)
        if len(self) >= self.limit:
            self.clear()
        self[key] = hit
        return hit


_FAILURE_PLANS: dict[tuple[DialectMap, DialectMap], FailurePlans] = {}
""":func:`failure_plans` by (source, target) tables; bounded like :data:`_CHOICES`."""


def failure_plans(source: DialectMap, target: DialectMap) -> FailurePlans:
    """The :class:`FailurePlans` of ``source``'s codes written by ``target``'s writer (shared)."""
    key = (source, target)
    hit = _FAILURE_PLANS.get(key)
    if hit is None:
        if len(_FAILURE_PLANS) >= 256:
            _FAILURE_PLANS.clear()
        hit = _FAILURE_PLANS[key] = FailurePlans(source, target)
    return hit
