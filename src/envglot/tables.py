"""Mapping tables: their schema, reading one TOML file of ``mappings/``, the compiled lookups.

The tables are data (see ``docs/mappings.md``); this module only reads and indexes them.
:mod:`envglot.mappings` loads and validates the whole set (it re-exports these names).

The module evaluates its annotations (no ``from __future__ import annotations``): msgspec reads
the table Structs' types as they are, instead of evaluating strings when a table is first
decoded (about 1 ms of ``import envglot`` with its tables); names only a checker sees are quoted.

Over 500 lines: a table's schema, where it is found and its parsed-document cache, and the
lookups compiled from it change together (one row kind added touches all four).
"""

import os
from collections.abc import Iterable, Iterator, Sequence
from functools import cache
from operator import attrgetter
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import msgspec
from msgspec import Struct

from .errors import EnvglotError, MappingError
from .tomlfile import MAX_TOML_BYTES, parse_toml, read_regular, untrusted

if TYPE_CHECKING:
    from pathlib import Path

    from .dialect import Dialect
    from .registry import Deferred, Registry

__all__ = [
    "HINTS",
    "CanonicalTable",
    "Category",
    "CodePlan",
    "CodeRow",
    "DialectMap",
    "DialectTable",
    "ErrorTypeRow",
    "ErrorTypesTable",
    "Mappings",
    "OverlayFile",
    "TypeRow",
    "WriteRow",
    "bundled_table",
    "conditions",
    "decode_table",
    "error_path",
    "locate_error",
    "mappings_dir",
    "mappings_root",
    "matching",
    "most_specific_first",
    "shipped_dir",
    "shipped_root",
    "toml_document",
    "type_for",
]

HINTS = ("origin", "upstream", "aspect")


class _Table(Struct, forbid_unknown_fields=True, omit_defaults=True):
    pass


class Category(_Table):
    grpc: int
    http: int
    retryable: bool
    title: str
    meaning: str


class Inference(_Table):
    """How a failure is read from an object that is no envelope (an MCP ``isError`` result)."""

    message_keys: list[str] = msgspec.field(default_factory=list)
    """Top-level string keys tried in order for the error message."""


class Refusal(_Table):
    """The failure a face answers with when the core refuses a document (``[refusal]``)."""

    category: str
    origin: str | None = None
    aspect: str | None = None


class CanonicalTable(_Table):
    unknown_category: str
    categories: dict[str, Category]
    refusal: Refusal
    inference: Inference = msgspec.field(default_factory=Inference)


class CodeRow(_Table):
    """How one native code reads into the canonical model."""

    category: str
    retryable: bool | None = None
    origin: str | None = None
    upstream: str | None = None
    aspect: str | None = None
    partial: bool = False
    http: int | None = None
    type: str | None = None
    ext: bool = False
    note: str | None = None


class WriteRow(_Table):
    """A writer choice: for this category (and hints, if given) emit ``code``."""

    category: str
    code: str
    origin: str | None = None
    upstream: str | None = None
    aspect: str | None = None
    partial: bool | None = None
    note: str | None = None

    @property
    def conditions(self) -> int:
        """How many hints (and ``partial``) the row requires: the more, the more specific."""
        return conditions(self)


class TypeRow(_Table):
    """A category word of the dialect (response-v2 ``error_type``)."""

    category: str
    retryable: bool | None = None
    origin: str | None = None
    upstream: str | None = None
    aspect: str | None = None
    http: int | None = None
    ext: bool = False
    note: str | None = None


class Defaults(_Table):
    category: str = "internal"


class DialectTable(_Table):
    """One ``mappings/<dialect>.toml`` file (or an overlay for it)."""

    dialect: str
    declare: dict[str, object] = {}
    """``[declare]``: checked where the dialect is compiled (``envglot.dialect``, ``envglot.declared``)."""
    fields: dict[str, str] = {}
    codes: dict[str, CodeRow] = {}
    write: list[WriteRow] = []
    types: dict[str, TypeRow] = {}
    defaults: Defaults | None = None
    synthesize: dict[str, str | int] = {}
    """Rule values for canonical fields the dialect requires when the source lacks them."""


class ErrorTypeRow(_Table):
    """One row of ``error-types.toml`` (or an overlay): a category's word in each dialect that has one.

    In the file a row is flat: the hint keys below plus one key per dialect column
    (``result = "not_found"``); the columns are gathered in ``words``.
    """

    category: str
    words: dict[str, str] = {}
    """Dialect name -> that dialect's word for the category."""
    origin: str | None = None
    upstream: str | None = None
    aspect: str | None = None
    partial: bool | None = None
    note: str | None = None


class ErrorTypesTable(_Table):
    row: list[dict[str, str | bool]] = []


