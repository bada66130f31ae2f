"""Regenerate the golden canonical forms and pinned writes from the current code.

Usage::

    python tests/golden/regen.py                     # rewrite what changed, list it
    python tests/golden/regen.py --check             # list what would change; exit 1 if anything would
    python tests/golden/regen.py --pin CASE TARGET   # pin a new write: create expected/CASE.TARGET.json

A write is pinned by its file in ``tests/dialects/<dialect>/expected/`` (why: that folder's
``README.md``); no list is kept in code.

Every file this script writes must be reviewed by a person before it is committed:
a wrong golden is worse than none.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envglot.dialect import writable_names
from golden import DIALECTS, canonical_form, cases, pinned_writes, write, written_files


def _targets() -> dict[Path, bytes]:
    """Every golden file the corpus calls for, with its expected content."""
    out: dict[Path, bytes] = {}
    for case in cases():
        out[case.canonical_path] = canonical_form(case)
        for target in case.pinned:
            out[case.expected_path(target)] = write(case, target)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report; exit 1 if a file would change")
    parser.add_argument("--pin", nargs=2, metavar=("CASE", "TARGET"), help="pin the write of CASE to TARGET")
    args = parser.parse_args(argv)
    by_stem = {c.stem: c for c in cases()}
    unknown = sorted(set(pinned_writes()) - set(by_stem))
    bad = sorted(f"{s}.{t}" for s, ts in pinned_writes().items() for t in ts if t not in writable_names())
    if unknown or bad:
        what = ", ".join(unknown + bad)
        print(f"expected/ folders pin writes of no case or to no writable dialect: {what}", file=sys.stderr)
        return 2
    if args.pin:
        stem, target = args.pin
        if stem not in by_stem or target not in writable_names():
            print(f"--pin: no case {stem!r} or {target!r} is not a writable dialect", file=sys.stderr)
            return 2
        path = by_stem[stem].expected_path(target)
        path.write_bytes(write(by_stem[stem], target))
        print(f"pinned {path.relative_to(DIALECTS)}: review it")
        return 0
    want = _targets()
    existing = written_files()
    changed = [p for p, body in want.items() if not p.exists() or p.read_bytes() != body]
    orphans = sorted(existing - set(want))
    for p in changed:
        print(f"{'would write' if args.check else 'wrote'} {p.relative_to(DIALECTS)}")
        if not args.check:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(want[p])
    for p in orphans:
        print(f"{'would remove' if args.check else 'removed'} {p.relative_to(DIALECTS)}")
        if not args.check:
            p.unlink()
    return 1 if args.check and (changed or orphans) else 0


if __name__ == "__main__":
    sys.exit(main())
