"""The per-record layer: Migrator (bytes -> Outcome) and the rejects-file line."""

from __future__ import annotations

import base64
import functools
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import msgspec

from ..api import Converter
from ..context import Context
from ..detect import MCP, Detection, classify_members, top_level
from ..diagnostics import Diagnostic, Kind, Report
from ..errors import EnvglotError
from ..excerpt import excerpt
from ..limits import check_input, within_depth
from ..mappings import Mappings, mappings_for
from ..options import UNSET, Options, Unsupported, resolve
from ..pipeline import Counter
from ..policy import Level
from .constants import ENCODER, INTERNAL_ERROR, REASON_LIMIT, TEST_DELAY_ENV, Status

if TYPE_CHECKING:
    from .tally import Tally

# --------------------------------------------------------------------------- per record


class RecordError(msgspec.Struct, frozen=True, kw_only=True):
    """Why a record was rejected, as handed to ``migrate(on_diagnostic=...)`` (the rejects file says the same)."""

    error_type: str
    """The exception class (``ParseError``, ``DetectError``, ``UnsupportedError``, ``InternalError``...)."""
    path: str | None
    message: str
    dialect: str | None

    @property
    def lossy(self) -> bool:
        """True for a record refused because converting it would lose information."""
        return self.error_type == "UnsupportedError"


class Outcome(msgspec.Struct, frozen=True, kw_only=True):
    """What became of one record.

    ``output`` is the bytes to write (``None`` for a reject); ``source`` the dialect the
    record was read as (``None`` if none could be named); for a reject, ``error`` says
    why, ``error_type`` names the exception and ``path`` the JSON path at fault.
    """

    status: Status
    output: bytes | None
    source: str | None
    lossy: bool = False
    unwrapped: bool = False
    kinds: tuple[str, ...] = ()
    """Diagnostic kinds of the conversion (one entry per diagnostic)."""
    error: str | None = None
    error_type: str | None = None
    path: str | None = None
    diagnostics: tuple[dict[str, Any], ...] = ()
    """For a lossy reject (``unsupported="raise"``): the diagnostics that made it one."""
    details: tuple[Diagnostic, ...] = ()
    """Every diagnostic of the record (converted, or a lossy reject's), only from ``Migrator(details=True)``."""


