"""What a ``preserve=True`` conversion costs on the fused path, by part, and its floor.

    python benchmarks/preserve_parts.py SOURCE TARGET [--sizes tiny,medium,large] [--count N]

For the reused ``Converter(to=TARGET, from_=SOURCE, unsupported="ignore")`` with and without
``preserve=True`` on the benchmark corpus's SOURCE records, and each part of the version 5
residue (``docs/canonical-model.md``, "Preserve mode and the residue"), timed alone on the same
records: the digest (of the original's bytes less the taken members, a success's payload or a
failure's details, and their bytes), the residue (the members compared with the target's, the rest encoded, the digest
included) and its placement in the output (opened, set at the
target's slot, encoded). The floor is ``ignore`` plus the residue and its placement: what the
residue's own work costs. "residue / document" is the residue's size over the document's.
Each figure is the best of ``--rounds`` passes over the same records, in the measuring thread's
CPU time.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from breakdown import arguments, best, documents

import envglot
from envglot import residue
from envglot.dialect import Dialect, get_dialect
from envglot.limits import members_of


def main(argv: Sequence[str] | None = None) -> None:
    a = arguments(__doc__, 200, argv)
    src, dst = get_dialect(a.source), get_dialect(a.target)
    print(
        "| size | ignore µs | preserve µs | preserve / ignore | digest | residue (with digest) "
        "| placement | floor µs | floor / ignore | residue / document |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size in a.sizes.split(","):
        items = documents(src.name, size, a.count)
        print(f"| {size} | {row(src, dst, items, a.rounds)} |", flush=True)


def row(src: Dialect, dst: Dialect, items: Sequence[bytes], rounds: int) -> str:
    """One size's cells after the size: the conversions, the parts, the floor, the size ratio."""
    ignore = envglot.Converter(to=dst.name, from_=src.name, unsupported="ignore")
    preserve = envglot.Converter(to=dst.name, from_=src.name, unsupported="ignore", preserve=True)
    m = ignore.pipeline.mappings
    t_ignore = best(ignore.convert_bytes, items, rounds)  # before the parts' inputs are kept alive
    t_preserve = best(preserve.convert_bytes, items, rounds)
    outs = {x: ignore.convert_bytes(x) for x in items}
    there = m[dst.name]
    slot = list(residue.slot_path(there.shape.residue))
    takes = residue.take_paths(m[src.name].fields, there.fields, there.shape.residue)
    tops = {x: members_of(x) for x in items}  # the pipeline's input checks decode them anyway
    outs_top = {x: residue.open_document(outs[x]) for x in items}
    made = {x: residue.whole(src.name, x, tops[x], outs_top[x], takes) for x in items}

    def placed(x: bytes) -> bytes:
        doc = residue.open_document(outs[x])
        residue.set_path(doc, slot, made[x])
        return residue.encode(doc)

    # the digest the residue records: of the rest and the taken members' bytes
    kept = {x: residue.decode_residue(made[x], "$") for x in items}
    taken = {
        x: (
            bytes(kept[x].set[0][1]),
            *(bytes(residue.value_at(outs_top[x], residue.parse_path(t)) or b"") for _, t in kept[x].take),
        )
        for x in items
    }

    def signed(x: bytes) -> str:
        if kept[x].v >= 5:
            return residue.digest_bytes(src.name, taken[x][0], taken[x][1:])
        if kept[x].v >= 4:
            return residue.digest_parts(src.name, taken[x][0], taken[x][1:])
        return residue.digest(src.name, x)

    parts = [
        best(signed, items, rounds),
        best(lambda x: residue.whole(src.name, x, tops[x], outs_top[x], takes), items, rounds),
        best(placed, items, rounds),
    ]
    floor = t_ignore + parts[1] + parts[2]  # the residue includes the digest
    size = sum(len(made[x]) for x in items) / sum(map(len, items))
    cells = [t_ignore, t_preserve, t_preserve / t_ignore, *parts, floor, floor / t_ignore, size]
    return " | ".join(f"{v:.2f}" if i in (2, 7, 8) else f"{v:.1f}" for i, v in enumerate(cells))


if __name__ == "__main__":
    main()
