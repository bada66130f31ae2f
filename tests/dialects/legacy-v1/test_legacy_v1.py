"""legacy-v1 (read-only): goldens, the outcome rules of shape A and B, the migration to response-v2."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

import envglot
from dialects.golden_suite import GoldenSuite
from envglot import Kind
from envglot.dialect import get_dialect
from envglot.dialects import WRITABLE, legacy_v1
from envglot.residue import parse_path
from golden import cases


class TestLegacyV1(GoldenSuite):
    dialect = "legacy-v1"

    def test_is_read_only(self) -> None:
        assert "legacy-v1" not in WRITABLE
        with pytest.raises(envglot.EnvglotError, match="read-only"):
            envglot.write(envglot.Envelope(ok=True), "legacy-v1")

    @pytest.mark.parametrize(
        ("doc", "ok", "message"),
        [
            ({"found": False, "spec_id": "s"}, True, None),  # found: false is not a failure by itself
            ({"found": True}, True, None),
            ({"specs": [], "count": 0}, True, None),  # no flag at all
            ({"error": "Task not found: task-9"}, False, "Task not found: task-9"),
            ({"found": False, "error": "gone"}, False, "gone"),
            ({"specs": [], "count": 0, "error": "no dir"}, False, "no dir"),
            ({"success": False, "error": "bad"}, False, "bad"),
            ({"success": True, "error": None, "results": []}, True, None),
            ({"error": None, "count": 1}, True, None),
            ({"error": ""}, True, None),
        ],
    )
    def test_shape_a_outcome(self, doc: dict, ok: bool, message: str | None) -> None:
        env = envglot.read(msgspec.json.encode(doc), from_="legacy-v1")
        assert env.ok is ok
        assert (env.problems[0].message if env.problems else None) == message

    @pytest.mark.parametrize(
        ("doc", "warnings"),
        [
            ({"success": True, "error": "partial index"}, []),
            ({"success": True, "count": 1, "error": "partial index"}, []),
            ({"success": True, "data": {"n": 1}, "error": "partial index"}, []),
            ({"success": True, "data": {"n": 1, "_warnings": ["stale"]}, "error": "partial index"}, ["stale"]),
        ],
    )
    def test_success_beside_an_error_is_a_failure(self, doc: dict, warnings: list[str]) -> None:
        """A failure marker can only make a failure (issue 23): the failure wins, reported."""
        report = envglot.Report("ignore")
        env = envglot.read(msgspec.json.encode(doc), from_="legacy-v1", report=report)
        assert not env.ok and [p.message for p in env.problems] == ["partial index"]
        assert [w.message for w in env.warnings] == warnings
        assert [(d.kind, d.path) for d in report] == [(Kind.STATUS_MISMATCH, "$.error")]
        assert [v.path for v in envglot.validate(msgspec.json.encode(doc))] == ["$.error"]

    @pytest.mark.parametrize(
        ("doc", "message"),
        [
            ({"success": False, "data": {}, "error": "gone"}, "gone"),
            ({"success": False, "data": {}, "error": None}, ""),
            ({"success": False, "error": None}, ""),
        ],
    )
    def test_a_stated_failure_stays_a_failure(self, doc: dict, message: str) -> None:
        report = envglot.Report("ignore")
        env = envglot.read(msgspec.json.encode(doc), from_="legacy-v1", report=report)
        assert not env.ok
        assert [p.message for p in env.problems] == [message]
        assert env.warnings == () and list(report) == []

    @pytest.mark.parametrize(
        ("stem", "dropped"),
        [("a-success-docs", "$.schema_version"), ("b-interim-meta-warnings", "$.data._meta.version")],
    )
    def test_version_markers_are_dropped_and_reported(self, stem: str, dropped: str) -> None:
        case = next(c for c in cases("legacy-v1") if c.stem == stem)
        conv = envglot.conversion(case.data, to="response-v2", unsupported="ignore")
        assert (Kind.FIELD_DROPPED, dropped) in [(d.kind, d.path) for d in conv.diagnostics]
        assert b"schema_version" not in conv.output

    def test_interim_metadata_moves_to_meta(self) -> None:
        case = next(c for c in cases("legacy-v1") if c.stem == "b-interim-meta-warnings")
        doc = msgspec.json.decode(envglot.convert(case.data, to="response-v2"))
        assert "_meta" not in doc["data"] and "_warnings" not in doc["data"]
        assert doc["meta"]["warnings"] == ["spec has no phases"]
        assert doc["meta"]["telemetry"] == {"duration_ms": 12}
        assert doc["meta"]["pagination"] == {"has_more": False, "total_count": 1, "offset": 0, "limit": 50}

    @pytest.mark.parametrize(
        ("data", "warnings", "duration_ms"),
        [
            ({"n": 1, "_meta": None}, [], None),
            ({"n": 1, "_warnings": None}, [], None),
            ({"n": 1, "_meta": None, "_warnings": None}, [], None),
            ({"n": 1, "_meta": None, "_warnings": ["w"]}, ["w"], None),
            ({"n": 1, "_meta": {"timing": {"duration_ms": 4}}, "_warnings": None}, [], 4),
            ({"n": 1, "_meta": {"pagination": None, "timing": None, "version": None}}, [], None),
        ],
    )
    def test_null_reserved_members_are_absent(self, data: dict, warnings: list[str], duration_ms: int | None) -> None:
        doc = msgspec.json.encode({"success": True, "data": data, "error": None})
        report = envglot.Report("ignore")
        env = envglot.read(doc, from_="legacy-v1", report=report)
        assert msgspec.json.decode(env.payload) == {"n": 1}
        assert [w.message for w in env.warnings] == warnings
        assert (env.duration_ms, env.pagination, env.extras) == (duration_ms, None, ())
        assert list(report) == [] and envglot.validate(doc) == []

    @pytest.mark.parametrize(
        ("data", "path"),
        [
            ({"_meta": []}, "$.data._meta"),
            ({"_meta": {"timing": {"duration_ms": "4"}}}, "$.data._meta"),
            ({"_warnings": "w"}, "$.data._warnings"),
            ({"_warnings": [None]}, "$.data._warnings"),
        ],
    )
    def test_bad_reserved_members_are_parse_errors(self, data: dict, path: str) -> None:
        doc = msgspec.json.encode({"success": True, "data": data, "error": None})
        with pytest.raises(envglot.ParseError) as exc:
            envglot.read(doc, from_="legacy-v1")
        assert exc.value.path == path

    @pytest.mark.parametrize(
        ("doc", "payload"),
        [
            ({"count": 1}, {"count": 1}),
            ({"success": True, "data": {"n": 1}, "error": None}, {"n": 1}),
        ],
    )
    def test_the_member_at_the_declared_residue_place_is_set_aside(self, doc: dict, payload: dict) -> None:
        residue = {"v": 1}
        (key,) = parse_path(get_dialect("legacy-v1").shape.residue)
        env = envglot.read(msgspec.json.encode({**doc, key: residue}), from_="legacy-v1")
        assert msgspec.json.decode(env.payload) == payload
        assert env.residue is not None and msgspec.json.decode(env.residue) == residue

    @pytest.mark.parametrize("path", ["$.meta._envglot", "$[0]", "$"])
    def test_a_residue_place_below_the_top_level_is_refused(self, path: str) -> None:
        with pytest.raises(envglot.EnvglotError, match="top-level member"):
            legacy_v1._top_member(path)

    def test_a_failure_migrates_with_foundry_default_error_fields(self) -> None:
        conv = envglot.conversion(b'{"error": "Task not found: task-9"}', to="response-v2", unsupported="ignore")
        doc = msgspec.json.decode(conv.output)
        assert doc["success"] is False
        assert doc["error"] == "Task not found: task-9"
        assert doc["data"] == {"error_code": "INTERNAL_ERROR", "error_type": "internal"}
        assert [d.kind for d in conv.diagnostics] == [Kind.SYNTHESIZED]

    @pytest.mark.parametrize(
        ("doc", "interim"),
        [
            (b'{"success":true,"data":{"n":1},"error":null}', True),
            (b'{"success":false,"data":{},"error":"bad"}', True),
            (b'{"success":true,"data":[1],"error":null}', False),  # data no object
            (b'{"success":true,"data":"x","error":null}', False),
            (b'{"success":true,"data":null,"error":null}', False),
            (b'{"success":true,"data":{"n":1},"error":1}', False),  # error neither null nor a string
            (b'{"success":true,"data":{"n":1},"error":{"m":1}}', False),
            (b'{"success":true,"data":{"n":1},"error":null,"x":1}', False),  # a fourth member
            (b'{"success":true,"data":{"n":1}}', False),
            (b'{"success":true,"data":{"n":1},"found":null}', False),  # three members, not those three
        ],
    )
    def test_the_interim_shape_is_exactly_its_three_members(self, doc: bytes, interim: bool) -> None:
        """Shape B: exactly success, data and error, data an object, error null or a string; the
        fused path and the hub read it alike."""
        members = msgspec.json.decode(doc, type=dict[str, msgspec.Raw])
        assert (legacy_v1.interim_data(members) is not None) is interim

        def answer(fn: Any) -> object:
            try:
                return fn()
            except envglot.EnvglotError as exc:
                return type(exc), str(exc)

        fused = answer(lambda: envglot.convert(doc, to="errorcode", from_="legacy-v1", unsupported="ignore"))
        hub = answer(lambda: envglot.conversion(doc, to="errorcode", from_="legacy-v1", unsupported="ignore").output)
        assert fused == hub
