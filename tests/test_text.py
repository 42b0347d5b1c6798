"""The shared text helpers (rag_lib.core.text): one home for sentence rules, stopwords and CJK ranges."""

from __future__ import annotations

from rag_lib.core.text import (
    CHINESE_STOPWORDS,
    CJK_CHAR,
    ENGLISH_STOPWORDS,
    MARKDOWN_LINK,
    QUESTION_WORDS_EN,
    QUESTION_WORDS_ZH,
    question_sentences,
    sentence_spans,
    sentences,
)


def test_question_sentences_cut_at_marks_but_keep_file_names() -> None:
    assert question_sentences("怎么设置？secret 呢。") == ["怎么设置？", "secret 呢。"]
    assert question_sentences("Where is wrangler.toml? And .dev.vars?") == ["Where is wrangler.toml?", "And .dev.vars?"]
    assert question_sentences("  ") == []


def test_passage_sentences_also_break_at_newlines() -> None:
    assert sentences("One. Two\nthree。四") == ["One.", "Two", "three。", "四"]


def test_sentence_spans_are_where_the_passage_sentences_stand() -> None:
    text = "  One.\tTwo!  \n\n three；四？ ? Enter a value: > ***\n"
    spans = sentence_spans(text)
    assert [text[a:b] for a, b in spans] == sentences(text) == [
        "One.", "Two!", "three；", "四？", "?", "Enter a value: > ***"]
    assert spans[0] == (2, 6) and sentence_spans("") == sentence_spans(" \n ") == []


def test_the_aspect_stopwords_extend_the_question_words_per_language() -> None:
    assert QUESTION_WORDS_EN < ENGLISH_STOPWORDS and QUESTION_WORDS_ZH < CHINESE_STOPWORDS
    assert not any(CJK_CHAR.search(w) for w in ENGLISH_STOPWORDS)
    assert all(CJK_CHAR.search(w) for w in CHINESE_STOPWORDS)


def test_markdown_links_keep_their_text() -> None:
    assert MARKDOWN_LINK.sub(r"\1", "See [the docs](/x) and ![img](a.png).") == "See the docs and img."


def test_an_answer_is_shown_as_prose() -> None:
    from rag_lib.core.text import as_prose

    shown = as_prose("Use the [Wrangler file](/workers/wrangler/) and **Secret**.")
    assert shown == "Use the Wrangler file and Secret."
    assert as_prose("| CPU time | 10 ms | 5 min<br />(default: 30 seconds) | [1]") == (
        "CPU time; 10 ms; 5 min; (default: 30 seconds); [1]")
    assert as_prose("| Free | 10 ms |\n| --- | --- |\n| Paid | 5 min |") == "Free; 10 ms\nPaid; 5 min"
    # Code stays verbatim (a command is quoted as written), and a product of numbers is not italic.
    command = "Run `wrangler secret put *NAME*` for 2 * 3 keys."
    assert as_prose(command) == command
    assert as_prose("Pass `--test-scheduled` to [`wrangler dev`](/workers/wrangler/commands/#dev).") == (
        "Pass `--test-scheduled` to `wrangler dev`.")


def test_a_fragment_is_not_an_answer() -> None:
    from rag_lib.core.text import is_fragment

    assert is_fragment("To add a secret via the dashboard: [1]")
    assert is_fragment("[1] [2]") and is_fragment("步骤如下：[1]")
    assert not is_fragment("Secrets are encrypted. [1]")