class OverlayFile(_Table):
    """A user overlay: rows for one dialect, or error-type rows, or both."""

    dialect: str | None = None
    codes: dict[str, CodeRow] = {}
    write: list[WriteRow] = []
    types: dict[str, TypeRow] = {}
    row: list[dict[str, str | bool]] = []


def mappings_dir() -> "Path":
    """The folder holding the bundled tables: ``ENVGLOT_MAPPINGS_DIR``, else :func:`shipped_dir`."""
    from pathlib import Path  # not imported with envglot: loading the tables uses mappings_root

    return Path(mappings_root())


def mappings_root() -> str:
    """:func:`mappings_dir` as a string path (``ENVGLOT_MAPPINGS_DIR`` as given)."""
    return os.environ.get("ENVGLOT_MAPPINGS_DIR") or shipped_root()


def shipped_dir() -> "Path":
    """:func:`shipped_root` as a path."""
    from pathlib import Path

    return Path(shipped_root())


@cache
def shipped_root() -> str:
    """The folder of the tables shipped with envglot (inside the wheel, or the repo's
    ``mappings/``): where the bundled dialects' ``[declare]`` tables are read, whatever
    ``ENVGLOT_MAPPINGS_DIR`` says (it replaces the tables, not what the dialects are). Found
    once per process (it resolves and stats paths)."""
    here = os.path.dirname(os.path.realpath(__file__))  # inside the wheel, or the repo's (no importlib.resources)
    for folder in (os.path.join(here, "mappings"), os.path.join(os.path.dirname(os.path.dirname(here)), "mappings")):
        if os.path.isdir(folder):
            return folder
    raise MappingError("envglot cannot find its mapping tables (no envglot/mappings in the package)")


_ROW_TYPES: dict[str, type] = {"codes": CodeRow, "types": TypeRow}


def toml_document(buf: bytes, source: str) -> object:
    """The TOML document in ``buf`` (from ``source``) within :mod:`envglot.tomlfile`'s limits (else a
    ``MappingError``), memoized on disk: msgpack reads it ~10x faster than TOML is parsed. The cache
    file (named by CRC-32 and length, written atomically) holds envglot's version, the TOML bytes and
    the document: used only if both equal exactly and the file is this user's own; else a miss."""
    import zlib

    from .version import __version__

    folder = os.environ.get("ENVGLOT_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "envglot")
    cache = os.path.join(folder, f"toml-{zlib.crc32(buf):08x}-{len(buf)}.msgpack")
    try:  # only a regular file of ours that no one else can write (the tables decide outcomes)
        raw = read_regular(cache, "cache", limit=9 * MAX_TOML_BYTES, check=_own_file)
        version, text, doc = msgspec.msgpack.decode(raw, type=tuple[str, bytes, dict[str, Any]])
        if version == __version__ and text == buf:
            return doc
    except (EnvglotError, msgspec.DecodeError):
        pass
    doc = parse_toml(buf, source, error=MappingError)
    import tempfile  # only on a cache miss: with the cache warm, loading the tables never needs it

    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=os.path.basename(cache), suffix=".tmp")  # O_EXCL
        with os.fdopen(fd, "wb") as fh:
            fh.write(msgspec.msgpack.encode((__version__, buf, doc)))
        os.replace(tmp, cache)
    except (OSError, TypeError):
        pass
    return doc


def _own_file(st: os.stat_result) -> None:
    why = untrusted(st)
    if why is not None:
        raise EnvglotError(why)


def decode_table(path: str | os.PathLike[str], typ: type) -> object:
    buf = read_regular(path, "mapping table", error=MappingError)
    doc = toml_document(buf, str(path))
    try:
        return msgspec.convert(doc, type=typ, str_keys=True)
    except msgspec.ValidationError as exc:
        raise MappingError(f"{path}: {locate_error(buf, exc)}", path=error_path(str(exc))) from None


@cache
def bundled_table(name: str) -> tuple[DialectTable, str]:
    """``mappings/<name>.toml`` as shipped (in :func:`shipped_root`) and its path, read and decoded
    once per process: the bundled dialect's declared facts and the default tables share it
    (package data; a table of ``ENVGLOT_MAPPINGS_DIR`` is read by :func:`decode_table` each time)."""
    path = os.path.join(shipped_root(), f"{name}.toml")
    table = decode_table(path, DialectTable)
    assert isinstance(table, DialectTable)
    return table, path


def locate_error(buf: bytes, exc: msgspec.ValidationError) -> str:
    """The validation message, naming the ``[codes.X]``/``[types.X]`` row at fault."""
    msg = str(exc)
    for section, row_type in _ROW_TYPES.items():
        if f"$.{section}[...]" not in msg:
            continue
        rows = parse_toml(buf, "", error=MappingError).get(section, {})  # parsed once already: within limits
        for key, row in rows.items():
            try:
                msgspec.convert(row, row_type)
            except msgspec.ValidationError as row_exc:
                return f"[{section}.{key}]: {row_exc}"
    return msg


