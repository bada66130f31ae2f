"""One message template per diagnostic kind: call sites pass facts, the template writes the sentence.

The static half reads every call site in ``src/envglot`` (``report.add(Kind.X, ...)``,
``diagnostic(Kind.X, ...)``, ``ctx.synthesized(...)``) and checks the facts it passes against its
kind's template, so no call site can render into an error at run time; the suites that run the
conversions (tests/dialects, the matrix, the CLI transcripts) exercise the same calls for real.
"""

from __future__ import annotations

import ast
import re
import string
from collections.abc import Iterator
from pathlib import Path

import pytest

import envglot
from envglot.diagnostics import DISCARD, TEMPLATES, Kind, Report, diagnostic, render, template_facts
from envglot.dialect import writable_names

SRC = Path(envglot.__file__).parent
SYNTHESIZED_HELPER = "synthesized"  # Context.synthesized(target, field, [index], **facts)


def test_every_kind_has_one_template() -> None:
    assert list(TEMPLATES) == list(Kind)
    for kind, template in TEMPLATES.items():
        assert template and template.count("[") == template.count("]"), kind
        assert "[[" not in template, f"{kind}: clauses do not nest"


@pytest.mark.parametrize("kind", list(Kind), ids=lambda k: k.value)
def test_every_template_renders_with_its_facts(kind: Kind) -> None:
    needed, optional = template_facts(kind)
    facts = {f: f"<{f}>" for f in (needed | optional) - {"dialect"}}
    full = render(kind, "somewhere", facts)
    assert "{" not in full.replace('{"value": ...}', "") and "[" not in full
    for f in facts:
        assert f"<{f}>" in full
    bare = render(kind, "somewhere", {f: v for f, v in facts.items() if f in needed})
    for f in optional:
        assert f"<{f}>" not in bare, "an optional clause is left out when its fact is not given"


def test_a_fact_the_template_does_not_name_or_a_missing_one_is_a_programming_error() -> None:
    with pytest.raises(TypeError, match=r"field_dropped.*colour"):
        render(Kind.FIELD_DROPPED, "dotbot", {"field": "x", "colour": "red"})
    with pytest.raises(TypeError, match="field"):
        render(Kind.FIELD_DROPPED, "dotbot", {})
    with pytest.raises(TypeError, match="dialect"):  # the template names the diagnostic's dialect
        render(Kind.FIELD_DROPPED, None, {"field": "x"})


def test_the_message_is_rendered_from_the_facts() -> None:
    rep = Report("ignore")
    rep.add(Kind.FIELD_DROPPED, "$.audit.host", "response-v2", field="host")
    rep.add(Kind.FIELD_DROPPED, "$.x", "result", field="x", because="it is negative")
    rep.add(Kind.BOM_REMOVED, "$")
    assert [d.message for d in rep] == [
        "host has no place in response-v2",
        "x has no place in result: it is negative",
        "removed the UTF-8 byte order mark at the start of the input",
    ]
    assert rep.diagnostics[0] == diagnostic(Kind.FIELD_DROPPED, "$.audit.host", "response-v2", field="host")


def test_a_huge_fact_is_cut() -> None:
    d = diagnostic(Kind.VALUE_COERCED, "$", value="x" * 100_000, change="replaced")
    assert len(d.message) < 2_000


def test_a_report_that_keeps_nothing_renders_nothing() -> None:
    """The discarding report never formats a message (facts a template would refuse pass unread)."""
    DISCARD.add(Kind.FIELD_DROPPED, "$.x", None, colour="red")
    assert len(DISCARD) == 0


def _pattern(template: str) -> re.Pattern[str]:
    """``template`` as a regular expression: a fact is any text, a ``[...]`` clause optional."""
    out = []
    for i, piece in enumerate(re.split(r"\[([^\[\]]*)\]", template)):
        part = "".join(
            re.escape(text.replace("{{", "{").replace("}}", "}")) + ("(.+?)" if field else "")
            for text, field, _, _ in string.Formatter().parse(piece)
        )
        out.append(f"(?:{part})?" if i % 2 else part)
    return re.compile("".join(out), re.DOTALL)


def _golden_inputs() -> list[Path]:
    return sorted((Path(__file__).parent / "dialects").glob("*/cases/*.json"))