class Migrator:
    """The pure per-record migration function: ``Migrator(to=...)(record_bytes) -> Outcome``.

    * A record already in ``to`` (by detection, even when ``from_`` is forced) is read as
      ``to`` to check it and passes through byte-identical.
    * Any other record goes through the converter (source auto-detected, or ``from_``);
      JSON Lines records never contain a newline in their output.
    * Anything that cannot be read or converted — including a lossy record when
      ``unsupported="raise"`` — is a reject; nothing raises (an unexpected exception is a
      reject with ``error_type="InternalError"``).

    ``unsupported="warn"`` converts lossy records and marks them ``lossy`` (the file engine
    counts them; nothing is logged per record). Picklable: it rebuilds its converter.

    Options come as ``options=Options(...)`` or as keywords, as for :func:`envglot.convert`
    (a keyword overrides that field); ``mappings`` must be overlay paths (worker processes
    load them again), ``style`` does not apply to a record.
    """

    __slots__ = (
        "_classify",
        "_conv",
        "_counters",
        "_mappings",
        "_max_depth",
        "_policy",
        "details",
        "from_",
        "options",
        "target",
        "test_delay",
        "to",
    )

    def __init__(
        self,
        to: str = "response-v2",
        from_: str | None = None,
        *,
        options: Options | None = None,
        unsupported: Unsupported = UNSET,
        preserve: bool = UNSET,
        mappings: Sequence[str | os.PathLike[str]] | None = UNSET,
        context: dict[str, Any] | None = UNSET,
        strict: bool = UNSET,
        max_depth: int = UNSET,
        details: bool = False,
    ) -> None:
        o = resolve(
            options,
            unsupported=unsupported,
            preserve=preserve,
            mappings=mappings,
            context=context,
            strict=strict,
            max_depth=max_depth,
        )
        if isinstance(o.mappings, Mappings):
            raise EnvglotError("a Migrator takes overlay paths as mappings (its workers load them), not Mappings")
        self.options = o
        """The :class:`~envglot.Options` the records are migrated with."""
        self.details = details
        self._mappings: Mappings = mappings_for(o.mappings)
        self._policy = o.policy
        # the engine counts lossy records itself: raise refuses a record, nothing logs per record
        self._conv = Converter(to, from_, options=o.tallied(), mappings=self._mappings)
        self._max_depth = o.max_depth
        self.to: str = self._conv.to
        self.from_: str | None = self._conv.from_
        self.target = self._mappings.registry.get(self.to)
        """The target dialect (of the tables' registry: a declared one included)."""
        self._classify = functools.partial(classify_members, registry=self._mappings.registry)
        self._counters = threading.local()  # each thread's counting state (Migrator.counter), built once
        delay = os.environ.get(TEST_DELAY_ENV)  # read once here, not per chunk
        self.test_delay = float(delay) if delay else 0.0
        """Seconds each chunk waits before it is converted (a test hook, ``TEST_DELAY_ENV``)."""

    @property
    def unsupported(self) -> str:
        """The loss level (``options.unsupported``'s :class:`~envglot.Level`)."""
        return self._policy.level

    def __reduce__(self) -> tuple[Any, ...]:
        return (rebuild_migrator, (self.to, {"from_": self.from_, "options": self.options, "details": self.details}))

    def __repr__(self) -> str:
        return f"Migrator(to={self.to!r}, from_={self.from_!r}, unsupported={self.unsupported!r})"

    def __call__(self, record: bytes) -> Outcome:
        """Migrate one record (one JSON document, without its line terminator)."""
        return self.record(record)

    def record(self, record: bytes) -> Outcome:
        """Migrate one record; see the class docstring for the rules. Never raises."""
        o = self._migrate(record, None)
        assert isinstance(o, Outcome)
        return o

    def count(self, record: bytes, tally: Tally) -> bytes | Outcome | None:
        """Migrate one record and count what became of it into ``tally``, as :meth:`record` would
        have it counted (:meth:`Tally.count`): the output of a converted record, ``None`` for one
        passed through (its own bytes are the output), else its :class:`Outcome` (a reject; with
        ``details``, every record). No :class:`Outcome` is built for a record converted or passed
        through on the counting path. Never raises."""
        return self._count(tally, self._conv.pipeline.counted, record)

    def counter(self, tally: Tally) -> tuple[Callable[[bytes], bytes | Outcome | None], Callable[[], None]]:
        """:meth:`count` into ``tally`` for a run of records (a chunk): ``(count, done)``, ``count``
        called per record as :meth:`count` is, ``done`` once after the last (``tally`` holds every
        record's counts only then). The counting state (the pipeline's
        :meth:`~envglot.pipeline.Pipeline.counter`: one report, one context per source, a detected
        record straight to its counting function; the functions below) is built once per thread
        and lent to one run at a time: a run started in the same thread before ``done`` gets a
        state of its own. A record converted on it is counted with the others in C
        (:meth:`Tally.converted_records`), before any other record is counted, so the tally is the
        one :meth:`count` per record gives. Any record whose check, detection or conversion raises
        is migrated again by :meth:`count`'s path, which says what became of it."""
        state: _RunCounter | None = self._counters.__dict__.pop("free", None)
        if state is None:  # the first run of this thread, or one started before the last's done
            state = _RunCounter(self, tally)
        state.tally = tally
        return state.count, state.done

    def _count_fused(self, state: _RunCounter) -> tuple[Callable[[bytes], bytes | Outcome | None], Callable[[], None]]:
        """``state``'s per-record function and its flush, as closures over its lists (the
        record's path is the hot one: no attribute lookups but the run's tally)."""
        counted = state.counted
        sources, lossy, kinds = state.sources, state.lossy, state.kinds
        add_source, add_lossy, add_kinds = sources.append, lossy.append, kinds.extend
        max_depth, classify, to, passes, general = self._max_depth, self._classify, self.to, self._passes, self._count

        def flush() -> None:
            if sources:
                state.tally.converted_records(sources, lossy, map(_KIND, kinds))
                sources.clear()
                lossy.clear()
                kinds.clear()

        def count(record: bytes) -> bytes | Outcome | None:
            try:  # an ASCII record is check_input's answer as it is (max_depth: checked by Options)
                clean, bom = (record, False) if record.isascii() else check_input(record, max_depth, depth=False)
                top = within_depth(top_level, clean, max_depth, bom)
                det = classify(top)
                if det.dialect == to and passes(record, to, bom):  # _passes' rule, called for its dialect only
                    flush()
                    state.tally.passed_record(to)
                    return None
                output, read_as, unwrapped, seen, selected = counted(record, (clean, bom, det), top)
            except Exception:  # a reject (or the converter's own detection error): said by count's path
                flush()
                return general(state.tally, counted, record)
            if unwrapped:
                flush()
                state.tally.converted_record(read_as, selected, True, map(_KIND, seen))
            else:
                add_source(read_as)
                if selected:
                    add_lossy(read_as)
                add_kinds(seen)
            return output if 10 not in output and 13 not in output else _one_line(output)

        return count, flush

    def _count(self, tally: Tally, counted: Counter, record: bytes) -> bytes | Outcome | None:
        """:meth:`count` with ``counted`` the pipeline's counting of a converted record."""
        o = self._migrate(record, tally, counted)
        if type(o) is Outcome:
            tally.count(o)
        return o

    def _migrate(self, record: bytes, tally: Tally | None, counted: Counter | None = None) -> bytes | Outcome | None:
        """:meth:`record` (``tally`` None), or :meth:`counter`'s function (``counted`` its
        pipeline's) before it counts an :class:`Outcome`."""
        name: str | None = None
        try:
            clean, bom = check_input(record, self._max_depth, depth=False)  # the encoding, before anything reads it
            try:  # the depth: checked by the detection's own parse, before anything else reads it
                top = within_depth(top_level, clean, self._max_depth, bom)
                det: Detection | None = self._classify(top)
                members: dict[str, msgspec.Raw] | None = top
            except EnvglotError:
                members = det = None  # the converter detects again and raises the error with its context
            name = det.dialect if det is not None else None
            if self._passes(record, name, bom):
                if tally is not None:
                    tally.passed_record(self.to)
                    return None
                return Outcome(status="passed", output=record, source=self.to)
            p = self._conv.pipeline  # hand the check and the detection over: each record is detected once
            checked = (clean, bom, det) if det is not None else None
            if not self.details:  # kinds counted, not kept: the fused path where it applies
                if counted is not None and tally is not None:
                    output, read_as, unwrapped, seen, selected = counted(record, checked, members)
                    out = _one_line(output)
                    tally.converted_record(read_as, selected, unwrapped, [k for k, _ in seen])
                    return out
                t = p.tally(record, checked, members)
                return Outcome(
                    status="converted",
                    output=_one_line(t.output),
                    source=t.source,
                    lossy=t.selected,
                    unwrapped=t.unwrapped,
                    kinds=tuple(map(str, t.kinds)),
                )
            conv = p.run(record, Report(p.policy), checked, members)
        except EnvglotError as exc:
            diags = tuple(
                {
                    "kind": str(d.kind),
                    "path": excerpt(d.path, REASON_LIMIT),
                    "message": excerpt(d.message, REASON_LIMIT),
                }
                for d in getattr(exc, "diagnostics", ())
            )
            source = exc.dialect or self.from_ or (name if name != MCP else None)
            return Outcome(
                status="rejected",
                output=None,
                source=source,
                error=excerpt(str(exc), REASON_LIMIT),
                error_type=type(exc).__name__,
                path=None if exc.path is None else excerpt(exc.path, REASON_LIMIT),
                diagnostics=diags,
                details=_details(exc) if self.details else (),
            )
        except Exception as exc:  # a bug of ours must not lose the record (or the run): a reject
            return Outcome(
                status="rejected",
                output=None,
                source=self.from_ or (name if name not in (None, MCP) else None),
                error=internal_reason(exc),
                error_type=INTERNAL_ERROR,
            )
        return Outcome(
            status="converted",
            output=_one_line(conv.output),
            source=conv.source,
            lossy=any(self._policy.selects(d) for d in conv.diagnostics),
            unwrapped=conv.unwrapped,
            kinds=tuple(str(d.kind) for d in conv.diagnostics),
            details=tuple(conv.diagnostics) if self.details else (),
        )

    def lines(self, records: Iterable[bytes]) -> Iterator[Outcome]:
        """Migrate records one by one (a partition-level helper for Dask/Spark)."""
        for rec in records:
            yield self.record(rec)

    def _passes(self, record: bytes, dialect: str | None, bom: bool) -> bool:
        """Whether ``record``, detected as ``dialect`` (``bom``: it began with a byte order mark),
        passes through unchanged: already in the target dialect, without a BOM, and read as valid
        by the target's reader (whose error, raised here, rejects it)."""
        if dialect != self.to or bom:
            return False
        m = self._mappings
        self.target.read(record, Context(m, Report(Level.IGNORE), m[self.to]))
        return True