def error_path(msg: str) -> str | None:
    i = msg.rfind("at `")
    return msg[i + 4 : msg.rfind("`")] if i >= 0 else None


class CodePlan(NamedTuple):
    """Everything a dialect's code implies, derived once (the problem plan).

    Writers and the contract checks read these values from here, never from the rows
    directly, so envglot's own output validates under any overlay.
    """

    code: str
    category: str
    retryable: bool
    """The row's own ``retryable``, else its category's default."""
    retryable_source: str
    """``"code"`` or ``"category"``."""
    http: int
    """The row's ``http``, else its category's."""
    word: str | None
    """The dialect's category word the code belongs to (``type``), if the row names one."""
    ext: bool
    row: CodeRow
    """The row itself (its hints, ``note``): read from here, not from the table again."""


_Choice = TypeVar("_Choice", WriteRow, ErrorTypeRow)


_CONDITIONS = attrgetter(*HINTS, "partial")
"""A writer-choice row's hints and ``partial``, as a tuple (``None`` where the row says nothing)."""


def conditions(row: WriteRow | ErrorTypeRow) -> int:
    """How many hints (and ``partial``) a writer-choice row requires: the more, the more specific."""
    said: tuple[object, ...] = _CONDITIONS(row)
    return len(said) - said.count(None)


def most_specific_first(rows: Iterable[_Choice]) -> tuple[_Choice, ...]:
    """``rows`` with the most conditions first, table order among equals (a stable sort)."""
    return tuple(sorted(rows, key=lambda r: -conditions(r)))


def matching(
    rows: Iterable[_Choice], origin: str | None, upstream: str | None, aspect: str | None, partial: bool
) -> Iterator[_Choice]:
    """The writer-choice matcher: the rows (``[[write]]`` rows, ``error-types.toml`` rows) whose
    every stated hint is the problem's, in the order given (:func:`most_specific_first`)."""
    for r in rows:
        if (
            (r.origin is None or r.origin == origin)
            and (r.upstream is None or r.upstream == upstream)
            and (r.aspect is None or r.aspect == aspect)
            and (r.partial is None or r.partial == partial)
        ):
            yield r


def _meaning_keys(fields: dict[str, str]) -> tuple[str | None, str | None]:
    """:attr:`DialectMap.meaning_keys` of a table's ``[fields]``."""
    base = fields.get("problem.details")
    if base is None:
        return None, None
    keys = [fields.get(f) for f in ("problem.category", "problem.retryable")]
    inside = [k[len(base) + 1 :] if k is not None and k.startswith(base + ".") else None for k in keys]
    return inside[0], inside[1]


