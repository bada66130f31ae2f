"""The trust boundary (issue 10): one test per class of hostile input, each with its minimal reproducer.

Every input either converts faithfully or raises envglot's own error; no input can flip an
outcome or rewrite the output through a residue. The fuzz suite (tests/fuzz) explores the
same properties at random; these are the classes it found, pinned.
"""

from __future__ import annotations

import datetime
import decimal
import os
import subprocess
import sys
import tracemalloc
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import envglot
import envglot.mcp as emcp
from envglot import Kind, ParseError
from envglot.api import detection
from envglot.dialects import WRITABLE
from envglot.limits import MAX_DEPTH, UTF8_CHUNK, check_input, utf8_error
from envglot.mappings import default_mappings
from envglot.residue import CANONICAL, VERSION, digest
from envglot.transport import wrap_bytes

ENC = msgspec.json.Encoder()
V2_FAIL = (
    b'{"success":false,"data":{"error_code":"NOT_FOUND","error_type":"not_found"},'
    b'"error":"gone","meta":{"version":"response-v2"}}'
)
ERRORCODE_OK = b'{"success":true,"data":{"n":1},"meta":{"tool_version":"1.0","elapsed_ms":3}}'


def outcome(doc: bytes, dialect: str) -> bool:
    return envglot.read(doc, dialect).ok


def valid(doc: bytes, dialect: str) -> None:
    doc.decode("utf-8")  # always valid UTF-8
    assert envglot.validate(doc, dialect) == [], doc


# --- inputs: encoding -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "offset", "path"),
    [
        (b'{"\xff":1}', 2, '$["\\\\xff"]'),  # in a key (shown escaped)
        (b'{"success":true,"data":{"x":"\xc3"},"error":null}', 29, "$.data.x"),  # truncated sequence in a payload
        (b'{"schema_id":"dotbot-mcp-response@1","summary":"\xed\xa0\x80"}', 48, "$.summary"),  # encoded surrogate
    ],
)
@pytest.mark.parametrize("to", WRITABLE)
def test_invalid_utf8_is_a_parse_error_with_offset_and_path(data: bytes, offset: int, path: str, to: str) -> None:
    with pytest.raises(ParseError, match=f"invalid UTF-8 at byte {offset}") as exc:
        envglot.convert(data, to=to)
    assert exc.value.path == path


def test_invalid_utf8_is_never_copied_into_an_output_by_any_entry_point() -> None:
    bad = b'{"success":true,"data":{"x":"\xff"},"meta":{"tool_version":"1","elapsed_ms":1}}'
    for call in (
        lambda: envglot.convert(bad, to="dotbot"),
        lambda: envglot.Converter("code-graph").convert_bytes(bad),
        lambda: envglot.read(bad),
        lambda: envglot.detect(bad),
        lambda: emcp.unwrap(wrap_bytes(bad.replace(b"\xff", b"ok"), False)[:-1] + b',"x":"\xff"}', "result"),
    ):
        with pytest.raises(ParseError, match="invalid UTF-8"):
            call()
    assert envglot.Migrator(to="dotbot").record(bad).status == "rejected"


@pytest.mark.parametrize(
    "value",
    ["\ud800", {"k\udcff": 1}, float("nan"), float("inf"), 10**5000, object()],
    ids=["surrogate", "surrogate-key", "nan", "inf", "huge-int", "object"],
)
def test_python_input_json_cannot_carry_exactly_is_refused(value: Any) -> None:
    with pytest.raises(ParseError, match="cannot be encoded as JSON") as exc:
        envglot.convert({"success": True, "value": {"x": value}}, to="result")
    assert exc.value.path is not None and exc.value.path.startswith("$.value.x")


def test_a_lone_surrogate_in_str_input_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="lone surrogate"):
        envglot.convert('{"success":true,"value":"\udc80"}', to="result")


def test_a_byte_order_mark_is_accepted_and_reported() -> None:
    conv = envglot.conversion(b"\xef\xbb\xbf" + ERRORCODE_OK, to="response-v2")
    assert conv.source == "errorcode"
    assert (Kind.BOM_REMOVED, "$") in [(d.kind, d.path) for d in conv.diagnostics]
    assert not conv.output.startswith(b"\xef")


# Bytes around every way UTF-8 can be wrong: ASCII, whole characters of each width, lone
# continuation and lead bytes, overlongs, encoded surrogates, code points above U+10FFFF.
_UTF8_PIECES = st.sampled_from(
    [b"a", b'"', "é".encode(), "東".encode(), "😀".encode(), b"\x80", b"\xbf", b"\xc0", b"\xc1", b"\xc3", b"\xe0",
     b"\xe0\x80", b"\xe0\xa0", b"\xed", b"\xed\xa0", b"\xed\x9f", b"\xef\xbf", b"\xf0", b"\xf0\x8f", b"\xf0\x90",
     b"\xf4\x8f\xbf", b"\xf4\x90", b"\xf5", b"\xff"]
)  # fmt: skip


def _decode_error(data: bytes) -> tuple[int, str] | None:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start, exc.reason
    return None


