"""Mapping tables: load the TOML files of ``mappings/`` for the dialects of a registry, validate them.

The tables are data (see ``docs/mappings.md``); this module only reads, checks and
indexes them (their schema and lookups are :mod:`envglot.tables`, re-exported here).
:func:`default_mappings` is built once per process; overlays make a new
:class:`Mappings` that shares nothing mutable with it.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import msgspec

from .errors import MappingError
from .registry import bundled
from .tables import (
    CanonicalTable,
    Category,
    CodePlan,
    CodeRow,
    DialectMap,
    DialectTable,
    ErrorTypeRow,
    ErrorTypesTable,
    Mappings,
    OverlayFile,
    TypeRow,
    WriteRow,
    bundled_table,
    decode_table,
    mappings_dir,
    mappings_root,
    shipped_root,
    type_for,
)

if TYPE_CHECKING:
    from .dialect import Dialect
    from .registry import Deferred, Registry

__all__ = [
    "Category",
    "CodePlan",
    "CodeRow",
    "DialectMap",
    "DialectTable",
    "Mappings",
    "TypeRow",
    "WriteRow",
    "default_mappings",
    "load_mappings",
    "mappings_dir",
    "mappings_for",
    "type_for",
]

_ROW_KEYS = frozenset(ErrorTypeRow.__struct_fields__) - {"words"}


def _error_type_rows(rows: list[ErrorTypeRow], column: str) -> list[WriteRow]:
    out = []
    for r in rows:
        code = r.words.get(column)
        if code is not None:
            out.append(
                WriteRow(
                    category=r.category,
                    code=code,
                    origin=r.origin,
                    upstream=r.upstream,
                    aspect=r.aspect,
                    partial=r.partial,
                    note=r.note,
                )
            )
    return out


def _error_type_row(raw: dict[str, str | bool], where: str, columns: dict[str, Dialect | Deferred]) -> ErrorTypeRow:
    """A flat ``[[row]]`` of ``error-types.toml``: hint keys plus one key per dialect column."""
    words = {k: v for k, v in raw.items() if k not in _ROW_KEYS}
    for k, v in words.items():
        if k not in columns:
            known = ", ".join(sorted(columns))
            raise MappingError(f"{where}: {k!r} is not a column (one of the hints, or a dialect with words: {known})")
        if not isinstance(v, str):
            raise MappingError(f"{where}: {k} must be a string, got {type(v).__name__}")
    try:
        return msgspec.convert({**{k: v for k, v in raw.items() if k in _ROW_KEYS}, "words": words}, ErrorTypeRow)
    except msgspec.ValidationError as exc:
        raise MappingError(f"{where}: {exc}") from None


def load_mappings(
    overlays: Iterable[str | os.PathLike[str]] = (),
    base: str | os.PathLike[str] | None = None,
    registry: Registry | None = None,
) -> Mappings:
    """Load, merge and validate the bundled tables plus ``overlays`` (later files win).

    One table per dialect of ``registry`` (default: the bundled ones) plus one per declaration
    among ``overlays`` (``envglot.declared``): the tables keep that registry
    (:attr:`Mappings.registry`); nothing is registered for the process, and no bundled dialect
    is compiled (its entry's declared facts are what the tables need). The tables are
    ``mappings/<name>.toml``; ``error-types.toml`` has a column per dialect whose codes are
    category words (``shape.open_codes``) or that has a ``[types]`` vocabulary.
    """
    overlays = list(overlays)
    reg = registry if registry is not None else bundled()
    if overlays:  # a declaration file among them adds its dialect to the tables' registry
        from .declared import with_declarations  # only then: the bundled tables never need it

        reg, overlays = with_declarations(overlays, reg)
    root = os.fspath(base) if base is not None else mappings_root()  # (no pathlib to import for it)
    canonical = decode_table(os.path.join(root, "canonical.toml"), CanonicalTable)
    assert isinstance(canonical, CanonicalTable)
    units = {d.name: d for d in reg.entries()}
    shipped = root == shipped_root()
    tables: dict[str, DialectTable] = {}
    files: dict[str, str] = {}
    for name, unit in units.items():
        own = unit.own_table()
        if own is not None:  # a declared dialect: its table is its declaration file
            tables[name], files[name] = own
            continue
        if shipped:  # package data: read once, with the dialect's declared facts
            t, path = bundled_table(name)
        else:
            path = os.path.join(root, f"{name}.toml")
            t = decode_table(path, DialectTable)  # type: ignore[assignment]
            assert isinstance(t, DialectTable)
        if t.dialect != name:
            raise MappingError(f"{path}: dialect = {t.dialect!r}, expected {name!r}")
        tables[name] = t
        files[name] = path
    columns = {n: units[n] for n, t in tables.items() if units[n].shape.open_codes or t.types}
    et_path = os.path.join(root, "error-types.toml")
    et = decode_table(et_path, ErrorTypesTable)
    assert isinstance(et, ErrorTypesTable)
    error_rows = [_error_type_row(r, f"{et_path}: [[row]] #{i + 1}", columns) for i, r in enumerate(et.row)]
    row_files = [(et_path, i + 1) for i in range(len(error_rows))]
    write_extra: dict[str, list[WriteRow]] = {n: [] for n in units}
    sources = [root]
    for ov_path in overlays:
        from pathlib import Path  # overlays only: the bundled tables are read without it

        p = Path(ov_path)
        ov = decode_table(p, OverlayFile)
        assert isinstance(ov, OverlayFile)
        sources.append(str(p))
        if ov.dialect is not None:
            if ov.dialect not in tables:
                raise MappingError(
                    f"{p}: dialect = {ov.dialect!r} is not one of {', '.join(units)}",
                    path="$.dialect",
                )
            base_t = tables[ov.dialect]
            added = sorted(set(ov.codes) - set(base_t.codes))
            if units[ov.dialect].shape.closed and added:
                raise MappingError(
                    f"{p}: {ov.dialect} codes are a closed enum; [codes.{added[0]}] is not one of them "
                    "(an overlay may change how existing codes map, not add codes)",
                    path=f"$.codes.{added[0]}",
                )
            tables[ov.dialect] = msgspec.structs.replace(
                base_t,
                codes={**base_t.codes, **ov.codes},
                types={**base_t.types, **ov.types},
            )
            write_extra[ov.dialect] = list(ov.write) + write_extra[ov.dialect]
            files[ov.dialect] = str(p)
        elif ov.codes or ov.write or ov.types:
            raise MappingError(f"{p}: codes, write and types rows need `dialect = ...`", path="$")
        error_rows = [_error_type_row(r, f"{p}: [[row]] #{i + 1}", columns) for i, r in enumerate(ov.row)] + error_rows
        row_files = [(str(p), i + 1) for i in range(len(ov.row))] + row_files
    dialects: dict[str, DialectMap] = {}
    for name, t in tables.items():
        write = write_extra[name] + list(t.write)
        if units[name].shape.open_codes:  # its codes are category words: its column of error-types.toml
            write = write_extra[name] + _error_type_rows(error_rows, name)
        dialects[name] = DialectMap(t, write, t.types, units[name])
    m = Mappings(canonical, dialects, error_rows, tuple(sources), reg)
    _validate(m, files, et_path, row_files)
    if any(d.declared for d in units.values()):  # its own documents must be detected as itself
        from .declared import check_overlap

        check_overlap(m)
    return m


def _validate(m: Mappings, files: dict[str, str], et_file: str, row_files: list[tuple[str, int]]) -> None:
    cats = m.categories
    if m.unknown_category not in cats:
        raise MappingError(f"canonical.toml: unknown_category {m.unknown_category!r} is not a category")
    if m.refusal.category not in cats:
        raise MappingError(f"canonical.toml: [refusal] category {m.refusal.category!r} is not a category")

    def need_cat(cat: str, where: str) -> None:
        if cat not in cats:
            raise MappingError(f"{where}: category {cat!r} is not one of the canonical categories")

    for name, d in m.dialects.items():
        f = files[name]
        for field in d.synthesize:
            if field not in d.fields:
                raise MappingError(f"{f}: [synthesize] names {field!r}, which is not a field of its [fields] table")
        for code, row in d.codes.items():
            need_cat(row.category, f"{f}: [codes.{code}]")
            if row.type is not None and row.type not in d.types:
                raise MappingError(f"{f}: [codes.{code}] type {row.type!r} is not one of its [types] rows")
        for tname, trow in d.types.items():
            need_cat(trow.category, f"{f}: [types.{tname}]")
        if d.default_category is not None:
            need_cat(d.default_category, f"{f}: [defaults]")
        for cat, rows in d.write.items():
            need_cat(cat, f"{f}: [[write]] category")
            for r in rows:
                if d.shape.open_codes:
                    continue  # open vocabulary: any word is valid
                if r.code not in d.codes:
                    raise MappingError(
                        f"{f}: [[write]] row for {cat!r} names code {r.code!r}, which has no [codes.{r.code}] row"
                    )
        if d.shape.writable:
            # d.write rows are most specific first: a category has an unconditional row iff its last is one
            missing = [c for c in cats if not (last := d.write.get(c)) or last[-1].conditions != 0]
            if missing:
                where = et_file if d.shape.open_codes else f
                raise MappingError(
                    f"{where}: dialect {name!r} has no unconditional writer choice for "
                    f"categor{'y' if len(missing) == 1 else 'ies'} {', '.join(missing)}"
                )
    for et, (f, n) in zip(m.error_types, row_files, strict=True):
        need_cat(et.category, f"{f}: [[row]] #{n}")
        for column, word in et.words.items():
            types = m.dialects[column].types
            if types and word not in types:
                raise MappingError(
                    f"{f}: [[row]] #{n} names {column} word {word!r}, which has no [types] row in {column}.toml"
                )
    for name, d in m.dialects.items():
        if not d.types:
            continue
        unconditional = {r.category for r in _error_type_rows(m.error_types, name) if r.conditions == 0}
        for c in cats:
            if c not in unconditional:
                raise MappingError(f"{et_file}: no unconditional {name} error_type for category {c!r}")
    # duplicate keys cannot survive TOML decoding (the TOML parser rejects them)


@functools.cache
def default_mappings() -> Mappings:
    """The bundled tables, loaded and compiled once per process."""
    return load_mappings()


@functools.lru_cache(maxsize=32)
def _cached_overlays(paths: tuple[str, ...], stamps: tuple[float, ...]) -> Mappings:
    return load_mappings(paths)


def mappings_for(overlays: Sequence[str | os.PathLike[str]] | None) -> Mappings:
    """The bundled tables plus ``overlays`` (cached by path and modification time)."""
    if not overlays:
        return default_mappings()
    paths = tuple(str(p) for p in overlays)
    stamps = []
    for p in paths:
        try:
            stamps.append(os.stat(p).st_mtime)
        except OSError as exc:
            raise MappingError(f"{p}: cannot read mapping overlay: {exc.strerror}") from None
    return _cached_overlays(paths, tuple(stamps))