class DialectMap:
    """Compiled lookups for one dialect: code -> row, category -> writer choices."""

    __slots__ = (
        "_choice_cache",
        "_plans",
        "carried",
        "codes",
        "default_category",
        "description",
        "fields",
        "meaning_keys",
        "name",
        "shape",
        "synthesize",
        "tables",
        "types",
        "write",
    )

    def __init__(
        self,
        table: DialectTable,
        write: Sequence[WriteRow],
        types: dict[str, TypeRow],
        dialect: "Dialect | Deferred",
    ) -> None:
        self.name = table.dialect
        self.description = dialect.description
        self.shape = dialect.shape
        self.fields = dict(table.fields)
        self.synthesize = dict(table.synthesize)
        self.carried = frozenset(self.fields)
        self.meaning_keys = _meaning_keys(self.fields)
        """The members of an error's ``details`` where the table keeps a category and a ``retryable``
        its codes cannot say (``problem.category`` / ``problem.retryable`` rows inside
        ``problem.details``); ``None`` for a place the table does not declare."""
        self.codes = dict(table.codes)
        self.types = dict(types)
        self.default_category = table.defaults.category if table.defaults else None
        by_cat: dict[str, list[WriteRow]] = {}
        for row in write:
            by_cat.setdefault(row.category, []).append(row)
        self.write = {c: most_specific_first(rows) for c, rows in by_cat.items()}
        self._choice_cache: dict[tuple[object, ...], str] = {}
        self._plans: dict[str, CodePlan] = {}
        self.tables: Mappings | None = None
        """The :class:`Mappings` this dialect's tables belong to (set when they are built)."""

    @property
    def constants(self) -> frozenset[str]:
        """JSON paths of the constants inside the optional objects of the dialect's contract
        (derived from its wire Struct on first use, not when the tables load)."""
        assert self.tables is not None, "a DialectMap is built by load_mappings"
        return self.tables.registry.get(self.name).optional_constants()

    def path(self, field: str, index: int | None = None) -> str | None:
        """The wire path of a canonical field in this dialect, with ``[]`` filled by ``index``."""
        p = self.fields.get(field)
        if p is not None and index is not None:
            p = p.replace("[]", f"[{index}]", 1)
        return p

    def plan(self, code: str) -> CodePlan | None:
        """What ``code`` implies in this dialect (``None`` for a code the tables do not know)."""
        hit = self._plans.get(code)
        if hit is not None:
            return hit
        row = self.codes.get(code)
        if row is None or self.tables is None:
            return None
        cat = self.tables.categories[row.category]
        hit = CodePlan(
            code=code,
            category=row.category,
            retryable=row.retryable if row.retryable is not None else cat.retryable,
            retryable_source="code" if row.retryable is not None else "category",
            http=row.http if row.http is not None else cat.http,
            word=row.type,
            ext=row.ext,
            row=row,
        )
        self._plans[code] = hit
        return hit

    def _retryable(self, code: str) -> bool | None:
        plan = self.plan(code)
        return plan.retryable if plan is not None else None

    def choose(
        self,
        category: str,
        code: str | None = None,
        domain: str | None = None,
        origin: str | None = None,
        upstream: str | None = None,
        aspect: str | None = None,
        partial: bool = False,
        retryable: bool | None = None,
    ) -> str:
        """The native code a writer of this dialect emits for a canonical problem.

        The problem's own code when this dialect minted it (or it has the same category here),
        else the first matching ``[[write]]`` row. A stated ``retryable`` the chosen code would
        contradict picks, among codes of the same category, the first matching row's code that
        agrees, else the first documented code row of the category that agrees (so meaning
        never flips through a round trip); none agreeing, the choice stands.
        """
        key = (category, code, domain, origin, upstream, aspect, partial, retryable)
        hit = self._choice_cache.get(key)
        if hit is not None:
            return hit
        choice = None
        if code is not None:
            row = self.codes.get(code)
            if row is not None and (domain == self.name or row.category == category):
                choice = code
        if choice is None:
            rows = [w.code for w in matching(self.write.get(category, ()), origin, upstream, aspect, partial)]
            choice = rows[0] if rows else None
            if choice is not None and retryable is not None and self._retryable(choice) not in (None, retryable):
                agreeing = [c for c in rows if self._retryable(c) == retryable] or [
                    c
                    for c, r in self.codes.items()
                    if r.category == category and not r.ext and self._retryable(c) == retryable
                ]
                choice = agreeing[0] if agreeing else choice
        if choice is None:  # validated away for bundled tables; overlays are checked too
            raise MappingError(f"{self.name}: no writer choice for category {category!r}")
        if len(self._choice_cache) < 4096:
            self._choice_cache[key] = choice
        return choice


class Mappings:
    """All tables, validated and compiled. Build with :func:`load_mappings`."""

    def __init__(
        self,
        canonical: CanonicalTable,
        dialects: dict[str, DialectMap],
        error_types: list[ErrorTypeRow],
        sources: tuple[str, ...],
        registry: "Registry",
    ) -> None:
        self.registry = registry
        """The dialects these tables are for (bundled, plus the declarations loaded with them)."""
        self.categories = canonical.categories
        self.unknown_category = canonical.unknown_category
        self.message_keys = tuple(canonical.inference.message_keys)
        self.refusal = canonical.refusal
        self.dialects = dialects
        for d in dialects.values():
            d.tables = self
        self.error_types = error_types
        self.sources = sources
        self.error_types_by_specificity = most_specific_first(error_types)

    def __getitem__(self, dialect: str) -> DialectMap:
        try:
            return self.dialects[dialect]
        except KeyError:
            raise MappingError(
                f"no table for dialect {dialect!r} in these mappings (a declared dialect lives in the tables "
                "loaded with its declaration: pass it in mappings=)"
            ) from None

    def default_retryable(self, category: str) -> bool:
        return self.categories[category].retryable

    def http(self, category: str) -> int:
        return self.categories[category].http


def type_for(
    m: Mappings,
    dialect: str,
    category: str,
    origin: str | None,
    upstream: str | None,
    aspect: str | None,
    partial: bool,
) -> str:
    """``dialect``'s word for a canonical category (its column of ``error-types.toml``).

    Like :meth:`DialectMap.choose`: the most specific matching row wins, file order among equals.
    """
    for r in matching(m.error_types_by_specificity, origin, upstream, aspect, partial):
        word = r.words.get(dialect)
        if word is not None and r.category == category:
            return word
    raise MappingError(f"error-types.toml: no {dialect} word for {category!r}")