@settings(max_examples=400, derandomize=True, database=None, deadline=None)
@given(st.lists(_UTF8_PIECES, max_size=24).map(b"".join), st.integers(4, 9))
def test_the_utf8_check_in_pieces_answers_as_one_decode_of_the_whole(data: bytes, chunk: int) -> None:
    assert utf8_error(data, chunk) == _decode_error(data)


@pytest.mark.parametrize(
    "bad", [b"\xff", b"\xc3", b"\xc3(", b"\xe0\x80\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xf0\x9f\x98"]
)
def test_an_invalid_sequence_at_a_piece_boundary_is_refused_as_one_decode_would(bad: bytes) -> None:
    # a large document with characters above U+00FF, the bad bytes placed across a piece's end
    head = b'{"success":true,"data":{"s":"' + "東京 é ".encode() * (UTF8_CHUNK // 5)
    assert all(utf8_error(b"a" * pad + head) is None for pad in range(4))  # characters across every piece end
    for shift in range(-4, 5):
        at = UTF8_CHUNK + shift
        doc = head[:at] + bad + head[at:] + b'"}}'
        start, reason = _decode_error(doc) or (-1, "")
        assert utf8_error(doc) == (start, reason)
        with pytest.raises(ParseError, match=f"invalid UTF-8 at byte {start} \\({reason}: ") as exc:
            check_input(doc)
        assert exc.value.path == "$.data.s"


# --- inputs: depth, numbers, size -------------------------------------------------------


def _deep(n: int) -> bytes:
    return b'{"success":true,"value":' + b"[" * n + b"]" * n + b"}"


@pytest.mark.parametrize("entry", ["convert", "detect", "read", "migrator"])
def test_nesting_deeper_than_the_limit_is_a_parse_error_never_a_recursion_error(entry: str) -> None:
    data = _deep(5000)
    if entry == "migrator":
        out = envglot.Migrator(to="result").record(data)
        assert out.status == "rejected" and out.error_type == "ParseError" and "nesting deeper" in (out.error or "")
        return
    call = {
        "convert": lambda: envglot.convert(data, to="dotbot"),
        "detect": lambda: envglot.detect(data),
        "read": lambda: envglot.read(data),
    }[entry]
    with pytest.raises(ParseError, match=f"nesting deeper than {MAX_DEPTH} levels") as exc:
        call()
    assert exc.value.path is not None and exc.value.path.startswith("$.value[0][0]")


def test_the_depth_limit_is_configurable_and_brackets_in_strings_do_not_count() -> None:
    assert envglot.convert(_deep(100), to="result", max_depth=101)
    with pytest.raises(ParseError, match="nesting deeper than 50"):
        envglot.convert(_deep(100), to="result", max_depth=50)
    in_strings = b'{"success":true,"value":"' + b"[" * 1000 + b'"}'
    assert envglot.convert(in_strings, to="result") == in_strings
    deep = _deep(880)  # the ceiling still leaves the parser room
    assert envglot.convert(deep, to="dotbot", max_depth=900, unsupported="ignore")
    with pytest.raises(envglot.EnvglotError, match="max_depth must be"):
        envglot.convert(deep, to="result", max_depth=901)


@pytest.mark.parametrize("n", [257, 850])
def test_brackets_in_strings_cannot_hide_real_nesting(n: int) -> None:
    # Each level opens with a string holding "]" and closes after one holding "[": a count
    # that ignores strings sees every level cancelled and let 850 levels through.
    value = b'["]",' * n + b"1" + b',"["]' * n
    with pytest.raises(ParseError, match=f"nesting deeper than {MAX_DEPTH} levels"):
        envglot.convert(b'{"success":true,"data":{"x":' + value + b'},"error":null}', to="dotbot")


@pytest.mark.parametrize("escapes", [b"\\\\", b'\\"', b'\\\\\\"', b"\\u005d"])
def test_escaped_quotes_and_backslashes_do_not_confuse_the_depth_count(escapes: bytes) -> None:
    hidden = b'"' + escapes + b']]]]"'  # a string whose escapes end before its brackets do
    doc = b'{"success":true,"value":' + b"[" * 250 + hidden + b"]" * 250 + b"}"
    assert envglot.convert(doc, to="result", max_depth=251, unsupported="ignore")
    with pytest.raises(ParseError, match="nesting deeper than 249"):
        envglot.convert(doc, to="result", max_depth=249)


def _depths_refused(max_depth: int, check: Callable[[bytes, int], object]) -> list[bool]:
    """Whether ``check`` refuses documents nested max_depth - 2 .. max_depth + 2 deep."""
    out = []
    for n in range(max_depth - 2, max_depth + 3):
        for doc in (
            _deep(n - 1),  # a result success
            b'{"success": true, "value": ' + b"[ " * (n - 1) + b'"]]"' + b" ]" * (n - 1) + b"}",  # spaced
            b'{"success":true,"value":' + b"[" * (n - 1) + b'1,"[' + b"]" * (n - 1),  # broken beyond the depth
            b'{"success":true,"value":x' + b"[" * (n - 1) + b"]" * (n - 1) + b"}",  # broken before it
        ):
            try:
                check(doc, max_depth)
                out.append(False)
            except ParseError as exc:
                out.append(f"nesting deeper than {max_depth} levels" in str(exc))
    return out


def _converter(doc: bytes, max_depth: int) -> object:
    return envglot.Converter(to="dotbot", from_="result", unsupported="ignore", max_depth=max_depth).convert_bytes(doc)


def _detecting(doc: bytes, max_depth: int) -> object:
    return envglot.Converter(to="dotbot", unsupported="ignore", max_depth=max_depth).convert_bytes(doc)


@pytest.mark.parametrize("check", [check_input, _converter, _detecting], ids=["check_input", "converter", "detecting"])
@pytest.mark.parametrize("max_depth", [3, 40, MAX_DEPTH, 900])
def test_the_depth_limit_holds_to_the_level_at_any_stack_depth_and_in_any_thread(
    max_depth: int, check: Callable[[bytes, int], object]
) -> None:
    # The depth is checked by msgspec's own guard at a lowered recursion budget (a skip in
    # check_input, the detection's or the known source reader's parse in a Converter): a caller deep in
    # its own stack, other threads and broken JSON must get the same answers as the exact count.
    expected = [n > max_depth for n in range(max_depth - 2, max_depth + 3) for _ in range(4)]

    def nested(levels: int) -> list[bool]:
        return nested(levels - 1) if levels else _depths_refused(max_depth, check)

    assert _depths_refused(max_depth, check) == expected
    if max_depth <= MAX_DEPTH:  # (a caller 400 frames deep leaves no room for 900 levels on 3.11)
        assert nested(400) == expected
    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(lambda _: _depths_refused(max_depth, check), range(8))) == [expected] * 8


