"""Code look-ups over the mapping tables: what a native code means, and what it becomes.

Pure functions over a :class:`~envglot.mappings.Mappings`, and :func:`check_overlay`, which
converts through the real readers and writers; the CLI formats their output.
A code's equivalent in another dialect is what that dialect's writer would emit for it
after reading: ``m[dst].choose(row.category, code=code, domain=src, <row hints>)``.
"""

from __future__ import annotations

import os
import textwrap
from typing import Any

import msgspec
import tomli_w

from .codes import problem_of
from .diagnostics import Diagnostic, Kind, Report
from .errors import MappingError, UnknownDialectError, UnsupportedError
from .mappings import CodeRow, Mappings, default_mappings, load_mappings, type_for
from .tables import HINTS

__all__ = [
    "Said",
    "check_overlay",
    "crosswalk",
    "describe_code",
    "equivalent",
    "hints_of",
    "overlay_template",
    "says_change",
    "unstable_codes",
    "writable",
]


def writable(m: Mappings) -> list[str]:
    """Dialects that have a writer, in table order."""
    return [name for name, d in m.dialects.items() if d.shape.writable]


def hints_of(row: CodeRow) -> dict[str, Any]:
    """The hints a reader sets from a code row (only those that are set)."""
    out: dict[str, Any] = {h: getattr(row, h) for h in HINTS if getattr(row, h) is not None}
    if row.partial:
        out["partial"] = True
    return out


def _dialect(name: str, m: Mappings) -> None:
    if name not in m.dialects:
        raise UnknownDialectError(name, list(m.dialects))


def equivalent(src: str, code: str, dst: str, m: Mappings) -> str:
    """The code the ``dst`` writer emits for native ``code`` of ``src`` (read through the hub).

    Raises :class:`KeyError` if ``code`` is not a native code of ``src``, and
    :class:`~envglot.errors.UnsupportedError` if ``dst`` has no writer.
    """
    _dialect(src, m)
    _dialect(dst, m)
    if not m[dst].shape.writable:
        raise UnsupportedError(f"{dst} is a read-only dialect: it has no writer", dialect=dst)
    p = problem_of(m[src].codes[code], code, src)
    return m[dst].choose(p.category, p.code, p.domain, p.origin, p.upstream, p.aspect, p.partial)


def describe_code(code: str, m: Mappings, dialect: str | None = None) -> list[dict[str, Any]]:
    """Every dialect where ``code`` is a native code (or only ``dialect``), with its reading.

    Each entry: dialect, code, category, http, grpc, retryable (the row's value, else the
    category default), retryable_source ("code" or "category"), hints, type, ext, note,
    and ``equivalents``: the code each other writable dialect emits for it.
    """
    if dialect is not None:
        _dialect(dialect, m)
    names = [dialect] if dialect is not None else list(m.dialects)
    out: list[dict[str, Any]] = []
    for name in names:
        row = m[name].codes.get(code)
        plan = m[name].plan(code)
        if row is None or plan is None:
            continue
        out.append(
            {
                "dialect": name,
                "code": code,
                "category": plan.category,
                "http": plan.http,
                "grpc": m.categories[plan.category].grpc,
                "retryable": plan.retryable,
                "retryable_source": plan.retryable_source,
                "hints": hints_of(row),
                "type": row.type,
                "ext": row.ext,
                "note": row.note,
                "equivalents": {dst: equivalent(name, code, dst, m) for dst in writable(m) if dst != name},
            }
        )
    return out


def crosswalk(src: str, dst: str, m: Mappings) -> list[dict[str, Any]]:
    """Every native code of ``src`` with the code the ``dst`` writer emits for it.

    Each entry: code, category, target, target_category (None when the target code has no
    reading row in ``dst``), same_category (reading the target back keeps the category),
    ext (the source code is an extension code), note.
    """
    _dialect(src, m)
    _dialect(dst, m)
    out: list[dict[str, Any]] = []
    for code, row in m[src].codes.items():
        target = equivalent(src, code, dst, m)
        trow = m[dst].codes.get(target)
        tcat = trow.category if trow is not None else None
        out.append(
            {
                "code": code,
                "category": row.category,
                "target": target,
                "target_category": tcat,
                "same_category": tcat == row.category,
                "ext": row.ext,
                "note": row.note,
            }
        )
    return out


