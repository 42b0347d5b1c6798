"""The JavaScript subset of MDX partials: ternaries on props, strings, templates, JSX."""

from __future__ import annotations

import pytest

from rag_lib.corpus.normalize.mdx_expressions import JsSyntaxError, evaluate, parse, parse_container, uses_props


def test_ternary_picks_by_prop_and_reports_the_dropped_branch() -> None:
    text = "{props.product === 'workers' ? 'Workers' : <a href=\"/pages/\">Pages</a>}"
    node, end = parse_container(text, 0)
    assert end == len(text) and uses_props(node)
    taken = evaluate(node, {"product": "workers"})
    assert taken.value == "Workers"
    assert [text[a:b] for a, b in taken.dropped] == ['<a href="/pages/">Pages</a>']
    assert evaluate(node, {"product": "pages"}).value == '<a href="/pages/">Pages</a>'


def test_a_missing_prop_is_undefined_as_in_javascript() -> None:
    node, _ = parse("props.mode !== \"spa\" ? `a${props.mode}b` : 'spa'")
    result = evaluate(node, {})
    assert result.value == "ab" and result.missing == ["mode", "mode"]


def test_template_escapes_nested_templates_and_jsx_children() -> None:
    node, _ = parse("`x\\n\\ty ${props.p === \"1\" ? `one` : `two`}`")
    assert evaluate(node, {"p": "1"}).value == "x\n\ty one"
    node, _ = parse("<>have <code>{props.f}</code>{/* note */} it's \"here\"</>")
    assert evaluate(node, {"f": "_headers"}).value == "have <code>_headers</code> it's \"here\""


@pytest.mark.parametrize("text", ["props.a === 'x' && <>b</>", "(function () { return 1; })()", "a.b", "'open"])
def test_outside_the_grammar_is_a_syntax_error(text: str) -> None:
    with pytest.raises(JsSyntaxError):
        parse_container("{" + text + "}", 0)