@pytest.mark.parametrize(
    "number",
    [b"1e400", b"-1e400", b"9" * 10_000, b"0.1000000000000000000000000000001"],
    ids=["1e400", "-1e400", "10k-digits", "long-fraction"],
)
@pytest.mark.parametrize("preserve", [False, True])
def test_numbers_no_float_holds_travel_exactly(number: bytes, preserve: bool) -> None:
    doc = b'{"success":true,"data":{"n":' + number + b'},"meta":{"tool_version":"1.0","elapsed_ms":3}}'
    for to in WRITABLE:
        out = envglot.convert(doc, to=to, preserve=preserve, unsupported="ignore")
        assert b'"n":' + number in out
        if preserve:
            back = envglot.convert(out, from_=to, to="errorcode", preserve=True, unsupported="ignore")
            assert back == doc  # from_: a success of a dialect whose successes carry no marker is read so


@pytest.mark.parametrize("seconds", [b"1e400", b"1e300", b"-1e200"])
def test_an_overflowing_retry_delay_is_a_parse_error(seconds: bytes) -> None:
    doc = V2_FAIL.replace(b'"not_found"}', b'"not_found","retry_after_seconds":' + seconds + b"}")
    with pytest.raises(ParseError) as exc:
        envglot.convert(doc, to="errorcode")
    assert exc.value.path == "$.data.retry_after_seconds"


def test_a_huge_integer_retry_delay_converts_exactly() -> None:
    ms = b"1" + b"0" * 400
    doc = b'{"success":false,"data":null,"error":{"code":"x_rate_limited","message":"slow","retryable":true,'
    out = envglot.convert(doc + b'"retry_after_ms":' + ms + b"}}", to="response-v2", unsupported="ignore")
    assert b'"retry_after_seconds":1' + b"0" * 397 + b"}" in out
    back = envglot.convert(out, to="errorcode", unsupported="ignore")
    assert b'"retry_after_ms":' + ms in back


def test_a_huge_first_key_costs_memory_proportional_to_the_record() -> None:
    record = b'{"' + b"k" * 8_000_000 + b'":1,"success":true,"value":1}'
    tracemalloc.start()
    try:
        envglot.conversion(record, to="result", unsupported="ignore")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 6 * len(record), f"peak {peak} for a {len(record)}-byte record"


def test_messages_quote_a_bounded_excerpt_of_the_input() -> None:
    code = "X" * 5_000_000
    doc = ENC.encode({"success": False, "data": None, "error": {"code": code, "message": "m", "retryable": False}})
    conv = envglot.conversion(doc, to="response-v2", unsupported="ignore")
    assert conv.diagnostics and all(len(d.message) < 1000 for d in conv.diagnostics)
    with pytest.raises(ParseError) as exc:
        envglot.convert(b'{"schema_id":"dotbot-mcp-response@1","status":"' + code.encode() + b'"}', to="result")
    assert len(str(exc.value)) < 2000


# --- detection and outcome ----------------------------------------------------------------

NOT_FOUND = b'{"message":"Not Found","documentation_url":"https://docs.example/x"}'


def _call_tool_result(text: bytes, is_error: bool) -> bytes:
    return ENC.encode({"content": [{"type": "text", "text": text.decode()}], "isError": is_error})