def unstable_codes(m: Mappings, dialects: list[str] | None = None) -> list[dict[str, Any]]:
    """Codes that do not read back as themselves: every code of every writable dialect (or of
    ``dialects``), written to every writable target and converted back (the real readers and
    writers, with these tables), must come back as the same code or as one of the same category
    and retryability as the reader takes them (a category the codes cannot say may travel in
    the error's details: ``problem.category`` rows; issue 25). Each entry: dialect, code,
    target, written (the target's code), back (the code it became), category and retryable
    before and after, and ``reported``: whether a diagnostic of the two conversions says the
    change (:func:`says_change`), as it must where a target can neither spell nor carry the
    meaning (errorcode's closed enum).
    """
    from .api import read, write
    from .canonical import Envelope
    from .codes import read_problem
    from .context import Context
    from .diagnostics import DISCARD

    names = writable(m)
    out: list[dict[str, Any]] = []
    for src in dialects if dialects is not None else names:
        if src not in names:
            continue
        dmap = m[src]
        for code in dmap.codes:
            p = read_problem(dmap, code, Context(m, DISCARD), "$", message="m")
            doc = write(Envelope(ok=False, problems=(p,)), to=src, mappings=m, unsupported="ignore")
            env = read(doc, from_=src, mappings=m)  # the code as its own reader takes it
            p0 = env.problems[0]
            want = (p0.category, p0.retryable if p0.retryable is not None else m.default_retryable(p0.category))
            for dst in names:
                report = Said()
                retryable_at = {
                    Context(m, DISCARD, m[d]).path("problem.retryable", i) for d in (src, dst) for i in (None, 0)
                }
                there = write(env, to=dst, mappings=m, report=report, source=src, unsupported="ignore")
                mid = read(there, from_=dst, mappings=m)
                back = write(mid, to=src, mappings=m, report=report, source=dst, unsupported="ignore")
                q = read(back, from_=src, mappings=m).problems[0]
                got = (q.category, q.retryable if q.retryable is not None else m.default_retryable(q.category))
                if q.code == code or got == want:
                    continue
                out.append(
                    {
                        "dialect": src,
                        "code": code,
                        "target": dst,
                        "written": mid.problems[0].code,
                        "back": q.code,
                        "category": want[0],
                        "retryable": want[1],
                        "back_category": got[0],
                        "back_retryable": got[1],
                        "reported": says_change(report, want, got, retryable_at),
                    }
                )
    return out


def check_overlay(path: str | os.PathLike[str]) -> Mappings:
    """Validate one overlay file against the bundled tables; raises :class:`MappingError`.

    Besides the rows themselves, the overlay must keep the code tables round-trip stable
    (:func:`unstable_codes`): it may not make a meaning (a category and
    retryability, from a dialect through a target) come back changed where the bundled tables
    bring it back, whether through a code it changes or one it adds (a target whose writer cannot
    spell a category and has no place to carry it, errorcode's closed enum, is reported at
    conversion instead).
    """

    def meaning(u: dict[str, object]) -> tuple[object, ...]:
        return (u["dialect"], u["target"], u["category"], u["retryable"])

    def inherent(u: dict[str, object]) -> bool:  # the target can neither spell nor carry the category
        t, cat = m[str(u["target"])], str(u["category"])
        plan = t.plan(t.choose(cat))
        return "problem.category" not in t.carried and (plan is None or plan.category != cat)

    m = load_mappings([path])
    base = default_mappings()
    plain = base if m.registry is base.registry else load_mappings(registry=m.registry)
    before = {meaning(u) for u in unstable_codes(plain)}  # (a declared dialect's own codes: its tables)
    new = [u for u in unstable_codes(m) if meaning(u) not in before and not inherent(u)]
    if new:
        u = new[0]
        more = f" (+{len(new) - 1} more)" if len(new) > 1 else ""
        raise MappingError(
            f"{path}: {u['dialect']} code {u['code']!r} does not read back: written as {u['target']} "
            f"{u['written']!r}, it comes back as {u['back']!r} ({u['back_category']}, retryable="
            f"{str(u['back_retryable']).lower()}; it was {u['category']}, retryable="
            f"{str(u['retryable']).lower()}){more}"
        )
    return m


class Said(Report):
    """A report that also keeps what each diagnostic says as data: the facts its message was
    rendered from (``kind``, ``facts``), and the kind and path of a ready diagnostic (its
    message is never read back). What :func:`says_change` decides on."""

    __slots__ = ("facts", "ready")

    def __init__(self) -> None:
        super().__init__("ignore")
        self.facts: list[tuple[Kind, dict[str, Any]]] = []
        self.ready: list[tuple[Kind, str]] = []

    def add(self, kind: Kind, path: str, dialect: str | None = None, /, **facts: Any) -> None:
        """Record the diagnostic and the facts it was rendered from."""
        super().add(kind, path, dialect, **facts)
        self.facts.append((kind, facts))

    def append(self, diagnostic: Diagnostic) -> None:
        """Record a ready diagnostic and its kind and path."""
        super().append(diagnostic)
        self.ready.append((diagnostic.kind, diagnostic.path))