class _RunCounter:
    """A :meth:`Migrator.counter`'s state for one thread, lent to one run of records at a time:
    the pipeline's counter and the converted records' counts not yet in :attr:`tally`."""

    __slots__ = ("count", "counted", "done", "flush", "kinds", "lossy", "sources", "tally")

    def __init__(self, mig: Migrator, tally: Tally) -> None:
        self.tally = tally
        """The tally of the run it is lent to."""
        self.counted = mig._conv.pipeline.counter()
        self.sources: list[str] = []
        self.lossy: list[str] = []
        self.kinds: list[tuple[Kind, str]] = []
        self.count: Callable[[bytes], bytes | Outcome | None]
        self.flush: Callable[[], None]
        if mig.details:
            self.count = self._general(mig)
            self.flush = _nothing
        else:
            self.count, self.flush = mig._count_fused(self)
        free = mig._counters.__dict__

        def done() -> None:
            self.flush()
            free["free"] = self  # this thread's next run takes it

        self.done = done

    def _general(self, mig: Migrator) -> Callable[[bytes], bytes | Outcome | None]:
        def count(record: bytes) -> bytes | Outcome | None:
            return mig._count(self.tally, self.counted, record)

        return count


def _nothing() -> None:
    """A :meth:`Migrator.counter`'s ``done`` with nothing left to count."""


