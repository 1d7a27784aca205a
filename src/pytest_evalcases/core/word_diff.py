"""A short word diff of two long texts, for stale messages: the words that changed with a few
words of context either side, "…" marking what is cut:
`"…Answer in one sentence, only…" -> "…Answer in two short sentences, only…"`."""

from __future__ import annotations

import difflib

CONTEXT_WORDS = 2  # unchanged words shown either side of a change
SHOWN_WORDS_CHARS = 120  # at most this many characters of each side (then "…")


def word_diff(
    old: str, new: str, context: int = CONTEXT_WORDS, limit: int = SHOWN_WORDS_CHARS
) -> tuple[str, str]:
    """Each text cut to the span where the two differ (first changed word to last), with
    `context` words either side, whitespace shown as one space, and "…" where text is left out;
    each side at most `limit` characters. Equal texts give both whole (clipped)."""
    old_words, new_words = old.split(), new.split()
    matcher = difflib.SequenceMatcher(None, old_words, new_words, autojunk=False)
    changes = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    if not changes:
        return _clip(" ".join(old_words), limit), _clip(" ".join(new_words), limit)
    first, last = changes[0], changes[-1]
    return (
        _span(old_words, first[1], last[2], context, limit),
        _span(new_words, first[3], last[4], context, limit),
    )


def _span(words: list[str], start: int, end: int, context: int, limit: int) -> str:
    begin, stop = max(0, start - context), min(len(words), end + context)
    text = " ".join(words[begin:stop])
    if len(text) > limit:
        text = text[: limit - 1].rstrip()
        return ("…" if begin > 0 else "") + text + "…"
    return ("…" if begin > 0 else "") + text + ("…" if stop < len(words) else "")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