@pytest.mark.parametrize("to", WRITABLE)
def test_is_error_over_a_markerless_object_is_a_failure_with_the_object_as_details(to: str) -> None:
    conv = envglot.conversion(_call_tool_result(NOT_FOUND, True), to=to)
    assert not outcome(conv.output, to)
    env = envglot.read(conv.output, to)
    assert env.problems[0].message == "Not Found"
    kinds = [d.kind for d in conv.diagnostics]
    assert Kind.OUTCOME_INFERRED in kinds
    if default_mappings()[to].path("problem.details") is None:  # no details (errorcode): reported as dropped
        assert Kind.FIELD_DROPPED in kinds
    else:
        assert b'"documentation_url":"https://docs.example/x"' in conv.output
    valid(conv.output, to)


def test_every_entry_point_keeps_the_failure() -> None:
    wire = _call_tool_result(NOT_FOUND, True)
    assert not envglot.read(wire).ok
    assert not outcome(envglot.Converter("result")(wire), "result")
    assert not outcome(emcp.unwrap(msgspec.json.decode(wire), "response-v2"), "response-v2")
    assert not emcp.unwrap_envelope(msgspec.json.decode(wire)).ok
    assert emcp.wrap(msgspec.json.decode(wire), "dotbot")["isError"] is True


def test_is_error_over_an_envelope_that_says_success_gives_a_failure() -> None:
    conv = envglot.conversion(_call_tool_result(ERRORCODE_OK, True), to="response-v2")
    assert not outcome(conv.output, "response-v2")
    assert (Kind.STATUS_MISMATCH, "$.isError") in [(d.kind, d.path) for d in conv.diagnostics]


def test_is_error_false_never_turns_a_failure_into_a_success() -> None:
    conv = envglot.conversion(_call_tool_result(V2_FAIL, False), to="dotbot")
    assert not outcome(conv.output, "dotbot")


def test_a_json_rpc_response_is_unwrapped_and_its_error_refused() -> None:
    inner = msgspec.json.decode(_call_tool_result(NOT_FOUND, True))
    rpc = ENC.encode({"jsonrpc": "2.0", "id": 7, "result": inner})
    assert not outcome(envglot.convert(rpc, to="result"), "result")
    assert envglot.detect(rpc) == "legacy-v1"
    error = ENC.encode({"jsonrpc": "2.0", "id": 7, "error": {"code": -32602, "message": "Unknown tool: x"}})
    with pytest.raises(ParseError, match="code -32602: Unknown tool: x") as exc:
        envglot.convert(error, to="result")
    assert exc.value.path == "$.error"


def test_markerless_documents_are_reported_and_refused_when_strict() -> None:
    flat = b'{"specs":[],"count":0}'
    assert detection(flat).evidence is None
    conv = envglot.conversion(flat, to="response-v2")
    assert (Kind.WEAK_DETECTION, "$") in [(d.kind, d.path) for d in conv.diagnostics]
    for call in (
        lambda: envglot.detect(flat, strict=True),
        lambda: envglot.convert(flat, to="response-v2", strict=True),
        lambda: envglot.read(flat, strict=True),
    ):
        with pytest.raises(envglot.DetectError, match="no dialect's markers"):
            call()
    assert envglot.detect(b'{"success":true,"specs":[]}', strict=True) == "legacy-v1"  # an outcome flag is evidence
    assert envglot.Migrator(to="result", strict=True).record(flat).status == "rejected"


def test_nested_transport_wrappers_are_refused() -> None:
    nested = ENC.encode({"structuredContent": {"content": [{"type": "text", "text": "{}"}]}, "isError": False})
    with pytest.raises(ParseError, match="inside a transport wrapper"):
        envglot.convert(nested, to="result")
    assert envglot.validate(nested) != []


# --- the residue is the caller's ------------------------------------------------------------


def _with_residue(doc: bytes, residue: Any, at_meta: bool = False) -> bytes:
    d = msgspec.json.decode(doc)
    if at_meta:
        d["meta"]["_envglot"] = residue
    else:
        d["_envglot"] = residue
    return ENC.encode(d)


FLIP = {"from": "result", "set": [["$.success", True]], "del": [], "digest": "0" * 32}


@pytest.mark.parametrize("to", WRITABLE)
def test_without_preserve_an_input_residue_is_never_applied(to: str) -> None:
    doc = _with_residue(V2_FAIL, {**FLIP, "from": to, "set": [["$", 5]]}, at_meta=True)
    out = envglot.convert(doc, to=to, unsupported="ignore")
    assert not outcome(out, to)
    assert out == envglot.convert(V2_FAIL, to=to, unsupported="ignore")  # left out, never carried
    conv = envglot.conversion(doc, to=to)
    assert (Kind.FIELD_DROPPED, "$.meta._envglot") in [(d.kind, d.path) for d in conv.diagnostics]


def _forged(carrier: bytes, restored: dict[str, Any], sets: list[list[Any]], dels: list[str] | None = None) -> bytes:
    """A residue with a valid digest of ``restored`` (anyone can compute one: no secret): the
    document the patches make of the carrier converted back."""
    digest_ = digest("result", ENC.encode(restored))
    res = {"from": "result", "set": sets, "del": dels or [], "v": CANONICAL, "digest": digest_}
    return _with_residue(carrier, res, at_meta=True)


