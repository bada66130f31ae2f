"""The closed catalogue of diagnostic kinds and their message templates (re-exported by
:mod:`envglot.diagnostics`).

It sits below :mod:`envglot.policy` and :mod:`envglot.diagnostics`, which both read it.
"""

from __future__ import annotations

import enum

__all__ = ["LOSSY_KINDS", "TEMPLATES", "Kind"]


class Kind(enum.StrEnum):
    """What kind of loss or change a diagnostic reports (closed catalogue)."""

    FIELD_DROPPED = "field_dropped"
    """A source field has no place in the target and was left out."""
    EXTRA_PROBLEM_DROPPED = "extra_problem_dropped"
    """The target carries one error; further errors were left out."""
    CODE_MAPPED = "code_mapped"
    """The native code had no exact equivalent; a code of the same category was chosen."""
    CODE_RESPELLED = "code_respelled"
    """The code was written in the target's spelling of the same meaning (same category and
    retryability), and converting back gives the source's code exactly: nothing is lost."""
    CODE_UNKNOWN = "code_unknown"
    """A native code no table knows; it was read with the fallback category."""
    CATEGORY_INFERRED = "category_inferred"
    """The source states no category where its contract has a place for one; it was inferred
    from the spelling of a code outside the dialect's documented catalogue (an ``ext`` row)."""
    CODE_EXTENSION = "code_extension"
    """The chosen code lies outside the target dialect's documented catalogue."""
    RETRYABLE_CHANGED = "retryable_changed"
    """The target derives or implies a retryable value that differs from the source's."""
    VALUE_COERCED = "value_coerced"
    """A value was changed to fit the target (type, format, precision)."""
    PAYLOAD_WRAPPED = "payload_wrapped"
    """A non-object payload was wrapped as {"value": ...} for a target that needs an object."""
    PAYLOAD_UNWRAPPED = "payload_unwrapped"
    """A {"value": ...} payload was read as the wrapped non-object value."""
    SYNTHESIZED = "synthesized"
    """A value the target requires was invented by a documented rule."""
    STATUS_MISMATCH = "status_mismatch"
    """Two flags of the input disagree (e.g. MCP isError vs the envelope's outcome)."""
    RESIDUE_DROPPED = "residue_dropped"
    """A preserve-mode residue meant for another dialect was left out."""
    RESIDUE_REJECTED = "residue_rejected"
    """A preserve-mode residue was not applied: it does not restore the document it records, or
    applying it would change the outcome or contradict the document it travels in."""
    OUTCOME_INFERRED = "outcome_inferred"
    """The outcome was inferred from the transport: an MCP ``isError`` result without an envelope."""
    WEAK_DETECTION = "weak_detection"
    """The document has no dialect's markers; it was read as a legacy-v1 bare payload by elimination."""
    BOM_REMOVED = "bom_removed"
    """The input began with a UTF-8 byte order mark, which was removed."""
    FIELD_RELOCATED = "field_relocated"
    """A value was read from a place its own contract does not give it; writers put it in the standard place."""


TEMPLATES: dict[Kind, str] = {
    Kind.FIELD_DROPPED: "{field} has no place in {dialect}[: {because}]",
    Kind.EXTRA_PROBLEM_DROPPED: "{dialect} carries one error; error #{number} ({code}) was left out",
    Kind.CODE_MAPPED: (
        "{source} code {code} has no exact {dialect} equivalent; {result}"
        "[, which reads as '{reads_as}', not '{was}'{kept}]"
    ),
    Kind.CODE_RESPELLED: "{source} code {code} written as {dialect} {chosen}, which reads back as it",
    Kind.CODE_UNKNOWN: (
        "{dialect} {member} {value} is not in the tables[; read as category {category}][, going by {by}]"
    ),
    Kind.CATEGORY_INFERRED: (
        "{dialect} code {code} is outside the documented catalogue and no {member} states a category; "
        "read as {category}, inferred from its spelling"
    ),
    Kind.CODE_EXTENSION: "{code} is outside {dialect}'s documented catalogue",
    Kind.RETRYABLE_CHANGED: "{dialect} {basis} implies retryable={value}; {stated}",
    Kind.VALUE_COERCED: "{value} {change}[: {because}]",
    Kind.PAYLOAD_WRAPPED: '{value} wrapped as {{"value": ...}}',
    Kind.PAYLOAD_UNWRAPPED: 'read {{"value": ...}} as the wrapped payload',
    Kind.SYNTHESIZED: "{need}; wrote {value}[ ({how})]",
    Kind.STATUS_MISMATCH: "{conflict}; {resolved}",
    Kind.RESIDUE_DROPPED: "preserve residue for {source} has no use in {dialect}",
    Kind.RESIDUE_REJECTED: "preserve residue not applied: {because}",
    Kind.OUTCOME_INFERRED: (
        "MCP isError=true and the content is no envelope: read as a failure of category {category}, "
        "the object kept as the error's details; {message}"
    ),
    Kind.WEAK_DETECTION: "no dialect's markers: read as a {dialect} bare payload (the whole object is the payload)",
    Kind.BOM_REMOVED: "removed the UTF-8 byte order mark at the start of the input",
    Kind.FIELD_RELOCATED: "{field} read from {found} (the contract puts it in {place}; written there)",
}
"""Each kind's message: ``{fact}`` names a fact the call site passes (``{dialect}`` is the
diagnostic's dialect); a ``[...]`` clause is written only when every fact in it is given."""

LOSSY_KINDS = frozenset(
    {
        Kind.FIELD_DROPPED,
        Kind.EXTRA_PROBLEM_DROPPED,
        Kind.CODE_MAPPED,
        Kind.RETRYABLE_CHANGED,
        Kind.VALUE_COERCED,
        Kind.RESIDUE_DROPPED,
        Kind.RESIDUE_REJECTED,
    }
)
"""The kinds that report lost or changed information (the others are notes)."""
