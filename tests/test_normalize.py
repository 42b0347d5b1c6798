"""Tests for the MDX → Markdown normaliser, on snippets copied from the real snapshot."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

from rag_lib.core.errors import NormalizationError
from rag_lib.corpus.normalize import (
    apply_section_rules,
    load_section_rules,
    normalize_page,
    normalize_snapshot,
    page_slug,
)
from rag_lib.corpus.snapshot import Snapshot, SourceFile, load_snapshot

FRONT = "---\ntitle: Sample page\n---\n\n"


def make_snapshot(
    tmp_path: Path,
    page: str,
    partials: dict[str, str] | None = None,
    path: str = "src/content/docs/workers/sample/index.mdx",
) -> tuple[Snapshot, SourceFile]:
    """A one-page snapshot (plus partials) written under ``tmp_path``."""
    files = [
        SourceFile(
            path=path,
            kind="page",
            commit="c",
            sha256="-",
            chars=len(page),
            url="https://developers.cloudflare.com/workers/sample/",
        )
    ]
    for name, text in {path: page, **(partials or {})}.items():
        target = tmp_path / "raw" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        if name != path:
            files.append(SourceFile(path=name, kind="partial", commit="c", sha256="-", chars=len(text)))
    snap = Snapshot(batch="test", root=tmp_path, source_repo="x", license="CC-BY-4.0", files=tuple(files))
    return snap, files[0]


def norm(tmp_path: Path, body: str, partials: dict[str, str] | None = None, rules: dict | None = None):
    snap, src = make_snapshot(tmp_path, FRONT + body, partials)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return normalize_page(snap, src, rules or {})


# ---- slugs, front matter, imports -------------------------------------------------------------


def test_slug_strips_prefix_suffix_and_index() -> None:
    assert page_slug("src/content/docs/workers/configuration/secrets.mdx") == "workers/configuration/secrets"
    assert page_slug("src/content/docs/d1/worker-api/index.mdx") == "d1/worker-api"


def test_front_matter_and_imports_removed_title_kept(tmp_path: Path) -> None:
    page = norm(tmp_path, 'import { Render, TabItem, Tabs, WranglerConfig } from "~/components";\n\nText.\n')
    assert page.title == "Sample page"
    assert page.markdown == "Text.\n"
    assert page.slug == "workers/sample"
    assert page.url == "https://developers.cloudflare.com/workers/sample/"
    assert sorted(r.kind for r in page.removals) == ["frontmatter", "import"]


def test_multiline_import_removed(tmp_path: Path) -> None:
    body = 'import {\n\tRender,\n\tAnchorHeading,\n\tType,\n} from "~/components";\n\nBody.\n'
    assert norm(tmp_path, body).markdown == "Body.\n"


# ---- components (snippets from the snapshot) ----------------------------------------------------


def test_type_and_metainfo_inline(tmp_path: Path) -> None:
    body = '- `binding` <Type text="string" /> <MetaInfo text="required" />\n  - The binding name.\n'
    assert norm(tmp_path, body).markdown == "- `binding` (string) required\n  - The binding name.\n"


def test_wrangler_config_keeps_code_byte_intact(tmp_path: Path) -> None:
    code = '```toml\n[[d1_databases]]\nbinding = "<BINDING_NAME>"\ndatabase_name = "<DATABASE_NAME>"\n```'
    page = norm(tmp_path, f"Add:\n\n<WranglerConfig>\n\n{code}\n\n</WranglerConfig>\n\nAfter.\n")
    assert page.markdown == f"Add:\n\n{code}\n\nAfter.\n"


def test_tabs_become_bold_labels_not_headings(tmp_path: Path) -> None:
    body = (
        '<Tabs syncKey="workersExamples"> <TabItem label="JavaScript" icon="seti:javascript">\n'
        '```js\nconst stmt = env.DB.prepare("SELECT 1");\n```\n'
        '</TabItem> <TabItem label="Python" icon="seti:python">\n'
        '```py\nstmt = self.env.DB.prepare("SELECT 1")\n```\n</TabItem> </Tabs>\n\n#### Parameters\n'
    )
    assert norm(tmp_path, body).markdown == (
        '**JavaScript**\n\n```js\nconst stmt = env.DB.prepare("SELECT 1");\n```\n\n'
        '**Python**\n\n```py\nstmt = self.env.DB.prepare("SELECT 1")\n```\n\n#### Parameters\n'
    )


def test_tabs_inside_list_item_keep_list_indentation(tmp_path: Path) -> None:
    body = (
        '- Example:\n\n\t<Tabs syncKey="x"> <TabItem label="JavaScript">\n\t```js\n\tconst a = 1;\n\t```\n'
        "\t</TabItem> </Tabs>\n"
    )
    assert (
        norm(tmp_path, body).markdown == "- Example:\n\n\t**JavaScript**\n\n\t```js\n\tconst a = 1;\n\t```\n"
    )


def test_details_become_html_details(tmp_path: Path) -> None:
    body = (
        '<Details header="Node.js version manager">\nUse a Node version manager like '
        "[Volta](https://volta.sh/).\n</Details>\n"
    )
    assert norm(tmp_path, body).markdown == (
        "<details>\n<summary>Node.js version manager</summary>\n\n"
        "Use a Node version manager like [Volta](https://volta.sh/).\n\n</details>\n"
    )


def test_asides_become_blockquotes(tmp_path: Path) -> None:
    body = (
        ":::note[Pages Functions billing]\n\n"
        "All [Pages Functions](/pages/functions/) are billed as Workers.\n"
        "Second line.\n\n:::\n\n:::caution\nDo not store secrets.\n:::\n"
    )
    assert norm(tmp_path, body).markdown == (
        "> **Pages Functions billing:** All [Pages Functions](/pages/functions/) are billed as Workers.\n"
        "> Second line.\n\n> **Caution:** Do not store secrets.\n"
    )


def test_package_managers_become_npm_commands(tmp_path: Path) -> None:
    body = (
        '<PackageManagers type="create" pkg="cloudflare@latest" args={"r2-worker"} />\n\n'
        '<PackageManagers type="exec" pkg="vite" args="dev" prefix="CLOUDFLARE_ENV=staging" />\n\n'
        '<PackageManagers type="run" args="deploy" />\n'
    )
    assert norm(tmp_path, body).markdown == (
        "```sh\nnpm create cloudflare@latest -- r2-worker\n```\n\n"
        "```sh\nCLOUDFLARE_ENV=staging npx vite dev\n```\n\n```sh\nnpm run deploy\n```\n"
    )


def test_steps_unwrap_and_overindented_content_joins_its_list_item(tmp_path: Path) -> None:
    body = (
        "<Steps>\n1.  Create a file.\n\n3.  Run your `dev` command\n\n        **Wrangler**\n"
        '        <PackageManagers type="exec" pkg="wrangler" args="dev" />\n\n</Steps>\n'
    )
    assert norm(tmp_path, body).markdown == (
        "1.  Create a file.\n\n3.  Run your `dev` command\n\n    **Wrangler**\n\n"
        "    ```sh\n    npx wrangler dev\n    ```\n"
    )


def test_dash_button_dropped_and_logged(tmp_path: Path) -> None:
    body = (
        "1. In the Cloudflare dashboard, go to the **Workers & Pages** page.\n\n"
        '   <DashButton url="/?to=/:account/workers-and-pages" />\n\n2. Select **Create**.\n'
    )
    page = norm(tmp_path, body)
    assert page.markdown == (
        "1. In the Cloudflare dashboard, go to the **Workers & Pages** page.\n\n2. Select **Create**.\n"
    )
    assert [r.kind for r in page.removals if r.kind.startswith("component")] == ["component:DashButton"]


def test_wrangler_command_and_namespace_become_command_lines(tmp_path: Path) -> None:
    page = norm(
        tmp_path,
        '<WranglerNamespace namespace="d1" />\n\n'
        '<WranglerCommand command="r2 bucket create" headingLevel={3}/>\n',
    )
    assert page.markdown == "`wrangler d1`\n\n`wrangler r2 bucket create`\n"
    assert {r.kind for r in page.removals} >= {"component:WranglerCommand", "component:WranglerNamespace"}


def test_typescript_example_keeps_code(tmp_path: Path) -> None:
    body = (
        '<TypeScriptExample filename="src/index.ts">\n```ts\nexport default {};\n```\n</TypeScriptExample>\n'
    )
    assert norm(tmp_path, body).markdown == "```ts\nexport default {};\n```\n"


def test_file_tree_keeps_list(tmp_path: Path) -> None:
    body = "<FileTree>\n\n- functions\n  - index.js\n  - fruits\n\n</FileTree>\n"
    assert norm(tmp_path, body).markdown == "- functions\n  - index.js\n  - fruits\n"


def test_directory_listing_and_presets_table_dropped(tmp_path: Path) -> None:
    page = norm(
        tmp_path,
        "The following bindings are available today:\n\n<DirectoryListing />\n\n"
        "<PagesBuildPresetsTable />\n\n## What is a binding?\n",
    )
    assert page.markdown == "The following bindings are available today:\n\n## What is a binding?\n"
    assert {r.kind for r in page.removals} >= {
        "component:DirectoryListing",
        "component:PagesBuildPresetsTable",
    }


def test_inline_badge_in_link_becomes_link_text(tmp_path: Path) -> None:
    body = (
        '## Automatic provisioning\n\n<a\n\thref="https://developers.cloudflare.com/changelog/x/"\n'
        '\ttarget="_blank"\n>\n\t<InlineBadge preset="beta" />\n</a>\n\nWrangler can provision.\n'
    )
    assert norm(tmp_path, body).markdown == (
        "## Automatic provisioning\n\n[Beta](https://developers.cloudflare.com/changelog/x/)\n\n"
        "Wrangler can provision.\n"
    )


def test_anchor_heading_and_conditional_branch_from_params(tmp_path: Path) -> None:
    partial = (
        "---\nparams:\n  - product\n---\n\n"
        '{ props.product === "durable-objects" && <><AnchorHeading title="Compute billing" depth={2}/></> }\n'
        '{ props.product === "workers" && <><AnchorHeading title="Compute billing" depth={3}/></> }\n\n'
        "Durable Objects are billed for duration.\n"
    )
    body = (
        '<Render\n\tfile="durable-objects-pricing"\n\tproduct="durable-objects"\n'
        '\tparams={{ product: "workers" }}\n/>\n'
    )
    page = norm(tmp_path, body, {"src/content/partials/durable-objects/durable-objects-pricing.mdx": partial})
    assert page.markdown == "### Compute billing\n\nDurable Objects are billed for duration.\n"


def test_render_inlines_partial_with_default_product_and_param(tmp_path: Path) -> None:
    partial = (
        "---\ninputParameters: lastSentence\n---\n\nBefore you bind, enable Email Routing. {props.one}\n"
    )
    partials = {
        "src/content/partials/workers/intro.mdx": partial,
        "src/content/partials/workers/env_and_secrets.mdx": (
            "---\n{}\n---\n\n## Compare secrets and environment variables\n\nSecrets are variables.\n"
        ),
    }
    body = (
        '<Render file="env_and_secrets" />\n\n'
        '<Render file="intro" params={{\n\tone: "Then assign an array.",\n}} />\n'
    )
    assert norm(tmp_path, body, partials).markdown == (
        "## Compare secrets and environment variables\n\nSecrets are variables.\n\n"
        "Before you bind, enable Email Routing. Then assign an array.\n"
    )


def test_switch_partial_picks_the_case(tmp_path: Path) -> None:
    partial = (
        "---\ninputParameters: x\n---\n\nFor setup, select the following options:\n\n{(function () {\n"
        "switch (props.category) {\ncase 'hello-world':\nreturn (<ul>\n\n"
        "<li>For <em>Which template?</em>, choose <code>{props.type}</code>.</li>\n</ul>);\n"
        "case 'web-framework':\nreturn (<ul>\n<li>Complete the framework's own CLI wizard.</li>\n</ul>);\n"
        "default: {\nthrow new Error(`UNKNOWN: ${props.category}`);\n}}})()}\n"
    )
    body = (
        '<Render\n\tfile="c3-post-run-steps"\n\tparams={{\n\t\tcategory: "hello-world",\n'
        '\t\ttype: "Hello World Worker",\n\t}}\n/>\n'
    )
    page = norm(tmp_path, body, {"src/content/partials/workers/c3-post-run-steps.mdx": partial})
    assert page.markdown == (
        "For setup, select the following options:\n\n- For *Which template?*, choose `Hello World Worker`.\n"
    )
    assert page.warnings == ()


def test_comments_removed_and_logged(tmp_path: Path) -> None:
    body = (
        "#### Error: exceeded CPU time limit {/* exceeded-cpu */}\n\nText.\n\n"
        "{/* <!-- 3. [Authorizing users with Auth0](/x/) --> */}\n\n<!-- hidden -->\nMore.\n"
    )
    page = norm(tmp_path, body)
    assert page.markdown == "#### Error: exceeded CPU time limit\n\nText.\n\nMore.\n"
    assert sum(r.kind == "comment" for r in page.removals) == 3


def test_placeholders_in_code_and_inline_code_untouched(tmp_path: Path) -> None:
    body = (
        "Run `wrangler <COMMAND> --env <ENVIRONMENT>` or <code>Promise<R2Object></code>.\n\n"
        "```sh\nnpx wrangler r2 bucket create <BUCKET>\n<Tabs>\n```\n\nReturns Promise\\<Response>.\n"
    )
    page = norm(tmp_path, body)
    assert page.markdown == body
    assert page.warnings == ()


def test_tables_kept_byte_intact(tmp_path: Path) -> None:
    table = (
        "|              | Requests<sup>1</sup>   | Duration |\n"
        "| ------------ | --------------- | -------- |\n"
        "| **Free**     | 100,000 per day <br /> | No charge |"
    )
    assert norm(tmp_path, f"{table}\n").markdown == f"{table}\n"


# ---- bad input ------------------------------------------------------------------------------------


def test_unclosed_fence_raises_naming_page(tmp_path: Path) -> None:
    with pytest.raises(NormalizationError, match=r"workers/sample.*never closed"):
        norm(tmp_path, "Text.\n\n```js\nconst a = 1;\n")


def test_unknown_component_warns_and_keeps_text(tmp_path: Path) -> None:
    snap, src = make_snapshot(tmp_path, FRONT + '<Callout kind="x">\nKeep this text.\n</Callout>\n')
    with pytest.warns(UserWarning, match="unknown component <Callout>"):
        page = normalize_page(snap, src, {})
    assert page.markdown == "Keep this text.\n"
    assert len(page.warnings) == 1


def test_missing_partial_raises_naming_page_and_partial(tmp_path: Path) -> None:
    with pytest.raises(NormalizationError, match=r"workers/sample.*partials/workers/kv_pricing\.mdx"):
        norm(tmp_path, '<Render file="kv_pricing" product="workers" />\n')


def test_empty_page_warns(tmp_path: Path) -> None:
    snap, src = make_snapshot(tmp_path, FRONT + 'import { Render } from "~/components";\n')
    with pytest.warns(UserWarning, match="empty"):
        page = normalize_page(snap, src, {})
    assert page.markdown == ""


def test_non_utf8_source_is_rejected(tmp_path: Path) -> None:
    snap, src = make_snapshot(tmp_path, FRONT + "ok\n")
    (tmp_path / "raw" / src.path).write_bytes(b"---\ntitle: x\n---\n\xff\xfe\n")
    with pytest.raises(Exception, match="not valid UTF-8"):
        normalize_page(snap, src, {})


# ---- section rules -------------------------------------------------------------------------------

MD = "Intro.\n\n## Workers\n\nW.\n\n### Example\n\nE.\n\n## Workers KV\n\nKV costs.\n\n## R2\n\nR.\n"


def test_drop_sections_drops_heading_and_subsections() -> None:
    kept, removals = apply_section_rules(MD, "p", {"drop_sections": ["Workers KV"], "reason": "r"})
    assert kept == "Intro.\n\n## Workers\n\nW.\n\n### Example\n\nE.\n\n## R2\n\nR.\n"
    assert [(r.kind, r.detail, r.chars) for r in removals] == [
        ("section", "Workers KV", len("## Workers KV\n\nKV costs.\n\n"))
    ]


def test_keep_sections_keeps_intro_and_named_sections() -> None:
    kept, removals = apply_section_rules(MD, "p", {"keep_sections": ["Workers"], "reason": "r"})
    assert kept == "Intro.\n\n## Workers\n\nW.\n\n### Example\n\nE.\n"
    assert [r.detail for r in removals] == ["Workers KV", "R2"]


def test_rule_naming_missing_heading_fails_loudly(tmp_path: Path) -> None:
    with pytest.raises(NormalizationError, match=r"'Workers KV pricing'.*not found"):
        norm(
            tmp_path,
            "## Workers KV\n\nx\n",
            rules={"workers/sample": {"drop_sections": ["Workers KV pricing"], "reason": "r"}},
        )


def test_rule_naming_missing_page_fails_loudly(tmp_path: Path) -> None:
    snap, _ = make_snapshot(tmp_path, FRONT + "x\n")
    with pytest.raises(NormalizationError, match="workers/nope"):
        normalize_snapshot(snap, {"workers/nope": {"drop_sections": ["A"], "reason": "r"}})


def test_load_section_rules_validates(tmp_path: Path) -> None:
    bad = tmp_path / "s.yaml"
    bad.write_text("pages:\n  a/b:\n    drop_sections: [X]\n", encoding="utf-8")
    with pytest.raises(NormalizationError, match="reason"):
        load_section_rules(bad)
    bad.write_text(
        "pages:\n  a/b:\n    reason: r\n    drop_sections: [X]\n    keep_sections: [Y]\n", encoding="utf-8"
    )
    with pytest.raises(NormalizationError, match="exactly one"):
        load_section_rules(bad)


# ---- the whole snapshot ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus() -> list:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return normalize_snapshot(load_snapshot())


def _outside_code(markdown: str) -> str:
    text = re.sub(r"^([ \t]*)(```|~~~).*?^\1\2[ \t]*$", "", markdown, flags=re.DOTALL | re.MULTILINE)
    return re.sub(r"`[^`\n]*`|<code>.*?</code>", "", text)


def test_every_page_normalizes_in_manifest_order(corpus: list) -> None:
    snap = load_snapshot(verify=False)
    assert [p.path for p in corpus] == [f.path for f in snap.pages]
    assert all(p.title and p.markdown.strip() for p in corpus)
    assert [w for p in corpus for w in p.warnings] == []


def test_no_component_tags_or_mdx_left(corpus: list) -> None:
    for page in corpus:
        rest = _outside_code(page.markdown)
        assert not re.findall(r"(?<![\\\w])</?[A-Z][a-z][A-Za-z0-9]*[\s/>]", rest), page.slug
        assert not re.search(r"^\s*:::|^import |\{/\*|\{\s*props\.", rest, re.MULTILINE), page.slug


def test_markdown_conventions(corpus: list) -> None:
    for page in corpus:
        md = page.markdown
        assert md.endswith("\n") and not md.endswith("\n\n") and not md.startswith("\n"), page.slug
        assert len(re.findall(r"^[ \t]*(```|~~~)", md, re.MULTILINE)) % 2 == 0, page.slug
        assert not re.search(r"^# ", _outside_code(md), re.MULTILINE), (
            page.slug
        )  # the title is not in the body


def test_workers_pricing_has_no_kv_pricing(corpus: list) -> None:
    page = next(p for p in corpus if p.slug == "workers/platform/pricing")
    assert "## Workers KV" not in page.markdown
    assert "## Workers" in page.markdown and "## R2" in page.markdown
    for p in corpus:  # no page states a KV allowance or KV price (Q9a must stay unanswerable)
        assert "Workers KV is included in both the Free and Paid" not in p.markdown, p.slug
        for line in p.markdown.split("\n"):
            if re.search(r"\bKV\b", line):
                assert not re.search(r"million|/ ?day|per day|GB-month|free allowance", line), (p.slug, line)


# ---- components of the wide batch (snippets from cloudflare-docs-wide-2026-11-30) ------------------

WIDE = "cloudflare-docs-wide-2026-11-30"


def test_inline_glossary_tooltip_keeps_the_term_in_the_sentence(tmp_path: Path) -> None:
    body = (
        "all of your queries from a single <GlossaryTooltip term=\"session\">session</GlossaryTooltip> read from "
        "a version, known as the <GlossaryTooltip term=\"primary database instance\"> primary database instance "
        "</GlossaryTooltip>. D1 request latency.\n"
    )
    page = norm(tmp_path, body)
    assert page.markdown == (
        "all of your queries from a single session read from a version, known as the primary database "
        "instance. D1 request latency.\n"
    )
    assert page.warnings == ()


def test_unclosed_aside_closes_before_the_next_heading(tmp_path: Path) -> None:
    body = (
        ":::note\n\n\nThe `stale-while-revalidate` and `stale-if-error` directives are not supported.\n"
        "#### Parameters\n\n* `request` string | Request\n"
    )
    snap, src = make_snapshot(tmp_path, FRONT + body)
    with pytest.warns(UserWarning, match="never closed; closed before the next heading"):
        page = normalize_page(snap, src, {})
    assert page.markdown == (
        "> **Note:** The `stale-while-revalidate` and `stale-if-error` directives are not supported.\n\n"
        "#### Parameters\n\n* `request` string | Request\n"
    )


def test_stray_aside_close_is_dropped_and_logged(tmp_path: Path) -> None:
    body = "* File permissions and ownership are not supported.\n\n:::\n\nThe full `node:fs` API.\n"
    snap, src = make_snapshot(tmp_path, FRONT + body)
    with pytest.warns(UserWarning, match="closes no aside"):
        page = normalize_page(snap, src, {})
    assert page.markdown == "* File permissions and ownership are not supported.\n\nThe full `node:fs` API.\n"
    assert "aside-close" in {r.kind for r in page.removals}


def test_jsx_aside_with_tab_and_space_indentation(tmp_path: Path) -> None:
    body = (
        '<Aside type="note">\n\tTo use advanced routing control with `run_worker_first`, you\'ll need:\n'
        "    - [Wrangler](/workers/wrangler/install-and-update/) v4.20.0 and above\n\n</Aside>\n"
    )
    assert norm(tmp_path, body).markdown == (
        "> **Note:** To use advanced routing control with `run_worker_first`, you'll need:\n"
        "> - [Wrangler](/workers/wrangler/install-and-update/) v4.20.0 and above\n"
    )


CUSTOM_HEADERS = (
    "---\nparams:\n  - product\n---\n\n"
    'import { Code } from "@astrojs/starlight/components";\n\n'
    "## Custom headers\n\nThis file will be parsed by "
    "{props.product === 'workers' ? 'Workers' : 'Cloudflare Pages'} and applied.\n\n"
    "Custom headers are not applied to responses generated by {props.product === 'workers' ? "
    "'your Worker code' : <a href=\"/pages/functions/\">Pages Functions</a>}. If you use SSR, "
    "{props.product === 'workers' ? <>have configured <code>assets.run_worker_first</code>, or otherwise use "
    "a Worker script</> : <>or Pages Functions (an <a href=\"/pages/functions/advanced-mode/\">\"advanced mode\" "
    "<code>{/* prettier-ignore-start */}_worker.js{/* prettier-ignore-end */}</code></a>)</>}, attach them.\n\n"
    "<Code\n\tlang=\"txt\"\n\tcode={`/static/*\\n\\tX-Robots-Tag: nosnippet\\n\\n${props.product === \"workers\" ? "
    "\"https://myworker.mysubdomain.workers.dev/*\" : \"https://myproject.pages.dev/*\"}"
    "\\n\\tX-Robots-Tag: noindex`}\n/>\n\n"
    "| <code>{props.product === 'workers' ? 'https://myworker.mysubdomain.workers.dev/home' : "
    "'https://myproject.pages.dev/home'}</code> | `X-Robots-Tag: noindex` |\n\n"
    "The same features that <a href={props.product === 'workers' ? '/workers/static-assets/redirects/' : "
    "'/pages/configuration/redirects/'}>`_redirects`</a> offers.\n\n"
    "{props.product === \"workers\" ? (\n<>\nTo allow CORS from specific <a href=\"/workers/previews/\">preview "
    "URLs</a>, handle it in your Worker's code.\n</>\n) : (\n<>\nDefine a pattern for a <code>{'\\*.pages.dev'}</code> "
    "subdomain's branch.\n</>\n)}\n\n"
    "<Render file=\"dir\" params={{ filename: \"_headers\", product: props.product }} />\n"
)


def test_product_conditionals_in_a_partial_follow_the_render_params(tmp_path: Path) -> None:
    partials = {
        "src/content/partials/workers/custom_headers.mdx": CUSTOM_HEADERS,
        "src/content/partials/workers/dir.mdx": (
            "---\n{}\n---\n\nAuthor your <code>{props.filename}</code> file in your "
            "{props.product === 'workers' ? <a href=\"/workers/static-assets/binding/#directory\">static assets "
            "directory</a> : <a href=\"/pages/configuration/build-configuration/\">build output directory</a>}.\n"
        ),
    }
    body = '<Render\n\tfile="custom_headers"\n\tparams={{ product: "workers" }}\n\tproduct="workers"\n/>\n'
    page = norm(tmp_path, body, partials)
    assert page.markdown == (
        "## Custom headers\n\nThis file will be parsed by Workers and applied.\n\n"
        "Custom headers are not applied to responses generated by your Worker code. If you use SSR, have configured "
        "<code>assets.run_worker_first</code>, or otherwise use a Worker script, attach them.\n\n"
        "```txt\n/static/*\n\tX-Robots-Tag: nosnippet\n\nhttps://myworker.mysubdomain.workers.dev/*\n"
        "\tX-Robots-Tag: noindex\n```\n\n"
        "| <code>https://myworker.mysubdomain.workers.dev/home</code> | `X-Robots-Tag: noindex` |\n\n"
        "The same features that [`_redirects`](/workers/static-assets/redirects/) offers.\n\n"
        "To allow CORS from specific [preview URLs](/workers/previews/), handle it in your Worker's code.\n\n"
        "Author your <code>_headers</code> file in your "
        "[static assets directory](/workers/static-assets/binding/#directory).\n"
    )
    assert page.warnings == ()
    assert sum(r.kind == "jsx-branch" for r in page.removals) == 8  # every Pages branch, logged


def test_props_ternary_in_a_mermaid_template_becomes_a_mermaid_block(tmp_path: Path) -> None:
    partial = (
        "---\nparams:\n  - not_found_handling\n---\n\n"
        "Set it to <code>{props.not_found_handling}</code>.\n\n<details>\n<summary>Diagram</summary>\n"
        "<pre class=\"mermaid\">\n{`flowchart\n\tRequest@{ shape: stadium }\n\t${props.not_found_handling === "
        "\"single-page-application\" ? `subgraph single-page-application\n\tend` : `subgraph 404-page\n\tend`}\n`}\n"
        "</pre>\n</details>\n\n{props.not_found_handling === \"single-page-application\" ? \"Although unlikely, you\" "
        ": \"You\"} can read more.\n"
    )
    body = '<Render\n\tfile="routing"\n\tparams={{ not_found_handling: "404-page" }}\n/>\n'
    page = norm(tmp_path, body, {"src/content/partials/workers/routing.mdx": partial})
    assert page.markdown == (
        "Set it to <code>404-page</code>.\n\n<details>\n<summary>Diagram</summary>\n\n"
        "```mermaid\nflowchart\n\tRequest@{ shape: stadium }\n\tsubgraph 404-page\n\tend\n```\n\n</details>\n\n"
        "You can read more.\n"
    )


def test_comment_around_code_fences_is_dropped(tmp_path: Path) -> None:
    body = (
        "Refer to the API documentation.\n\n{/* #### Example of a D1 session\n\n```ts\nconst s = 1;\n```\n*/}\n\n"
        "## Next\n\n```js\n{/* kept: inside code */}\n```\n"
    )
    page = norm(tmp_path, body)
    assert page.markdown == "Refer to the API documentation.\n\n## Next\n\n```js\n{/* kept: inside code */}\n```\n"
    assert [r.kind for r in page.removals].count("comment") == 1


def test_code_component_becomes_a_fenced_block(tmp_path: Path) -> None:
    body = '<Code\n\tlang="txt"\n\tcode={`https://:project.pages.dev/*\\n\\tAccess-Control-Allow-Origin: *`}\n/>\n'
    expected = "```txt\nhttps://:project.pages.dev/*\n\tAccess-Control-Allow-Origin: *\n```\n"
    assert norm(tmp_path, body).markdown == expected


def test_link_cards_buttons_and_card_grid_become_links(tmp_path: Path) -> None:
    body = (
        "## Logs\n\n<CardGrid>\n\t<LinkCard\n\t\ttitle=\"Workers Logs\"\n"
        "\t\thref=\"/workers/observability/logs/workers-logs/\"\n"
        "\t\tdescription=\"Automatically collect, store, filter, and analyze logs.\"\n\t/>\n</CardGrid>\n\n"
        '<LinkButton href="/workers/configuration/sites/start-from-scratch/">\n\tStart from scratch\n</LinkButton>\n'
    )
    assert norm(tmp_path, body).markdown == (
        "## Logs\n\n[Workers Logs](/workers/observability/logs/workers-logs/): Automatically collect, store, filter, "
        "and analyze logs.\n\n[Start from scratch](/workers/configuration/sites/start-from-scratch/)\n"
    )


def test_example_unwraps_and_badge_is_text(tmp_path: Path) -> None:
    body = (
        '### Infrequent Access storage <Badge text="Beta" variant="caution" size="small" />\n\n'
        "<Example>\n\nText in **Expression Editor**:\n\n"
        "```txt\nhttp.cookie contains \"session_id\"\n```\n\n</Example>\n"
    )
    assert norm(tmp_path, body).markdown == (
        "### Infrequent Access storage Beta\n\nText in **Expression Editor**:\n\n"
        "```txt\nhttp.cookie contains \"session_id\"\n```\n"
    )


def test_api_request_becomes_a_curl_command(tmp_path: Path) -> None:
    body = (
        '<APIRequest\n\tpath="/accounts/{account_id}/pages/projects/{project_name}/deployments"\n\tmethod="GET"\n/>\n\n'
        "Try it with one of your projects.\n"
    )
    assert norm(tmp_path, body).markdown == (
        '```sh\ncurl "https://api.cloudflare.com/client/v4/accounts/{account_id}/pages/projects/{project_name}/'
        'deployments" \\\n  --request GET \\\n  --header "Authorization: Bearer <API_TOKEN>"\n```\n\n'
        "Try it with one of your projects.\n"
    )


@pytest.mark.parametrize(
    "tag",
    [
        "<PagesBuildEnvironmentLanguages />", "<PagesBuildEnvironmentTools />", "<PagesBuildEnvironment />",
        "<CompatibilityFlags experimental />", '<YouTube id="Y86vLbcZq28" />', "<R2LocalUploadsDiagram />",
        '<Stream videoId="d506935b6767fd07626adbec46d41e6d" videoTitle="Introduction to Workers RPC" />',
    ],
)
def test_generated_tables_videos_and_diagrams_are_dropped_and_logged(tmp_path: Path, tag: str) -> None:
    page = norm(tmp_path, f"### Tools\n\n{tag}\n\nAfter.\n")
    assert page.markdown == "### Tools\n\nAfter.\n"
    assert page.warnings == ()
    assert [r.kind for r in page.removals if r.kind.startswith("component:")] == [f"component:{tag[1:].split()[0]}"]


@pytest.fixture(scope="module")
def wide_corpus() -> list:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return normalize_snapshot(load_snapshot(WIDE))


def test_wide_batch_has_no_unknown_component_or_dropped_expression(wide_corpus: list) -> None:
    assert len(wide_corpus) == len(load_snapshot(WIDE, verify=False).pages)
    problems = [w for p in wide_corpus for w in p.warnings
                if "unknown component" in w or "unsupported JSX" in w or "has no value" in w]
    assert problems == []
    for page in wide_corpus:
        rest = _outside_code(page.markdown)
        assert not re.findall(r"(?<![\\\w])</?[A-Z][a-z][A-Za-z0-9]*[\s/>]", rest), page.slug
        assert not re.search(r"^\s*:::|^import |\{/\*|props\.\w+ *[=!?]|\$\{", rest, re.MULTILINE), page.slug
