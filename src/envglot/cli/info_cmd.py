"""``envglot dialects``, ``envglot schema`` and ``envglot codes``: what envglot knows, printed."""

from __future__ import annotations

import difflib
import sys
from collections.abc import Sequence
from typing import Any

import click
import msgspec

from ..errors import EnvglotError
from ..mappings import Mappings
from . import exits
from .common import DialectType, load_mappings, mappings_option
from .group import main
from .outputs import echo

__all__ = ["codes", "dialects", "schema"]


_NAME_WIDTH = 16
"""The dialect name column's width (wider only for a longer name): registering a dialect leaves
the other lines of ``envglot dialects`` as they were."""


def _echo_json(obj: Any) -> None:
    echo(msgspec.json.format(msgspec.json.encode(obj), indent=2).decode())


def _table(rows: Sequence[Sequence[str]], min_widths: Sequence[int] = ()) -> list[str]:
    """Rows as left-aligned columns separated by two spaces (no trailing blanks); a column is
    at least as wide as ``min_widths`` says."""
    mins = [*min_widths, *[0] * len(rows[0])][: len(rows[0])]
    widths = [max(m, *(len(r[i]) for r in rows)) for i, m in enumerate(mins)]
    return ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]


@main.command(short_help="List the dialects.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array instead of a table.")
@mappings_option
def dialects(as_json: bool, mappings: tuple[str, ...]) -> None:
    """List the dialect names with a one-line description.

    Read-only dialects (sources only: they have no writer) are marked. Aliases such as
    v2 (response-v2), v1 (legacy-v1) and adr-003 (result) are accepted wherever a
    dialect is expected. --json prints one object per dialect: name, readable,
    writable, aliases, description. Dialects declared in a --mappings file (or the
    configuration's mappings) are listed too.

    \b
    Examples:
      envglot dialects
      envglot dialects --json
      envglot dialects --mappings examples/declared/acme.toml
    """
    reg = load_mappings(mappings).registry  # a declaration's tables are checked (exit 65 when invalid)
    if as_json:
        _echo_json(
            [
                {
                    "name": d.name,
                    "readable": True,
                    "writable": d.shape.writable,
                    "aliases": sorted(d.aliases),
                    "description": d.description,
                }
                for d in reg
            ]
        )
        return
    rows = [(d.name, "read/write" if d.shape.writable else "read", d.description) for d in reg]
    for line in _table(rows, (_NAME_WIDTH,)):
        echo(line)


@main.command(short_help="Print the JSON Schema of a dialect's envelope.")
@click.argument("dialect", type=DialectType())
@click.option("--inline", is_flag=True, help="Resolve every $ref: one self-contained schema (an MCP outputSchema).")
@mappings_option
def schema(dialect: str, inline: bool, mappings: tuple[str, ...]) -> None:
    """Print the JSON Schema (2020-12) of DIALECT's wire envelope.

    The schema is generated from the dialect's msgspec Structs, with shared parts under
    $defs; --inline resolves every $ref so the root is {"type": "object", ...} with no
    references, which is what an MCP tool's outputSchema must be.

    \b
    Examples:
      envglot schema response-v2
      envglot schema errorcode --inline > errorcode.schema.json
    """
    from ..schema import json_schema

    m = load_mappings(mappings)
    try:
        _echo_json(json_schema(dialect, inline=inline, mappings=m))
    except EnvglotError as exc:  # pragma: no cover - a recursive wire Struct would be a bug
        click.echo(f"error: {exc}", err=True)
        sys.exit(exits.EX_DATAERR)


def _yes_no(v: object) -> str:
    return "-" if v is None else str(v).lower()