@pytest.mark.parametrize("to", sorted(writable_names()))
def test_every_message_of_the_golden_conversions_is_its_kinds_template(to: str) -> None:
    patterns = {k: _pattern(t) for k, t in TEMPLATES.items()}
    seen: set[Kind] = set()
    for case in _golden_inputs():
        for preserve in (False, True):
            try:
                c = envglot.conversion(case.read_bytes(), to=to, unsupported="ignore", preserve=preserve)
            except envglot.EnvglotError:
                continue
            for d in c.diagnostics:
                assert patterns[d.kind].fullmatch(d.message), f"{case.name} -> {to}: {d.kind.value}: {d.message}"
                seen.add(d.kind)
    assert Kind.FIELD_DROPPED in seen


# --- the call sites ----------------------------------------------------------------------------


def _calls() -> Iterator[tuple[str, ast.Call]]:
    for path in sorted(SRC.rglob("*.py")):
        where = str(path.relative_to(SRC))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                yield where, node


def _kind_of(node: ast.expr) -> Kind | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "Kind":
        return Kind[node.attr]
    return None


def _name(call: ast.Call) -> str | None:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None


Site = tuple[str, int, Kind, list[ast.expr], list[ast.keyword], bool]


def _sites() -> list[Site]:
    """Every call that makes a diagnostic: (file, line, kind, the arguments after kind and path,
    the facts, whether the dialect is given)."""
    out: list[Site] = []
    for where, call in _calls():
        name = _name(call)
        if any(k.arg is None for k in call.keywords):
            continue  # a forwarder (test_the_one_forwarder); its callers are the sites
        if name in ("add", "diagnostic") and call.args and (kind := _kind_of(call.args[0])) is not None:
            out.append((where, call.lineno, kind, call.args[2:], call.keywords, len(call.args) > 2))
        elif name == SYNTHESIZED_HELPER and isinstance(call.func, ast.Attribute):
            # ctx.synthesized(target, field, [index], **facts): the dialect is the target's name
            out.append((where, call.lineno, Kind.SYNTHESIZED, [], call.keywords, True))
    return out


def test_the_scan_finds_the_call_sites() -> None:
    assert len(_sites()) > 60
    assert {site[2] for site in _sites()} == set(Kind)  # every kind is reported somewhere


def test_the_one_forwarder() -> None:
    """Only ``Context.synthesized`` passes facts on unread (``**facts``): its callers are scanned."""
    forwarding = [
        where
        for where, call in _calls()
        if call.args and _kind_of(call.args[0]) is not None and any(k.arg is None for k in call.keywords)
    ]
    assert forwarding == ["context.py"]


@pytest.mark.parametrize("site", _sites(), ids=lambda s: f"{s[0]}:{s[1]}")
def test_each_call_site_passes_facts_its_template_takes(site: Site) -> None:
    where, line, kind, rest, keywords, has_dialect = site
    assert len(rest) <= 1, f"{where}:{line}: only the dialect follows kind and path; facts are named"
    for arg in rest:  # the dialect: a name or an expression, never a message
        assert not isinstance(arg, ast.JoinedStr | ast.BinOp), f"{where}:{line}: a preformatted message"
        assert not (isinstance(arg, ast.Constant) and isinstance(arg.value, str) and " " in arg.value), (
            f"{where}:{line}: a preformatted message"
        )
    given = {k.arg for k in keywords if k.arg is not None}
    needed, optional = template_facts(kind)
    assert given <= (needed | optional) - {"dialect"}, f"{where}:{line}: {sorted(given - needed - optional)}"
    missing = needed - given - ({"dialect"} if has_dialect else set())
    assert not missing, f"{where}:{line}: {kind.value} needs {sorted(missing)}"


def test_no_diagnostic_is_built_from_a_message_outside_the_catalogue() -> None:
    """A ``Diagnostic(message=...)`` is built only by :func:`envglot.diagnostics.diagnostic`."""
    built = [
        f"{where}:{call.lineno}"
        for where, call in _calls()
        if _name(call) == "Diagnostic" and any(k.arg == "message" for k in call.keywords)
    ]
    assert built == [f"diagnostics.py:{_line_of_the_one_builder()}"]


def _line_of_the_one_builder() -> int:
    tree = ast.parse((SRC / "diagnostics.py").read_text(encoding="utf-8"))
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "diagnostic")
    return next(n.lineno for n in ast.walk(fn) if isinstance(n, ast.Call) and _name(n) == "Diagnostic")


def test_templates_name_facts_only() -> None:
    """No positional ``{}`` and no format spec: a fact is written as the call site states it."""
    for kind, template in TEMPLATES.items():
        for _, field, spec, conversion in string.Formatter().parse(template.replace("[", "").replace("]", "")):
            if field is not None:
                assert field and not spec and not conversion, kind