_KIND = itemgetter(0)
"""The kind of a ``(kind, path)`` pair."""


def _one_line(out: bytes) -> bytes:
    """``out`` as one JSON Lines record (no newline in it)."""
    # bytes by value: ``b"\n" in out`` raises and clears a TypeError before it searches
    return msgspec.json.format(out, indent=-1) if 10 in out or 13 in out else out


def _details(exc: EnvglotError) -> tuple[Diagnostic, ...]:
    return tuple(d for d in getattr(exc, "diagnostics", ()) if isinstance(d, Diagnostic))


def internal_reason(exc: BaseException) -> str:
    """The reject reason of a record that hit a bug: ``internal error: <Type>: <bounded message>``."""
    return f"internal error: {type(exc).__name__}: {excerpt(str(exc))}"


def rebuild_migrator(to: str, opts: dict[str, Any]) -> Migrator:
    return Migrator(to, **opts)


class RejectRecord(msgspec.Struct, omit_defaults=True):
    source: str
    line: int | None
    error: str
    error_type: str | None
    path: str | None
    dialect: str | None
    original: str | None = None
    original_b64: str | None = None
    original_size: int | None = None
    diagnostics: tuple[dict[str, Any], ...] = ()


def reject_line(
    source: str, line: int | None, original: bytes, outcome: Outcome, *, omitted: int | None = None
) -> bytes:
    """One line of the rejects file (JSON + ``\\n``) for a rejected record.

    ``original`` is the record's text when its bytes are valid UTF-8 (so
    ``original.encode("utf-8")`` gives the exact bytes back), else ``original_b64``
    holds the bytes in base64. ``omitted`` (a record too long to read) replaces both by
    ``original_size``: the record's length; its bytes stay in the input only.
    """
    text: str | None = None
    b64: str | None = None
    if omitted is None:
        try:
            text = original.decode("utf-8")
        except UnicodeDecodeError:
            b64 = base64.b64encode(original).decode("ascii")
    rec = RejectRecord(
        source=source,
        line=line,
        error=outcome.error or "rejected",
        error_type=outcome.error_type,
        path=outcome.path,
        dialect=outcome.source,
        original=text,
        original_b64=b64,
        original_size=omitted,
        diagnostics=outcome.diagnostics,
    )
    return ENCODER.encode(rec) + b"\n"
