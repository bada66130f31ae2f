"""Regenerate the golden canonical forms and pinned writes from the current code.

Usage::

    python tests/golden/regen.py           # rewrite what changed, list it
    python tests/golden/regen.py --check   # list what would change; exit 1 if anything would

Every file this script writes must be reviewed by a person before it is committed:
a wrong golden is worse than none.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from golden import GOLDEN, PINNED, canonical_form, cases, write


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
    args = parser.parse_args(argv)
    stems = {c.stem for c in cases()}
    unknown = sorted(set(PINNED) - stems)
    if unknown:
        print(f"PINNED names cases that do not exist: {', '.join(unknown)}", file=sys.stderr)
        return 2
    want = _targets()
    existing = set((GOLDEN / "canonical").rglob("*.json")) | set((GOLDEN / "expected").glob("*.json"))
    changed = [p for p, body in want.items() if not p.exists() or p.read_bytes() != body]
    orphans = sorted(existing - set(want))
    for p in changed:
        print(f"{'would write' if args.check else 'wrote'} {p.relative_to(GOLDEN)}")
        if not args.check:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(want[p])
    for p in orphans:
        print(f"{'would remove' if args.check else 'removed'} {p.relative_to(GOLDEN)}")
        if not args.check:
            p.unlink()
    return 1 if args.check and (changed or orphans) else 0


if __name__ == "__main__":
    sys.exit(main())
