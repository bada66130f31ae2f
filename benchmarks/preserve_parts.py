"""What a ``preserve=True`` conversion costs on the fused path, by part, and the floor of its definition.

    python benchmarks/preserve_parts.py SOURCE TARGET [--sizes tiny,medium,large] [--count N]

For the reused ``Converter(to=TARGET, from_=SOURCE, unsupported="ignore")`` with and without
``preserve=True`` on the benchmark corpus's SOURCE records, and each part of the residue its
definition gives (``docs/canonical-model.md``, "Preserve mode and the residue"), timed alone on
the same records: the conversion back (the reverse pair's fused function, bound as the pipeline
binds it), the diff of the original and what came back, the digest, the residue's encoding (the
digest included) and its placement in the output (opened, set at the target's slot, encoded).
The floor is ``ignore`` plus the parts: what any exact implementation of the definition costs
that still converts back and diffs. Each figure is the best of ``--rounds`` passes over the same
records, in the measuring thread's CPU time.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from breakdown import arguments, best, documents

import envglot
from envglot import residue
from envglot.context import Context
from envglot.diagnostics import DISCARD
from envglot.dialect import Dialect, get_dialect
from envglot.fields import bound_pair
from envglot.limits import members_of


def main(argv: Sequence[str] | None = None) -> None:
    a = arguments(__doc__, 200, argv)
    src, dst = get_dialect(a.source), get_dialect(a.target)
    print(
        "| size | ignore µs | preserve µs | preserve / ignore | back | diff | digest | residue (with digest) "
        "| placement | floor µs | floor / ignore |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size in a.sizes.split(","):
        items = documents(src.name, size, a.count)
        print(f"| {size} | {row(src, dst, items, a.rounds)} |", flush=True)


def row(src: Dialect, dst: Dialect, items: Sequence[bytes], rounds: int) -> str:
    """One size's cells after the size: the conversions, the parts, the floor."""
    ignore = envglot.Converter(to=dst.name, from_=src.name, unsupported="ignore")
    preserve = envglot.Converter(to=dst.name, from_=src.name, unsupported="ignore", preserve=True)
    pipe = ignore.pipeline
    m = pipe.mappings
    back = bound_pair(dst, src, Context(m, DISCARD, m[dst.name], pipe.synth, True))
    assert back is not None, "the reverse pair takes the hub"
    t_ignore = best(ignore.convert_bytes, items, rounds)  # before the parts' inputs are kept alive
    t_preserve = best(preserve.convert_bytes, items, rounds)
    outs = {x: ignore.convert_bytes(x) for x in items}
    backs = {x: back(outs[x]) or b"" for x in items}
    skip = residue.slot_path(m[src.name].shape.residue)
    slot = list(residue.slot_path(m[dst.name].shape.residue))
    tops = {x: members_of(x) for x in items}  # the pipeline's input checks decode them anyway
    diffs = {x: residue.diff(x, backs[x], skip, tops[x]) for x in items}
    made = {x: residue.encode_residue(src.name, x, *diffs[x]) for x in items}

    def placed(x: bytes) -> bytes:
        doc = residue.open_document(outs[x])
        residue.set_path(doc, slot, made[x])
        return residue.encode(doc)

    parts = [
        best(lambda x: back(outs[x]), items, rounds),
        best(lambda x: residue.diff(x, backs[x], skip, tops[x]), items, rounds),
        best(lambda x: residue.digest(src.name, x), items, rounds),
        best(lambda x: residue.encode_residue(src.name, x, *diffs[x]), items, rounds),
        best(placed, items, rounds),
    ]
    floor = t_ignore + sum(parts) - parts[2]  # the residue's encoding includes the digest
    cells = [t_ignore, t_preserve, t_preserve / t_ignore, *parts, floor, floor / t_ignore]
    return " | ".join(f"{v:.2f}" if i in (2, 9) else f"{v:.1f}" for i, v in enumerate(cells))


if __name__ == "__main__":
    main()
