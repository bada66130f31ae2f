"""envglot.schema: JSON Schemas of the wire envelopes, with $defs or fully inlined (MCP outputSchema)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from envglot.dialects import NAMES, get_dialect
from envglot.errors import EnvglotError, UnknownDialectError
from envglot.schema import (
    NOT_EMBEDDED,
    SCHEMA_DIALECT,
    embed_schema,
    embedded_payload,
    hoist,
    inline_refs,
    json_schema,
    struct_schema,
)


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["$ref"]] if "$ref" in node else []
        return own + [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def _wire_struct(dialect: str) -> type[msgspec.Struct]:
    return get_dialect(dialect).schema_type()


@pytest.mark.parametrize("dialect", NAMES)
def test_inline_schema_is_a_self_contained_object_schema(dialect: str) -> None:
    s = json_schema(dialect, inline=True)
    assert s["$schema"] == SCHEMA_DIALECT
    assert s["type"] == "object"
    assert "$defs" not in s
    assert _refs(s) == []
    msgspec.json.encode(s)  # plain JSON all the way down


@pytest.mark.parametrize("dialect", NAMES)
def test_schema_with_defs_refers_to_the_envelope(dialect: str) -> None:
    s = json_schema(dialect)
    assert s["$schema"] == SCHEMA_DIALECT
    name = s["$ref"].removeprefix("#/$defs/")
    assert s["$defs"][name]["type"] == "object"
    assert all(r.removeprefix("#/$defs/") in s["$defs"] for r in _refs(s))


@pytest.mark.parametrize("dialect", NAMES)
def test_properties_and_required_are_the_wire_fields(dialect: str) -> None:
    """Property names are the wire spellings (camelCase for code-graph), required as the Struct says."""
    fields = msgspec.structs.fields(_wire_struct(dialect))
    s = json_schema(dialect, inline=True)
    assert list(s["properties"]) == [f.encode_name for f in fields]
    assert s["required"] == [f.encode_name for f in fields if f.required]


def test_nested_structs_are_inlined_with_their_constraints() -> None:
    s = json_schema("code-graph", inline=True)
    data = s["properties"]["data"]
    assert data["type"] == "object"
    assert {"requestId", "generatedAt", "workspace", "result", "meta"} <= set(data["required"])
    assert data["properties"]["meta"]["properties"]["approxTokens"] == {"type": "integer"}
    assert data["additionalProperties"] is False
    dotbot = json_schema("dotbot", inline=True)
    assert dotbot["properties"]["status"] == {"enum": ["error", "ok", "warning"]}
    issue = dotbot["properties"]["errors"]["items"]
    assert issue["required"] == ["code", "message"]


def test_raw_payload_fields_accept_any_json_and_show_no_placeholder_default() -> None:
    props = json_schema("response-v2", inline=True)["properties"]
    assert props["data"] == {}
    rate_limit = props["meta"]["properties"]["rate_limit"]
    assert rate_limit == {}


def test_legacy_v1_schema_allows_any_tool_fields() -> None:
    s = json_schema("legacy-v1", inline=True)
    assert s["required"] == []
    assert "additionalProperties" not in s
    assert set(s["properties"]["data"]["anyOf"][0]["properties"]) == {"_meta", "_warnings"}


def test_aliases_and_unknown_names() -> None:
    assert json_schema("v2") == json_schema("response-v2")
    with pytest.raises(UnknownDialectError, match="did you mean 'errorcode'"):
        json_schema("errorcod")


def test_deterministic() -> None:
    assert msgspec.json.encode(json_schema("dotbot", inline=True)) == msgspec.json.encode(
        json_schema("dotbot", inline=True)
    )


def test_inline_refs_resolves_nested_references_and_keeps_siblings() -> None:
    schema = {
        "$ref": "#/$defs/A",
        "$defs": {
            "A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B", "description": "the b"}}},
            "B": {"type": "object", "properties": {"n": {"type": "integer"}}},
        },
    }
    assert inline_refs(schema) == {
        "type": "object",
        "properties": {"b": {"type": "object", "properties": {"n": {"type": "integer"}}, "description": "the b"}},
    }


def test_inline_refs_refuses_recursive_components() -> None:
    schema = {"$ref": "#/$defs/A", "$defs": {"A": {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}}}}
    with pytest.raises(EnvglotError, match="recursive"):
        inline_refs(schema)


def test_hoist_makes_a_schema_components_of_another() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://example.com/tree",
        "title": "Tree",
        "type": "object",
        "properties": {
            "kids": {"type": "array", "items": {"$ref": "#"}},
            "leaf": {"$ref": "#/$defs/Leaf"},
            "old": {"$ref": "#/definitions/Old"},
            "same": {"$ref": "#/properties/leaf"},
            "anchored": {"$ref": "#here"},
        },
        "$defs": {"Leaf": {"$anchor": "here", "type": "string"}},
        "definitions": {"Old": {"type": "integer"}},
    }
    ref, defs = hoist(schema, {"Tree", "Leaf"})
    assert ref == {"$ref": "#/$defs/Tree_2"}
    assert set(defs) == {"Tree_2", "Leaf_2", "Old"}
    props = defs["Tree_2"]["properties"]
    assert props["kids"]["items"] == {"$ref": "#/$defs/Tree_2"}
    assert props["leaf"] == {"$ref": "#/$defs/Leaf_2"} and props["old"] == {"$ref": "#/$defs/Old"}
    assert props["same"] == {"$ref": "#/$defs/Tree_2/properties/leaf"} and props["anchored"] == {"$ref": "#here"}
    assert "$schema" not in defs["Tree_2"] and "$id" not in defs["Tree_2"]


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"$ref": "https://example.com/s.json"}, "refers outside itself"),
        ({"$ref": "#/$defs/Missing"}, "does not have"),
    ],
)
def test_hoist_refuses_what_cannot_be_self_contained(schema: dict[str, object], message: str) -> None:
    with pytest.raises(EnvglotError, match=message):
        hoist(schema, set())


def test_a_whole_document_payload_is_anyof_it_and_the_failure_document() -> None:
    """google-rpc: a success is the payload itself, so the document is the payload or the failure document."""
    failure = struct_schema(get_dialect("google-rpc").wire, inline=True)
    envelope = json_schema("google-rpc", inline=True)
    payload = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    out = embed_schema(envelope, "$", payload, wrap_value=True, failure=failure)
    assert out["type"] == "object" and out["$schema"] == SCHEMA_DIALECT
    wrapped = {"type": "object", "properties": {"value": payload}, "required": ["value"], "additionalProperties": False}
    # the resource, the resource wrapped (one that would not read back as itself), the failure
    assert out["anyOf"] == [payload, wrapped, {k: v for k, v in failure.items() if k != "$schema"}]
    assert embedded_payload(out, envelope, "$", failure=failure, wrap_value=True) == payload  # read back
    assert embedded_payload(envelope, envelope, "$", failure=failure) is None  # the plain schema
    assert embedded_payload({**out, "required": ["n"]}, envelope, "$", failure=failure) is NOT_EMBEDDED
    with pytest.raises(ValueError, match="failure document"):
        embed_schema(envelope, "$", payload)
