"""Conformance against the real upstream envelopes in ``../shared/upstream/`` (issue 11).

Each file there is an envelope one of the upstream projects published (documentation
example or test fixture; provenance in its SOURCES.md), in a folder named after its
dialect. For every file: detection gives that dialect; ``validate`` against it finds
nothing, or exactly the violations listed in :data:`BREAKS_CONTRACT` (files SOURCES.md
documents as breaking their own contract); conversion to every other writable dialect
gives a document valid for its target that keeps the outcome, the message, the payload and
the category (or a reported code change); and a ``preserve`` round trip through every other
dialect gives the original back, JSON-equal, with an intermediate valid for its target.

The files are read in place, never copied into the repository; the module is skipped when
the folder is absent (CI has it).
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

import envglot
from envglot import Kind
from envglot.dialects import WRITABLE
from envglot.mappings import default_mappings
from envglot.validation import validate

UPSTREAM = Path(__file__).resolve().parents[1] / ".." / "shared" / "upstream"
if not UPSTREAM.is_dir():
    pytest.skip(f"no upstream envelopes at {UPSTREAM}", allow_module_level=True)

FILES = sorted(str(p.relative_to(UPSTREAM)) for p in UPSTREAM.glob("*/*.json"))
M = default_mappings()

_TOKENS = "approxTokens is {0}; the emitter computes {1} (ceil(length of the compact envelope with approxTokens 0 / 4))"
_NO_ERROR = "missing required field (null on success, a message on failure)"
BREAKS_CONTRACT: dict[str, list[tuple[str, str]]] = {
    # SOURCES.md: "its approxTokens 520 is the doc's, not computed"
    "code-graph/doc-digest-success-suggestion.json": [("$.data.meta.approxTokens", _TOKENS.format(520, 193))],
    # The same doc page's error example carries an illustrative 150 too (SOURCES.md's note does not say so).
    "code-graph/doc-issues-error-invalid-input-details.json": [("$.data.meta.approxTokens", _TOKENS.format(150, 122))],
    # SOURCES.md: "no `error` key and `meta` lacks `version` (shorthand in the docs)"
    "response-v2/doc-quirk-blocked-no-version-no-error.json": [
        ("$.meta.version", "missing required field (expected a string)"),
        ("$.error", _NO_ERROR),
    ],
    # SOURCES.md: "omits the required `error` key"
    "response-v2/doc-quirk-multi-payload-no-error-key.json": [("$.error", _NO_ERROR)],
    "response-v2/doc-success-pagination-no-error-key.json": [("$.error", _NO_ERROR)],
    # SOURCES.md: "the fixture-only top-level key `fixture_version`"
    "response-v2/golden-error-not-found-with-fixture-version.json": [
        ("$.fixture_version", "unknown top-level key (response-v2 allows only success, data, error, meta)")
    ],
}
"""Files documented as breaking their own dialect's contract, with exactly what validate finds."""

READER_REFUSES: dict[str, str] = {
    "response-v2/doc-quirk-blocked-no-version-no-error.json": "$.meta",
    "response-v2/doc-quirk-multi-payload-no-error-key.json": "$",
    "response-v2/doc-success-pagination-no-error-key.json": "$",
}
"""Contract breakers the reader refuses (a ParseError at this path): nothing to convert."""

_EMPTY = {None, b"null", b"{}"}


def _dialect(rel: str) -> str:
    return rel.split("/", 1)[0]


def _data(rel: str) -> bytes:
    return (UPSTREAM / rel).read_bytes()


def _payload(raw: msgspec.Raw | None) -> bytes | None:
    """The payload as a comparison key; absent, ``null`` and ``{}`` all mean "empty"."""
    if raw is None:
        return None
    key = msgspec.json.encode(msgspec.json.decode(raw), order="sorted")
    return None if key in _EMPTY else key


def test_the_upstream_folder_has_every_dialect_and_the_tables_name_real_files() -> None:
    assert FILES and {_dialect(f) for f in FILES} <= set(envglot.DIALECTS)  # not every dialect published any
    assert set(BREAKS_CONTRACT) <= set(FILES)
    assert set(READER_REFUSES) <= set(BREAKS_CONTRACT)


@pytest.mark.parametrize("rel", FILES)
def test_detects_its_dialect(rel: str) -> None:
    assert envglot.detect(_data(rel)) == _dialect(rel)


@pytest.mark.parametrize("rel", FILES)
def test_validates_against_its_own_dialect(rel: str) -> None:
    found = [(v.path, v.message) for v in validate(_data(rel), _dialect(rel))]
    assert found == BREAKS_CONTRACT.get(rel, [])


PAIRS = [(rel, dst) for rel in FILES for dst in WRITABLE if dst != _dialect(rel)]
IDS = [f"{rel}->{dst}" for rel, dst in PAIRS]


@pytest.mark.parametrize(("rel", "dst"), PAIRS, ids=IDS)
def test_converts_to_a_valid_document_keeping_outcome_message_payload_category(rel: str, dst: str) -> None:
    src_name, buf = _dialect(rel), _data(rel)
    if rel in READER_REFUSES:
        with pytest.raises(envglot.ParseError) as exc:
            envglot.convert(buf, from_=src_name, to=dst, unsupported="ignore")
        assert exc.value.path == READER_REFUSES[rel]
        return
    conv = envglot.conversion(buf, from_=src_name, to=dst, unsupported="ignore")
    assert validate(conv.output, dst) == []
    src = envglot.read(buf, from_=src_name, report=envglot.Report("ignore"))
    out = envglot.read(conv.output, from_=dst, report=envglot.Report("ignore"))
    assert out.ok is src.ok
    if _payload(out.payload) != _payload(src.payload):  # left out, and said so (as tests/test_matrix.py)
        assert out.payload is None
        assert (Kind.FIELD_DROPPED, M[src_name].path("payload")) in [(d.kind, d.path) for d in conv.diagnostics]
    if src.summary is not None and "summary" in M[dst].carried:
        assert out.summary == src.summary
    if src.ok:
        assert out.problems == ()
        return
    p, q = src.problems[0], out.problems[0]
    if p.message:
        assert q.message == p.message
    if q.category != p.category:  # a coarser target vocabulary: the code changed, and that was reported
        assert q.code != p.code
        assert any(d.kind in (Kind.CODE_MAPPED, Kind.SYNTHESIZED) for d in conv.diagnostics)
        assert q.category == M[dst].codes[q.code].category


ROUND_TRIPS = [(rel, dst) for rel, dst in PAIRS if _dialect(rel) in WRITABLE and rel not in READER_REFUSES]


@pytest.mark.parametrize(("rel", "dst"), ROUND_TRIPS, ids=[f"{r}->{d}" for r, d in ROUND_TRIPS])
def test_preserve_round_trip_is_json_equal_through_a_valid_intermediate(rel: str, dst: str) -> None:
    src_name, buf = _dialect(rel), _data(rel)
    mid = envglot.convert(buf, from_=src_name, to=dst, preserve=True, unsupported="ignore")
    assert validate(mid, dst) == []
    back = envglot.convert(mid, from_=dst, to=src_name, preserve=True, unsupported="ignore")
    assert msgspec.json.decode(back) == msgspec.json.decode(buf)