def _back(carrier: bytes) -> dict[str, Any]:
    """What a carrier converts back to as result (without a residue)."""
    back: dict[str, Any] = msgspec.json.decode(envglot.convert(carrier, to="result"))
    return back


def test_a_residue_that_would_flip_the_outcome_is_rejected_even_with_a_valid_digest() -> None:
    carrier = envglot.convert(b'{"success":false,"error":"gone","error_type":"not_found"}', to="response-v2")
    back = _back(carrier)
    restored = {k: v for k, v in back.items() if not k.startswith("error")} | {"success": True, "value": 1}
    dels = [f"$.{k}" for k in back if k.startswith("error")]
    forged = _forged(carrier, restored, [["$.success", True], ["$.value", 1]], dels)
    conv = envglot.conversion(forged, to="result", preserve=True)
    assert not outcome(conv.output, "result")
    assert [d.message for d in conv.diagnostics if d.kind is Kind.RESIDUE_REJECTED] == [
        "preserve residue not applied: the restored document would change the outcome"
    ]


def test_a_residue_that_contradicts_its_carrier_is_rejected() -> None:
    carrier = envglot.convert(b'{"success":false,"error":"gone","error_type":"not_found"}', to="response-v2")
    restored = _back(carrier) | {"error": "something else entirely"}
    forged = _forged(carrier, restored, [["$.error", restored["error"]]])
    conv = envglot.conversion(forged, to="result", preserve=True)
    assert b"something else" not in conv.output
    assert [d.message for d in conv.diagnostics if d.kind is Kind.RESIDUE_REJECTED] == [
        "preserve residue not applied: the restored document contradicts the document it travels in"
    ]


def test_a_transplanted_residue_fails_its_digest() -> None:
    a = envglot.convert(
        b'{"success":false,"error":"a","error_type":"not_found","instruction":"x"}', to="response-v2", preserve=True
    )
    b = envglot.convert(b'{"success":false,"error":"b","error_type":"not_found"}', to="response-v2")
    moved = _with_residue(b, msgspec.json.decode(a)["meta"]["_envglot"], at_meta=True)
    conv = envglot.conversion(moved, to="result", preserve=True)
    # version 3 sets the document whole, so its digest matches what it restores: the carrier refuses it
    assert next(d.message for d in conv.diagnostics if d.kind is Kind.RESIDUE_REJECTED).endswith(
        "the restored document contradicts the document it travels in"
    )
    assert b'"instruction"' not in conv.output


DOTBOT_OK = (
    b'{"schema_id":"dotbot-mcp-response@1","tool":"t","version":"1.0.0","status":"ok","summary":"only the residue",'
    b'"data":{"id":7,"name":"x","tags":["a"]},"warnings":[],"errors":[],'
    b'"audit":{"timestamp":"2026-01-01T00:00:00Z","duration_ms":1,"source":"a","correlation_id":"keep"}}'
)


def test_a_residue_taking_the_payload_restores_only_in_its_own_carrier_with_its_payload_as_it_travelled() -> None:
    """A residue that takes the payload from its carrier (versions 4 and 5) records its bytes: moved to a
    carrier with another payload, or to one whose payload was changed or re-encoded on its way
    (same values, other key order or escapes), it is refused by its digest; moved to a carrier
    with the same payload that says something else, by the carrier's check. Never applied."""
    a = envglot.convert(DOTBOT_OK, from_="dotbot", to="response-v2", preserve=True)
    res = msgspec.json.decode(a)["meta"]["_envglot"]
    assert (res["v"], res["take"]) == (VERSION, [["$.data", "$.data"]])
    assert envglot.convert(a, to="dotbot", preserve=True) == DOTBOT_OK
    payload = b'{"id":7,"name":"x","tags":["a"]}'
    other = DOTBOT_OK.replace(b'"keep"', b'"other"')
    carriers = {
        "another payload": a.replace(payload, b'{"id":8,"name":"x","tags":["a"]}'),
        "its keys in another order": a.replace(payload, b'{"name":"x","id":7,"tags":["a"]}'),
        "another escape": a.replace(payload, b'{"id":7,"name":"\\u0078","tags":["a"]}'),
        "another carrier, another payload": _with_residue(
            envglot.convert(other.replace(payload, b'{"id":9}'), from_="dotbot", to="response-v2"), res, at_meta=True
        ),
    }
    for why, moved in carriers.items():
        assert moved != a, why
        conv = envglot.conversion(moved, to="dotbot", preserve=True)
        assert next(d.message for d in conv.diagnostics if d.kind is Kind.RESIDUE_REJECTED).endswith(
            "(not made by envglot for this document)"
        ), why
        assert b"only the residue" not in conv.output, why
    same_payload = envglot.convert(other, from_="dotbot", to="response-v2")
    conv = envglot.conversion(_with_residue(same_payload, res, at_meta=True), to="dotbot", preserve=True)
    assert next(d.message for d in conv.diagnostics if d.kind is Kind.RESIDUE_REJECTED).endswith(
        "the restored document contradicts the document it travels in"
    )
    assert b"only the residue" not in conv.output


