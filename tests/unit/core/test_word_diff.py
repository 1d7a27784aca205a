"""core/word_diff.py: the words that changed between two long texts, with context."""

from pytest_evalcases.core.word_diff import word_diff

PROMPT = (
    "You are the ShopCo support agent. Use the tools to look things up before you answer. "
    "Answer in one sentence, only from what the tools return. Never guess a number."
)


def test_a_changed_phrase_shows_with_two_words_either_side():
    new = PROMPT.replace("one sentence", "two short sentences")
    assert word_diff(PROMPT, new) == (
        "…Answer in one sentence, only from…",
        "…Answer in two short sentences, only from…",
    )


def test_a_change_at_the_start_or_end_has_no_ellipsis_there():
    assert word_diff("alpha beta gamma delta epsilon", "omega beta gamma delta epsilon") == (
        "alpha beta gamma…",
        "omega beta gamma…",
    )
    assert word_diff("a b c d e", "a b c d f") == ("…c d e", "…c d f")
    assert word_diff("a b c", "a b c d") == ("…b c", "…b c d")  # an added word


def test_two_distant_changes_span_both_and_whitespace_reads_as_one_space():
    old, new = "one two three\n\nfour five six seven", "ONE two three four five six SEVEN"
    assert word_diff(old, new) == ("one two three four five six seven", new)


def test_each_side_is_bounded():
    old = "start " + " ".join(f"w{i}" for i in range(200)) + " end"
    new = "begin " + " ".join(f"x{i}" for i in range(200)) + " finish"
    shown_old, shown_new = word_diff(old, new, limit=50)
    assert len(shown_old) <= 51 and len(shown_new) <= 51
    assert shown_old.startswith("start w0") and shown_old.endswith("…")


def test_equal_texts_read_whole_and_clipped():
    assert word_diff("same  text", "same text") == ("same text", "same text")
    assert word_diff("x" * 300, "x" * 300, limit=10) == ("x" * 9 + "…", "x" * 9 + "…")
