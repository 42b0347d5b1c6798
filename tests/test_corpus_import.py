"""Your corpus as a batch (issue 49, items 1 and 2): every format read, the parser's damage warned about per file,
bad inputs refused naming the file and line, and nothing half-written."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from rag_lib.core.errors import SnapshotError
from rag_lib.corpus.build import build_corpus, load_chunks, load_pages
from rag_lib.corpus.importer import import_corpus, main
from rag_lib.corpus.importing.stage import SourceSpec

REFCARD = Path(__file__).parent / "fixtures" / "debian-refcard" / "refcard-en-a4.pdf"
SPEC = SourceSpec("tests/test_corpus_import.py", "CC0-1.0", "https://docs.example.org")
PARAGRAPH = ("Retrieval ranks every chunk of the corpus for a question, and the evidence is the Top-k. A fact "
             "that sits in a chunk ranked below the cut never reaches the answer, however good the generator is.")


def _docs(folder: Path) -> Path:
    (folder / "guide" / "_static").mkdir(parents=True)
    (folder / "guide" / "setup.md").write_text(
        "---\ntitle: Setting up\n---\nimport Tabs from '~/components';\n\n## Install\n\n<Tabs>Run `pip install x`."
        f"</Tabs>\n\n{PARAGRAPH}\n", encoding="utf-8")
    (folder / "guide" / "limits.html").write_text(
        "<html><head><title>Limits | Docs</title></head><body><nav>Home · Guide</nav><main><h1>Limits</h1>"
        f"<p>{PARAGRAPH}</p><h2>Per plan</h2><table><tr><th>Plan</th><th>CPU</th></tr>"
        "<tr><td rowspan='2'>Free</td><td>10 ms</td></tr><tr><td>50 ms</td></tr></table>"
        "<pre>x = 1\n</pre><footer>© Example</footer></main></body></html>", encoding="utf-8")
    (folder / "notes.txt").write_text(f"Release notes\n\n{PARAGRAPH}\n", encoding="utf-8")
    (folder / "guide" / "_static" / "search.html").write_text("<p>excluded</p>", encoding="utf-8")
    shutil.copy(REFCARD, folder / "refcard.pdf")
    return folder


def test_the_refcard_fixture_is_the_debian_file() -> None:
    assert hashlib.sha256(REFCARD.read_bytes()).hexdigest() == \
        "e876ef5e889cc82835b96a1b32df6a295e41534a1adae69def6d4ad981e38f61"


def test_a_folder_of_every_format_becomes_a_verified_batch_with_warnings_per_file(tmp_path: Path) -> None:
    batch = import_corpus(_docs(tmp_path / "docs"), "mine", SPEC, root=tmp_path / "snapshots", quiet=True)
    root = tmp_path / "snapshots" / "mine"
    assert batch.root == root and batch.documents == 4 and batch.chunks >= 5
    manifest = json.loads((root / "raw" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["format"] == "documents" and manifest["license"] == "CC0-1.0"
    assert sorted(f["path"] for f in manifest["files"]) == [  # _static excluded; bytes copied as they were
        "files/guide/limits.html", "files/guide/setup.md", "files/notes.txt", "files/refcard.pdf"]
    assert (root / "raw" / "files" / "refcard.pdf").read_bytes() == REFCARD.read_bytes()
    pages = {p.slug: p for p in load_pages(root=root)}
    assert pages["guide/setup"].title == "Setting up" and "Run `pip install x`." in pages["guide/setup"].markdown
    assert "import Tabs" not in pages["guide/setup"].markdown and "<Tabs>" not in pages["guide/setup"].markdown
    limits = pages["guide/limits"]
    assert limits.title == "Limits" and limits.url == "https://docs.example.org/guide/limits.html"
    assert "| Plan | CPU |" in limits.markdown and "```\nx = 1\n```" in limits.markdown
    assert "Home · Guide" not in limits.markdown and "© Example" not in limits.markdown
    assert pages["refcard"].title == "Debian Reference Card"
    chunks = load_chunks(root=root)  # verified against the manifest and the normalized pages
    assert {c.page for c in chunks} == set(pages)
    report = json.loads((root / "import_report.json").read_text(encoding="utf-8"))
    by_file: dict[str, set[str]] = {}
    for w in report["warnings"]:
        by_file.setdefault(w["document"], set()).add(w["check"])
    assert by_file == {"files/refcard.pdf": {"broken_lines", "glued_words"},  # the two-column card, as extracted
                       "files/guide/limits.html": {"flattened_table"}}  # its merged cell
    sample = (root / "parse_sample.html").read_text(encoding="utf-8")
    assert "src='raw/files/refcard.pdf'" in sample and "Queryinstalledpackages" in sample  # file beside text
    # the build command rebuilds the same chunks from raw/
    assert [c.id for c in build_corpus(root=root).chunks] == [c.id for c in chunks]


def test_empty_and_near_duplicate_documents_are_warned_about(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("a.md", "copy-of-a.md"):
        (docs / name).write_text(f"# A page\n\n{PARAGRAPH} {PARAGRAPH}\n", encoding="utf-8")
    (docs / "stub.md").write_text("# Stub\n\nTODO\n", encoding="utf-8")
    import_corpus(docs, "dups", SPEC, root=tmp_path / "snapshots", quiet=True)
    report = json.loads((tmp_path / "snapshots" / "dups" / "import_report.json").read_text(encoding="utf-8"))
    found = {(w["document"], w["check"]) for w in report["warnings"]}
    assert found == {("files/copy-of-a.md", "near_duplicate"), ("files/stub.md", "empty")}


def test_a_beir_corpus_jsonl_is_one_document_per_line(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join(json.dumps({"_id": f"d{i}", "title": f"Doc {i}", "text": f"{PARAGRAPH} {i}"})
                                for i in range(3)) + "\n", encoding="utf-8")
    batch = import_corpus(corpus, "beir", SPEC, root=tmp_path / "snapshots", quiet=True)
    pages = load_pages(root=batch.root)
    assert [p.slug for p in pages] == ["d0", "d1", "d2"] and pages[1].title == "Doc 1"
    assert {c.page for c in load_chunks(root=batch.root)} == {"d0", "d1", "d2"}


@pytest.mark.parametrize(("files", "message"), [
    ({"corpus.jsonl": '{"_id": "a", "text": "x"}\n{"title": "no id", "text": "y"}\n'},
     r"corpus\.jsonl, line 2: no `_id`"),
    ({"corpus.jsonl": '{"_id": "a", "text": "x"}\n{"_id": "a", "text": "y"}\n'}, r"line 2: `_id` 'a' appears twice"),
    ({"corpus.jsonl": '{"_id": "a"\n'}, r"corpus\.jsonl, line 1: not JSON"),
    ({"ok.md": "# Fine\n\nText.\n", "legacy.txt": "caf\xe9 cr\xe8me".encode("latin-1")},
     r"legacy\.txt is not UTF-8 text \(byte 3"),
    ({"image.png": b"\x89PNG"}, r"holds no file of a known format"),
])
def test_bad_input_is_refused_by_name_and_nothing_is_written(tmp_path: Path, files: dict[str, str | bytes],
                                                             message: str) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, content in files.items():
        (docs / name).write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    snapshots = tmp_path / "snapshots"
    snapshots.mkdir()
    with pytest.raises(SnapshotError, match=message):
        import_corpus(docs, "bad", SPEC, root=snapshots, quiet=True)
    assert list(snapshots.iterdir()) == []  # no batch, no staging folder left


def test_an_existing_batch_is_never_overwritten(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text(f"# A\n\n{PARAGRAPH}\n", encoding="utf-8")
    first = import_corpus(docs, "once", SPEC, root=tmp_path / "snapshots", quiet=True)
    before = (first.root / "chunks.jsonl").read_bytes()
    (docs / "a.md").write_text(f"# A, edited\n\n{PARAGRAPH}\n", encoding="utf-8")
    with pytest.raises(SnapshotError, match=r"already exists .* choose a new name"):
        import_corpus(docs, "once", SPEC, root=tmp_path / "snapshots", quiet=True)
    assert (first.root / "chunks.jsonl").read_bytes() == before


def test_the_command_line_imports_and_refuses_a_path_like_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    from rag_lib.__main__ import main as rag_main

    monkeypatch.setattr("rag_lib.corpus.importer.SNAPSHOTS_DIR", tmp_path / "snapshots")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text(f"# A\n\n{PARAGRAPH}\n", encoding="utf-8")
    assert rag_main(["corpus", "import", str(docs), "--name", "cli", "--source", "here", "--licence", "CC0-1.0"]) == 0
    assert "imported cli: 1 documents" in capsys.readouterr().out
    with pytest.raises(SystemExit) as info:
        main([str(docs), "--name", "../escape", "--source", "here", "--licence", "CC0-1.0"])
    assert info.value.code == 2 and "is not a batch name" in capsys.readouterr().err
