"""The plain moves a dialect's ``[fields]`` declares, derived by the compiler (``envglot.derive``).

Two homes cannot disagree silently: for every bundled dialect, what its compiled reader moves
and what its compiled writer copies as it is sit where ``mappings/<name>.toml`` says; a dialect
that derives states no plain move by hand.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
from msgspec import Raw, Struct

from envglot import fields
from envglot.derive import copied_paths, declared_fields, member_keys, moved_paths
from envglot.dialect import Dialect, registered

BUNDLED = tuple(d for d in registered() if not d.declared)


def _name(d: Dialect) -> str:
    return d.name


def _plain(d: Dialect) -> dict[str, str]:
    """``[fields]`` entries of canonical fields at a plain member path."""
    return {f: p for f, p in declared_fields(d.name).items() if f in fields.CANONICAL and member_keys(p) is not None}


@pytest.mark.parametrize("d", BUNDLED, ids=_name)
def test_every_plain_field_is_moved_from_its_declared_path_or_read_by_a_step(d: Dialect) -> None:
    reading, _ = d.steps()
    assert reading is not None
    moved = moved_paths(d)
    steps = {getattr(st, "name", None) for st in reading.steps}  # a hook's, or a move from a hook's value
    for f, path in _plain(d).items():
        assert moved.get(f, path) == path, f"{d.name}: [fields] {f} = {path}, but the reader moves {moved[f]}"
        assert f in steps, f"{d.name}: [fields] {f} = {path}, but the reader never reads {f}"
    for f, path in moved.items():
        assert declared_fields(d.name).get(f) == path, f"{d.name}: the reader moves {f} from {path}, [fields] says not"


@pytest.mark.parametrize("d", tuple(d for d in BUNDLED if d.writing is not None), ids=_name)
def test_every_plain_copy_of_the_writer_is_at_its_declared_path(d: Dialect) -> None:
    declared = declared_fields(d.name)
    for f, paths in copied_paths(d).items():
        assert paths == [declared.get(f)], f"{d.name}: the writer copies {f} to {paths}, not to its [fields] path"


@pytest.mark.parametrize("d", tuple(d for d in BUNDLED if d.reading is not None and d.reading.derive), ids=_name)
def test_a_deriving_dialect_states_no_plain_move_by_hand(d: Dialect) -> None:
    assert d.reading is not None
    plain, moved = _plain(d), moved_paths(d)
    # a Move of a declared field from a hook's value (result's payload from its parts) is no plain move
    restated = [st for st in d.reading.steps if isinstance(st, fields.Move) and st.name in plain and st.name in moved]
    assert not restated, f"{d.name}: {restated} restate [fields]"
    derived, _ = d.steps()
    assert derived is not None
    assert set(moved) == {st.name for st in derived.steps if isinstance(st, fields.Move)} - {
        st.name for st in d.reading.steps if isinstance(st, fields.Move)
    }


def test_dotbot_reads_and_writes_its_audit_members_from_the_declaration() -> None:
    from envglot.dialect import get_dialect

    dotbot = get_dialect("dotbot")
    assert moved_paths(dotbot)["request_id"] == "$.audit.correlation_id"
    assert copied_paths(dotbot)["request_id"] == ["$.audit.correlation_id"]
    assert moved_paths(get_dialect("legacy-v1"))["duration_ms"] == "$.data._meta.timing.duration_ms"


# ---- the derivation itself, on a toy dialect ----------------------------------------------


class _Meta(Struct, omit_defaults=True):
    took: int | None = None


class _Wire(Struct, omit_defaults=True):
    flag: bool = False
    rid: str | None = msgspec.field(default=None, name="requestId")
    meta: _Meta | None = None
    blob: Raw = fields.ABSENT
    note: str | None = None


class _Decoder:
    def decode(self, buf: bytes) -> tuple[_Wire, tuple[Any, ...], None]:
        return msgspec.json.decode(buf, type=_Wire), (), None


class _Toy(Dialect):
    """Not registered (no ``name`` in the class body): a dialect made only to compile."""

    wire = _Wire


class _Ctx:
    def __init__(self) -> None:
        self.mappings: dict[str, None] = {"toy": None}


@pytest.fixture
def table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``mappings/toy.toml`` in a mappings folder of its own."""
    monkeypatch.setenv("ENVGLOT_MAPPINGS_DIR", str(tmp_path))
    (tmp_path / "toy.toml").write_text(
        'dialect = "toy"\n[fields]\nok = "$.flag"\nrequest_id = "$.requestId"\nduration_ms = "$.meta.took"\n'
        'payload = "$.blob"\nsummary = "$.note"\nproblems = "$.errors"\n"problem.code" = "$.errors[].code"\n'
    )
    return tmp_path


def _toy(reading: fields.Reading | None, writing: fields.Writing | None = None) -> Dialect:
    toy = _Toy()
    toy.name = "toy"  # type: ignore[misc]
    toy.reading = reading  # type: ignore[misc]
    toy.writing = writing  # type: ignore[misc]
    return toy


def _problems() -> tuple[Any, ...]:
    return ()