def test_a_transplanted_version_2_residue_fails_its_digest() -> None:
    """A residue's patches over another carrier restore a document other than the recorded one."""
    a = envglot.convert(b'{"success":false,"error":"a","error_type":"not_found","instruction":"x"}', to="response-v2")
    back = msgspec.json.decode(envglot.convert(a, to="result"))
    original = {**back, "instruction": "x"}
    res = {"from": "result", "set": [["$.instruction", "x"]], "del": [], "v": 2}
    res["digest"] = digest("result", ENC.encode(original), 2)
    b = envglot.convert(b'{"success":false,"error":"b","error_type":"not_found"}', to="response-v2")
    conv = envglot.conversion(_with_residue(b, res, at_meta=True), to="result", preserve=True)
    assert next(d.message for d in conv.diagnostics if d.kind is Kind.RESIDUE_REJECTED).endswith(
        "(not made by envglot for this document)"
    )
    assert b'"instruction"' not in conv.output
    assert b'"instruction"' in envglot.convert(_with_residue(a, res, at_meta=True), to="result", preserve=True)


@pytest.mark.parametrize(
    "residue",
    [
        5,
        "x",
        [],
        {"from": "result"},
        {**FLIP, "set": [["not a path", 1]]},
        {**FLIP, "set": [[1, 2]]},
        {**FLIP, "del": ["$" + ".a" * (MAX_DEPTH + 1)]},
        {**FLIP, "surprise": 1},
        {**FLIP, "v": VERSION + 1},
        {**FLIP, "v": 0},
    ],
)
def test_a_corrupt_residue_is_a_parse_error_under_preserve(residue: Any) -> None:
    carrier = envglot.convert(b'{"success":false,"error":"gone","error_type":"not_found"}', to="response-v2")
    with pytest.raises(ParseError) as exc:
        envglot.convert(_with_residue(carrier, residue, at_meta=True), to="result", preserve=True)
    assert exc.value.path == "$.meta._envglot"


def test_a_whole_document_residue_that_changes_what_its_carrier_says_is_rejected() -> None:
    """Version 3 sets the document whole at ``$`` (its digest then matches by construction):
    the carrier's check still refuses a document that says something else."""
    carrier = envglot.convert(b'{"success":false,"error":"gone","error_type":"not_found"}', to="response-v2")
    restored = _back(carrier) | {"error": "something else entirely"}
    forged = _forged(carrier, restored, [["$", restored]])
    conv = envglot.conversion(forged, to="result", preserve=True)
    assert b"something else" not in conv.output
    assert [d.message for d in conv.diagnostics if d.kind is Kind.RESIDUE_REJECTED] == [
        "preserve residue not applied: the restored document contradicts the document it travels in"
    ]


def test_a_genuine_residue_still_restores_its_document() -> None:
    original = (
        b'{"success":false,"error":"gone","error_type":"not_found","instruction":"retry later",'
        b'"error_data":{"k":[1,2]}}'
    )
    there = envglot.convert(original, to="code-graph", preserve=True)
    valid(there, "code-graph")
    assert msgspec.json.decode(envglot.convert(there, to="result", preserve=True)) == msgspec.json.decode(original)
    assert msgspec.json.decode(there)["_envglot"]["digest"] == digest("result", original, VERSION)


def test_a_lone_surrogate_escape_beside_a_huge_integer_is_a_violation_not_a_decode_error() -> None:
    # Fuzz campaign seed 1065249: the huge integer sends validate to Python's json module,
    # which accepts "\udfff"; code-graph's approxTokens rule then decoded the raw bytes with
    # msgspec, which refuses it, and the DecodeError escaped.
    doc = (
        b'{"success":true,"data":{"tool":"t","version":"1.0","requestId":"r","generatedAt":'
        b'"2026-01-01T00:00:00Z","workspace":{"root":"/","repoName":"r"},"result":' + b"9" * 5000 + b","
        b'"meta":{"approxTokens":97,"truncated":false,"limits":{}}},"_env":"\\udfff"}'
    )
    found = envglot.validate(doc, "code-graph")
    assert any("cannot be counted" in v.message for v in found)
    with pytest.raises(envglot.EnvglotError):
        envglot.convert(doc, to="result")


def test_a_repeated_key_is_read_as_its_last_occurrence_whatever_else_the_document_holds() -> None:
    # Fuzz seed 1108925: an earlier `meta` that is no object failed the strict pass, but with a
    # residue in the document the slow pass (last occurrence wins) read it: a residue decided.
    plain = b'{"success":true,"data":{},"error":null,"meta":[null],"meta":{"version":"response-v2"}}'
    with_residue = plain.replace(
        b'"meta":[null]', b'"meta":{"version":"response-v2","_envglot":{"from":5}},"meta":[null]'
    )
    for doc in (plain, with_residue):
        assert envglot.read(doc, "response-v2").ok
        assert envglot.convert(doc, to="result", unsupported="ignore") == b'{"success":true,"value":{}}'
    with pytest.raises(ParseError):  # a last occurrence that is wrong stays wrong
        envglot.read(
            b'{"success":true,"data":{},"error":null,"meta":{"version":"response-v2"},"meta":[null]}', "response-v2"
        )


