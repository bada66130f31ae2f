"""Declarations cannot steal (issue 23, item 4): a declared dialect never outranks a bundled one.

Declared probes run after every bundled dialect's, whatever their priority, and a declaration
whose own documents carry a bundled dialect's evidence is refused at load and by
``envglot mappings check``, naming both dialects. With each declaration loaded (the acme
example, and hostile ones keyed on ``task_id`` at priority 41), every bundled golden and every
upstream envelope keeps its dialect and its outcome.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import msgspec
import pytest

import envglot
from envelopes import sample_files
from envglot.detect import classify, probe_table
from envglot.dialect import registered
from envglot.errors import MappingError
from envglot.mappings import Mappings, default_mappings, mappings_for

ROOT = Path(__file__).resolve().parents[1]
ACME = ROOT / "examples" / "declared" / "acme.toml"
UPSTREAM = ROOT / ".." / "shared" / "upstream"
BUNDLED = sorted(d.name for d in registered())
CORPUS = [p for d in BUNDLED for p in sample_files(d)] + sorted(UPSTREAM.glob("*/*.json"))
_WRITE = "".join(f'\n[[write]]\ncategory = "{c}"\ncode = "oops"\n' for c in default_mappings().categories)
# The stealing declaration: keyed on task_id at priority 41, shaped like the bundled
# envelopes it would claim (success/data/error): refused, naming the bundled dialect.
STEALING = (
    """
dialect = "tasky"
[declare]
description = "claims every envelope that carries a task_id"
payload = "any"
required = ["$.task_id"]
[declare.detect]
keys = ["task_id"]
priority = 41
[fields]
ok = "$.success"
tool = "$.task_id"
payload = "$.data"
problems = "$.error"
"problem.code" = "$.error.code"
"problem.message" = "$.error.message"
[synthesize]
tool = "t"
[codes.oops]
category = "internal"
"""
    + _WRITE
)
# The same key and priority with members no bundled dialect defines: it loads, and still
# cannot take a document that carries a bundled dialect's markers.
SNEAKY = (
    """
dialect = "sneaky"
[declare]
description = "task_id first, nothing bundled"
payload = "any"
required = ["$.task_id"]
[declare.detect]
keys = ["task_id"]
priority = 41
[fields]
tool = "$.task_id"
payload = "$.result"
problems = "$.fault"
"problem.code" = "$.fault.kind"
"problem.message" = "$.fault.text"
[synthesize]
tool = "t"
[codes.oops]
category = "internal"
"""
    + _WRITE
)
# Failures of the bundled dialects that also carry a task_id member (the repro).
TASK_FAILURES = {
    "legacy-v1": b'{"success":false,"task_id":"t-1","error":"Task not found: t-1"}',
    "errorcode": b'{"success":false,"task_id":"t-1","data":null,"error":{"code":"not_found",'
    b'"message":"no t-1","retryable":false}}',
    "result": b'{"success":false,"task_id":"t-1","error_type":"not_found","message":"no t-1"}',
    "problem-json": b'{"type":"https://x.dev/nf","status":404,"title":"Not found","task_id":"t-1"}',
}


def _state(buf: bytes, m: Mappings | None = None) -> tuple[str, bool | str]:
    try:
        det = classify(buf, None if m is None else m.registry)
        return det.dialect, envglot.read(buf, mappings=m).ok
    except envglot.EnvglotError as exc:
        return "refused", type(exc).__name__


BEFORE = {p: _state(p.read_bytes()) for p in CORPUS} | {k: _state(v) for k, v in TASK_FAILURES.items()}


@pytest.fixture(params=["acme", "sneaky"])
def declaration(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Mappings]:
    """``(name, the tables loaded with the declaration)``."""
    if request.param == "acme":
        path = ACME
    else:
        path = tmp_path / "sneaky.toml"
        path.write_text(SNEAKY)
    return request.param, mappings_for([str(path)])


def test_the_corpus_is_there() -> None:
    assert len(CORPUS) > 40 and all(sample_files(d) for d in BUNDLED)


def test_every_bundled_document_keeps_its_dialect_and_outcome(declaration: tuple[str, Mappings]) -> None:
    name, m = declaration
    expected = "sneaky" if name == "sneaky" else "legacy-v1"
    assert envglot.detect(b'{"task_id": "t-1", "result": 1}', mappings=m) == expected
    after = {p: _state(p.read_bytes(), m) for p in CORPUS} | {k: _state(v, m) for k, v in TASK_FAILURES.items()}
    assert after == BEFORE
    for name in TASK_FAILURES:  # the repro: still bundled failures
        assert BEFORE[name][0] in BUNDLED and BEFORE[name][1] is False, name


def test_a_declared_probe_runs_after_every_bundled_one(tmp_path: Path) -> None:
    path = tmp_path / "sneaky.toml"
    path.write_text(SNEAKY)
    m = mappings_for([str(path)])
    order = [name for _, name, _ in probe_table(m.registry)]
    assert order.index("sneaky") > max(i for i, n in enumerate(order[:-1]) if n != "sneaky")
    # a bundled marker beside task_id: the bundled dialect wins
    doc = msgspec.json.encode({"task_id": "t-1", "result": {}, "schema_id": "dotbot-mcp-response@1"})
    assert classify(doc, m.registry).dialect == "dotbot"


def test_a_declaration_overlapping_a_bundled_dialect_is_refused_naming_both(tmp_path: Path) -> None:
    path = tmp_path / "tasky.toml"
    path.write_text(STEALING)
    with pytest.raises(MappingError, match="overlaps the bundled dialect legacy-v1: a success document") as info:
        mappings_for([str(path)])
    assert "tasky" in str(info.value) and str(path) in str(info.value)
    with pytest.raises(envglot.UnknownDialectError):  # not kept
        envglot.convert(TASK_FAILURES["errorcode"], to="tasky")
    exe = shutil.which("envglot")
    assert exe is not None
    run = subprocess.run([exe, "mappings", "check", str(path)], capture_output=True, timeout=60)
    assert run.returncode == 65, run
    assert b"overlaps the bundled dialect legacy-v1" in run.stderr and b"tasky" in run.stderr
    assert b"whatever [declare.detect] priority says" in run.stderr  # the rule that decides
    assert b"Traceback" not in run.stderr


def test_detection_keys_that_are_all_bundled_keys_are_refused_naming_their_dialects(tmp_path: Path) -> None:
    """The static half of the clash check: keys every one of which a bundled dialect defines are
    refused before anything is written, naming the bundled dialects that define them and the
    rule that decides (bundled probes first, whatever the declared priority)."""
    path = tmp_path / "clash.toml"
    path.write_text(
        STEALING.replace('keys = ["task_id"]', 'keys = ["success"]').replace('"$.task_id"]', '"$.success"]')
    )
    with pytest.raises(MappingError) as info:
        mappings_for([str(path)])
    msg = str(info.value)
    assert msg.startswith(f"{path}: [declare.detect] keys ['success'] of tasky are all keys of bundled dialects")
    owners = msg.split("('success': ", 1)[1].split(")", 1)[0].split(", ")
    assert set(owners) == {d.name for d in registered() if "success" in d.keys} and len(owners) >= 2
    assert "every bundled dialect's probe runs before any declared one, whatever its priority" in msg
    assert info.value.path == "$.declare.detect.keys"