def _summary(w: _Wire) -> str:
    return f"note: {w.note}"


def test_derived_moves_follow_json_names_map_absent_raw_and_a_hook_named_for_a_field_wins(table: Path) -> None:
    hooks = (fields.Let("problems", _problems), fields.Let("summary", _summary))
    toy = _toy(fields.Reading(_Decoder(), *hooks, derive=True))
    reading, _ = toy.steps()
    assert reading is not None
    assert reading.steps[:4] == (
        fields.Move("ok", "w.flag"),
        fields.Move("request_id", "w.rid"),
        fields.Move("duration_ms", "w.meta.took"),
        fields.Move("payload", "w.blob", absent=True),
    )
    read, _, _ = fields.hub(toy)
    env = read(b'{"flag":true,"requestId":"r1","meta":{"took":7},"note":"n"}', _Ctx())
    assert (env.ok, env.request_id, env.duration_ms, env.payload, env.summary) == (True, "r1", 7, None, "note: n")
    assert read(b'{"blob":[1]}', _Ctx()).payload == Raw(b"[1]")


class _Inner(Struct):
    took: int | None = None


def _meta(w: _Wire) -> _Inner:
    return _Inner(took=None if w.meta is None else w.meta.took)


def test_a_let_naming_its_wire_object_roots_the_moves_under_it(table: Path) -> None:
    hooks = (fields.Let("problems", _problems), fields.Let("m", _meta, wire="$.meta"))
    toy = _toy(fields.Reading(_Decoder(), *hooks, derive=True))
    reading, _ = toy.steps()
    assert reading is not None
    names = [getattr(st, "name", None) for st in reading.steps]
    assert names == ["ok", "request_id", "payload", "summary", "problems", "m", "duration_ms"]  # after its root
    assert reading.steps[-1] == fields.Move("duration_ms", "m.took")
    assert moved_paths(toy)["duration_ms"] == "$.meta.took"


class _Held(Struct):
    took: int
    blob: Raw


class _Outer(Struct):
    ok: bool
    held: _Held


class _OuterDecoder:
    def decode(self, buf: bytes) -> tuple[_Outer, tuple[Any, ...], None]:
        return msgspec.json.decode(buf, type=_Outer), (), None


def test_a_hand_move_of_a_wire_struct_roots_the_moves_under_it_and_a_required_raw_is_never_absent(
    table: Path,
) -> None:
    (table / "toy.toml").write_text(
        'dialect = "toy"\n[fields]\nok = "$.ok"\nduration_ms = "$.held.took"\npayload = "$.held.blob"\n'
    )
    toy = _toy(fields.Reading(_OuterDecoder(), fields.Move("held", "w.held"), derive=True))
    toy.wire = _Outer  # type: ignore[misc]
    reading, _ = toy.steps()
    assert reading is not None
    assert reading.steps == (
        fields.Move("ok", "w.ok"),
        fields.Move("held", "w.held"),
        fields.Move("duration_ms", "held.took"),  # from the hand-moved local, right after it
        fields.Move("payload", "held.blob"),  # a required Raw member: no absent check
    )
    assert moved_paths(toy) == {"ok": "$.ok", "duration_ms": "$.held.took", "payload": "$.held.blob"}
    read, _, _ = fields.hub(toy)
    env = read(b'{"ok":true,"held":{"took":3,"blob":{"a":1}}}', _Ctx())
    assert (env.duration_ms, env.payload) == (3, Raw(b'{"a":1}'))


def test_a_plain_path_that_is_no_wire_member_is_refused_when_compiled(table: Path) -> None:
    (table / "toy.toml").write_text('dialect = "toy"\n[fields]\nok = "$.flag"\nsummary = "$.nowhere"\n')
    toy = _toy(fields.Reading(_Decoder(), derive=True))
    with pytest.raises(TypeError, match=r"toy: \[fields\] summary = '\$.nowhere' is no wire member"):
        toy.steps()


def test_build_members_the_build_does_not_give_are_copied_from_their_fields(table: Path) -> None:
    def flag(ok: bool) -> bool:
        return not ok

    writing = fields.Writing(
        fields.Let("flipped", flag),
        fields.Build.of("meta", _Meta),
        fields.Build.of("out", _Wire, flag="flipped", meta="meta"),
        derive=True,
    )
    toy = _toy(None, writing)
    _, w = toy.steps()
    assert w is not None
    assert w.steps[1].members == {"took": "duration_ms"}  # type: ignore[union-attr]
    assert w.steps[2].members == {  # type: ignore[union-attr]
        "flag": "flipped",  # given: not derived, though [fields] names $.flag
        "meta": "meta",
        "rid": "request_id",
        "blob": "payload",
        "note": "summary",
    }
    assert copied_paths(toy) == {
        "duration_ms": ["$.meta.took"],
        "request_id": ["$.requestId"],
        "payload": ["$.blob"],
        "summary": ["$.note"],
    }


def test_a_side_without_derive_is_compiled_as_declared(table: Path) -> None:
    r = fields.Reading(_Decoder(), fields.Move("ok", "w.flag"))
    toy = _toy(r)
    assert toy.steps() == (r, None)