def _describe(code: str, m: Mappings, dialect: str | None, as_json: bool) -> int:
    from ..crosswalk import describe_code

    entries = describe_code(code, m, dialect)
    if not entries:
        known = sorted({c for name in ([dialect] if dialect else m.dialects) for c in m[name].codes})
        close = difflib.get_close_matches(code, known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        where = f"the {dialect} tables" if dialect else "any dialect's tables"
        click.echo(f"error: code {code!r} is not in {where}{hint}", err=True)
        return exits.EX_FAILED
    if as_json:
        _echo_json(entries)
        return exits.EX_OK
    for i, e in enumerate(entries):
        if i:
            echo("")
        echo(f"{e['code']} ({e['dialect']}{', extension' if e['ext'] else ''})")
        rows = [
            ("category", e["category"]),
            ("http", str(e["http"])),
            ("grpc", str(e["grpc"])),
            ("retryable", f"{_yes_no(e['retryable'])} (from the {e['retryable_source']})"),
        ]
        if e["hints"]:
            rows.append(("hints", ", ".join(f"{k}={_yes_no(v)}" for k, v in e["hints"].items())))
        if e["type"]:
            rows.append(("error_type", e["type"]))
        if e["note"]:
            rows.append(("note", e["note"]))
        for line in _table(rows):
            echo(f"  {line}")
        echo("  equivalents:")
        for line in _table(list(e["equivalents"].items())):
            echo(f"    {line}")
    return exits.EX_OK


def _walk(src: str, dst: str, m: Mappings, as_json: bool) -> None:
    from ..crosswalk import crosswalk

    rows = crosswalk(src, dst, m)
    if as_json:
        _echo_json(rows)
        return
    table = [(src, "category", dst, f"{dst} category", "")]
    for r in rows:
        flags = []
        if r["ext"]:
            flags.append("extension")
        if not r["same_category"]:
            flags.append("category changes")
        table.append((r["code"], r["category"], r["target"], r["target_category"] or "-", ", ".join(flags)))
    for line in _table(table):
        echo(line)


def _list(src: str, m: Mappings, as_json: bool) -> None:
    d = m[src]
    rows = []
    for code, row in d.codes.items():
        cat = m.categories[row.category]
        rows.append(
            {
                "code": code,
                "category": row.category,
                "http": row.http if row.http is not None else cat.http,
                "retryable": row.retryable if row.retryable is not None else cat.retryable,
                "ext": row.ext,
            }
        )
    if as_json:
        _echo_json(rows)
        return
    table: list[tuple[str, str, str, str, str]] = [("code", "category", "http", "retryable", "")]
    table += [
        (str(r["code"]), str(r["category"]), str(r["http"]), _yes_no(r["retryable"]), "extension" if r["ext"] else "")
        for r in rows
    ]
    for line in _table(table):
        echo(line)


@main.command(
    short_help="Look up error codes and crosswalks.",
    epilog="\b\nExit codes:\n  0   printed\n  1   CODE is in no table\n  2   usage error\n"
    "  65  an overlay is invalid\n  66  an overlay cannot be read",
)
@click.argument("code", required=False)
@click.option("--dialect", type=DialectType(), help="Only the code of this dialect (with CODE).")
@click.option("--from", "--read", "from_", type=DialectType(), help="Source dialect of the crosswalk table.")
@click.option("--to", "--write", "to", type=DialectType(writable=True), help="Target dialect of the crosswalk table.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@mappings_option
def codes(
    code: str | None,
    dialect: str | None,
    from_: str | None,
    to: str | None,
    as_json: bool,
    mappings: tuple[str, ...],
) -> None:
    """Look up an error code, or print a dialect's code table or crosswalk.

    With CODE: its category, HTTP status, retryable and its equivalent in every writable
    dialect (for each dialect that knows the code, or only --dialect). With --from and
    --to: every code of the source dialect and the code the target's writer emits for
    it, flagging a change of category. With --from alone: the source's code table.
    Overlays given with --mappings are applied first. Exit 1 if CODE is unknown.

    \b
    Examples:
      envglot codes x_rate_limited
      envglot codes NOT_FOUND --dialect response-v2 --json
      envglot codes --from errorcode --to code-graph
      envglot codes --from dotbot
    """
    if code is not None and (from_ or to):
        raise click.UsageError("give CODE or --from/--to, not both")
    if code is None and dialect is not None:
        raise click.UsageError("--dialect needs a CODE")
    if code is None and from_ is None:
        raise click.UsageError("give a CODE, or --from DIALECT [--to DIALECT]")
    m = load_mappings(mappings)
    if code is not None:
        sys.exit(_describe(code, m, dialect, as_json))
    assert from_ is not None
    if to is not None:
        _walk(from_, to, m, as_json)
    else:
        _list(from_, m, as_json)