def test_a_retry_delay_too_large_for_float_seconds_is_written_as_whole_seconds() -> None:
    # Fuzz seed 1101692: 2**63 ms became 9223372036854775.808 s, which response-v2's reader refuses.
    doc = (
        b'{"success":false,"data":null,"error":{"code":"x","message":"m","retryable":true,'
        b'"retry_after_ms":9223372036854775808}}'
    )
    c = envglot.conversion(doc, to="response-v2", unsupported="ignore")
    assert b'"retry_after_seconds":9223372036854776}' in c.output
    assert "value_coerced" in [d.kind for d in c.diagnostics]
    assert envglot.validate(c.output, "response-v2") == []


def test_an_outcome_key_of_another_dialect_is_not_an_outcome() -> None:
    # Fuzz seed 1114702 (a check of the fuzz oracle): dotbot's outcome is its status.
    dotbot = (
        b'{"schema_id":"dotbot-mcp-response@1","tool":"t","version":"1.0.0","status":"ok","summary":".",'
        b'"data":{},"warnings":[],"errors":[],"audit":{"timestamp":"2026-01-01T00:00:00Z","duration_ms":1,'
        b'"source":"s"},"success":false}'
    )
    assert envglot.read(dotbot).ok
    assert envglot.mcp.wrap(dotbot)["isError"] is False
    # legacy-v1 without `success`: a non-empty error string is the failure, as its reader decides
    assert envglot.mcp.is_error(b'{"error":"boom"}', "legacy-v1") is True
    assert envglot.mcp.is_error(b'{"error":"","found":true}', "legacy-v1") is False


def test_a_member_put_back_never_changes_the_outcome_the_writer_wrote() -> None:
    # Fuzz seed 1309940: isError made a problem-json success (status 201) a failure; the stated
    # status, kept as the dialect's own field, went back into the failure and made it a success.
    wrapped = b'{"structuredContent":{"type":"","status":201},"isError":true}'
    c = envglot.conversion(wrapped, to="problem-json", unsupported="ignore")
    assert envglot.mcp.is_error(c.output, "problem-json") is True
    assert envglot.validate(c.output, "problem-json") == []
    assert "field_dropped" in [d.kind for d in c.diagnostics]


# --- issue 23: a forced source never flips a wrapper's failure; dict inputs are JSON only -----

_STORED = {"success": True, "data": {"task_id": "t-1"}, "error": None}


def _stored(is_error: bool) -> bytes:
    """A stored CallToolResult (foundry archives keep them): a legacy-v1 success inside."""
    return ENC.encode({"content": [{"type": "text", "text": ENC.encode(_STORED).decode()}], "isError": is_error})


@pytest.mark.parametrize("from_", ["legacy-v1", "errorcode"])
def test_a_forced_source_never_flips_a_wrappers_failure_api(from_: str) -> None:
    flagged = _stored(True)
    for out in (
        envglot.convert(flagged, to="response-v2", from_=from_, unsupported="ignore"),
        envglot.Converter(to="response-v2", from_=from_)(flagged),
    ):
        assert msgspec.json.decode(out)["success"] is False
    assert envglot.read(flagged, from_).ok is False
    conv = envglot.conversion(flagged, to="response-v2", from_=from_)
    assert conv.unwrapped and Kind.STATUS_MISMATCH in {d.kind for d in conv.diagnostics}
    # isError false keeps what the envelope says
    assert msgspec.json.decode(envglot.convert(_stored(False), to="response-v2", from_="legacy-v1"))["success"]


def test_a_forced_source_never_flips_a_wrappers_failure_cli(tmp_path: Any) -> None:
    import json
    import shutil
    import subprocess

    exe = shutil.which("envglot")
    assert exe is not None
    src = tmp_path / "archive"
    src.mkdir()
    (src / "stored.jsonl").write_bytes(_stored(True) + b"\n" + _stored(False) + b"\n")
    run = subprocess.run(
        [exe, "convert", "-f", "legacy-v1", "-t", "response-v2"], input=_stored(True), capture_output=True
    )
    assert run.returncode == 0 and json.loads(run.stdout)["success"] is False, run
    out = tmp_path / "out"
    run = subprocess.run([exe, "migrate", "-f", "legacy-v1", "-o", str(out), str(src)], capture_output=True)
    assert run.returncode == 0, run.stderr
    lines = [json.loads(x) for x in (out / "stored.jsonl").read_bytes().splitlines()]
    assert [x["success"] for x in lines] == [False, True]