def says_change(said: Said, before: tuple[str, bool], after: tuple[str, bool], retryable_at: set[str]) -> bool:
    """True if the diagnostics ``said`` say a failure's (category, retryable) ``before`` became
    ``after``: a ``code_mapped`` whose facts name the category the chosen code reads as, or, for
    the same category, a ``retryable_changed`` or a ``field_dropped`` at one of ``retryable_at``
    (the paths where the conversions' sources keep ``problem.retryable``)."""
    if before[0] != after[0]:
        return any(
            k is Kind.CODE_MAPPED and f.get("reads_as") == after[0] and f.get("was") == before[0] for k, f in said.facts
        )
    return any(k is Kind.RETRYABLE_CHANGED for k, _ in said.facts) or any(
        k is Kind.RETRYABLE_CHANGED or (k is Kind.FIELD_DROPPED and path in retryable_at) for k, path in said.ready
    )


_HEADER = """\
# envglot mapping overlay for the {dialect!r} dialect.
# Later overlays win over earlier ones and over the bundled tables (mappings/{dialect}.toml).
# Check it with envglot.crosswalk.check_overlay(path); errors name the file and the row.
#
# Keys of a [codes.<NATIVE>] row (how a native code reads into the canonical model):
#   category   required; one of:
{categories}
#   retryable  true/false; omit to use the category default
#   origin     hint: input | state | config | policy | upstream | server | io | protocol
#   upstream   hint: the failing upstream system (x, llm, db, ...)
#   aspect     hint: finer sub-kind shared across dialects; in use:
{aspects}
#   partial    true when side effects happened before the failure
#   http       HTTP status when it differs from the category default
#   type       response-v2 only: the error_type the code belongs to
#   ext        true when the code is outside the dialect's documented catalogue
#   note       free text
# Keys of a [[write]] row (a writer choice: for this category, and hints if given, emit code):
#   category, code (must have a [codes.<code>] row), origin, upstream, aspect, partial, note
#   Rows with more conditions win; among equals, overlay rows come before bundled rows.
"""

_CLOSED = """\
# {dialect} is a closed vocabulary: override existing codes only, never add new ones.
"""

_ROW_HINT = """\
# error-types.toml rows can be overlaid too (the {columns} category words;
# a dialect with a [types] table takes only its own [types] words):
# [[row]]
# category = "failed_precondition"
# aspect = "example_aspect"
{words}"""


def _wrapped(words: list[str]) -> str:
    return "\n".join(textwrap.wrap(", ".join(words), 88, initial_indent="#     ", subsequent_indent="#     "))


def _aspects(m: Mappings) -> list[str]:
    return sorted({r.aspect for d in m.dialects.values() for r in d.codes.values() if r.aspect})


def overlay_template(dialect: str, m: Mappings) -> str:
    """A commented starter overlay for ``dialect`` that :func:`check_overlay` accepts as is.

    The example code row adds a code (or, for a closed code enum, restates an
    existing row unchanged); the example write row only applies under a made-up aspect,
    so loading the template unchanged changes no existing choice.
    """
    _dialect(dialect, m)
    d = m[dialect]
    closed = d.shape.closed
    code_row: dict[str, Any]
    if closed:
        code = next(iter(d.codes))
        code_row = msgspec.to_builtins(d.codes[code])
        code_row["note"] = "example: restates the bundled row; change category or hints here"
    else:
        code = m.registry.get(dialect).example_code
        code_row = {
            "category": "failed_precondition",
            "origin": "state",
            "aspect": "example_aspect",
            "ext": True,
            "note": "example: a code your server emits that the bundled table lacks",
        }
        if d.types:  # a code belongs to one of the dialect's category words
            code_row["type"] = next(
                (t for t, r in d.types.items() if r.category == code_row["category"] and not r.ext), next(iter(d.types))
            )
    write_row = {
        "category": code_row["category"],
        "aspect": "example_aspect",
        "code": code,
        "note": "example: emit this code when a problem carries aspect=example_aspect",
    }
    parts = [
        _HEADER.format(
            dialect=dialect,
            categories=_wrapped(list(m.categories)),
            aspects=_wrapped(_aspects(m)),
        ),
        tomli_w.dumps({"dialect": dialect}),
    ]
    if closed:
        parts.append(_CLOSED.format(dialect=dialect))
    parts += [
        "# Example code row.",
        tomli_w.dumps({"codes": {code: code_row}}),
    ]
    if d.shape.writable:
        parts += ["# Example writer choice.", tomli_w.dumps({"write": [write_row]})]
    columns = [n for n, dm in m.dialects.items() if dm.shape.open_codes or dm.types]
    if dialect in columns:
        words = "".join(
            f'# {n} = "{type_for(m, n, "failed_precondition", None, None, None, False)}"\n' for n in columns
        )
        parts.append(_ROW_HINT.format(columns=" and ".join(columns), words=words))
    return "\n".join(parts).rstrip("\n") + "\n"