_NOT_JSON = [
    ({1, 2}, "set"),
    (frozenset(), "frozenset"),
    (b"ab", "bytes"),
    (bytearray(b"x"), "bytearray"),
    (1j, "complex"),
    (datetime.date(2026, 1, 1), "date"),
    (decimal.Decimal("1.5"), "Decimal"),
    (uuid.UUID(int=1), "UUID"),
]
_DICT_FACES: list[Any] = [
    lambda d: envglot.convert(d, to="result"),
    lambda d: envglot.conversion(d, to="result"),
    lambda d: envglot.Converter(to="result")(d),
    lambda d: envglot.detect(d),
    lambda d: envglot.read(d),
    lambda d: envglot.answer(d, to="result") and envglot.convert(d, to="result"),
]


@pytest.mark.parametrize(("value", "kind"), _NOT_JSON, ids=[k for _, k in _NOT_JSON])
@pytest.mark.parametrize("face", range(len(_DICT_FACES)))
def test_a_dict_value_json_cannot_carry_is_refused_at_its_path(value: object, kind: str, face: int) -> None:
    doc = {"success": True, "data": {"items": [1, {"x": value}]}, "error": None}
    with pytest.raises(ParseError, match=f"a {kind} is not a JSON value") as exc:
        _DICT_FACES[face](doc)
    assert exc.value.path == "$.data.items[1].x"


def test_a_refused_dict_is_answered_as_a_failure() -> None:
    answered = envglot.answer({"success": True, "data": {"x": {1}}, "error": None}, to="result")
    assert answered.source == "refused" and msgspec.json.decode(answered.output)["success"] is False


def test_a_tuple_is_a_json_array() -> None:
    out = envglot.convert({"success": True, "data": {"t": (1, 2)}, "error": None}, to="result")
    assert out["value"] == {"t": [1, 2]}


@pytest.mark.parametrize(
    "doc",
    [
        b'{"type":"https://x.dev/not-found","status":404,"title":"Not found","detail":"no task t-1"}',
        b'{"success":false,"data":null,"error":{"code":"not_found","message":"no task t-1","retryable":false}}',
        V2_FAIL,
    ],
    ids=["problem-json", "errorcode", "response-v2"],
)
def test_a_forced_source_never_reads_another_dialects_failure_as_a_success(doc: bytes) -> None:
    """legacy-v1 reads almost any object; forced on another dialect's failure, the failure wins
    (reported) or the document is refused: never a success."""
    try:
        conv = envglot.conversion(doc, to="errorcode", from_="legacy-v1")
    except ParseError:
        with pytest.raises(ParseError):
            envglot.read(doc, "legacy-v1")
        return
    assert msgspec.json.decode(conv.output)["success"] is False
    assert msgspec.json.decode(envglot.convert(doc, to="errorcode", from_="legacy-v1"))["success"] is False
    assert envglot.read(doc, "legacy-v1").ok is False
    if b"success" not in doc:  # legacy-v1 alone would have read a success: the contradiction is reported
        assert any(d.kind is Kind.STATUS_MISMATCH and "the failure wins" in d.message for d in conv.diagnostics)


@pytest.mark.parametrize(
    ("doc", "key"),
    [
        (b'{"success":false,"data":{"x":1},"success":true}', "success"),
        (b'{"success":false,"data":{"x":1},"succ\\u0065ss":true}', "success"),  # an escaped spelling
        (b'{"schema_id":"dotbot-mcp-response@1","status":"error","status":"ok"}', "status"),
        (b'{"type":"about:blank","status":404,"title":"t","status":200}', "status"),
        (b'{"content":[{"type":"text","text":"{}"}],"isError":true,"isError":false}', "isError"),
    ],
)
def test_a_repeated_outcome_member_is_refused(doc: bytes, key: str) -> None:
    """Which occurrence a parser keeps is its choice: a later success could hide a failure (issue 23)."""
    for call in (
        lambda: envglot.convert(doc, to="result"),
        lambda: envglot.read(doc),
        lambda: envglot.Converter(to="result").convert_bytes(doc),
    ):
        with pytest.raises(ParseError, match=f"outcome member '{key}' appears more than once") as exc:
            call()
        assert exc.value.path == f"$.{key}"
    assert f"$.{key}" in [v.path for v in envglot.validate(doc)]


def test_an_outcome_key_repeated_only_inside_the_payload_is_fine() -> None:
    doc = b'{"success":true,"data":{"success":false,"items":[{"success":true}]},"error":null}'
    assert envglot.read(doc).ok and envglot.validate(doc) == []


def test_the_depth_budget_can_be_turned_off_with_the_same_answers() -> None:
    """``ENVGLOT_DEPTH_BUDGET=exact``: no search of the thread state; the exact count decides alike."""
    code = (
        "from envglot import limits\n"
        "assert limits._budget().offset is None\n"
        "limits.check_input(b'[' * 256 + b']' * 256)\n"
        "try:\n"
        "    limits.check_input(b'[' * 257 + b']' * 257)\n"
        "except limits.ParseError as exc:\n"
        "    print(exc)\n"
    )
    env = {**os.environ, "ENVGLOT_DEPTH_BUDGET": "exact"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("nesting deeper than 256 levels at byte 256 (the limit is max_depth=256)")
