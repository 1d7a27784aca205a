"""The Porter stemmer as LoCoMo's evaluation runs it: nltk's `PorterStemmer()` in its default
mode (Porter's 1980 algorithm with NLTK's extensions), written here so that a replay scoring
`locomo_f1` does not import nltk (its package start-up loads numpy and some 60 modules: ~200 ms
and ~44 MB, measured). tests/unit/domain/stages/test_porter.py checks that every word of a large
vocabulary stems as nltk's stemmer stems it.

The rules, after M. F. Porter, "An algorithm for suffix stripping" (1980), and the NLTK
extensions (a table of irregular forms; words of one or two letters kept; `ies`/`ied` of a
four-letter word give `ie`; `ied` gives `i`; `y` becomes `i` only after a consonant that is not
the word's first letter; a two-letter vowel-consonant stem counts as *o; in step 2 `bli` gives
`ble`, `alli` is reduced first, and `fulli` and `logi` are added).

A rule list is applied as Porter applies it: the first rule whose suffix the word ends with
decides, and when its condition fails the word is left as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

VOWELS = frozenset("aeiou")
IRREGULAR = {
    form: stem
    for stem, forms in {
        "sky": ("sky", "skies"),
        "die": ("dying",),
        "lie": ("lying",),
        "tie": ("tying",),
        "news": ("news",),
        "inning": ("innings", "inning"),
        "outing": ("outings", "outing"),
        "canning": ("cannings", "canning"),
        "howe": ("howe",),
        "proceed": ("proceed",),
        "exceed": ("exceed",),
        "succeed": ("succeed",),
    }.items()
    for form in forms
}

Condition = Callable[[str], bool] | None
Rule = tuple[str, str, Condition]
DOUBLE = "*d"  # a rule's suffix meaning "ends with a double consonant"


def consonants(word: str) -> list[bool]:
    """Whether each letter is a consonant: not a vowel, and a `y` only after a vowel (or first)."""
    flags: list[bool] = []
    for index, letter in enumerate(word):
        if letter in VOWELS:
            flags.append(False)
        elif letter == "y":
            flags.append(index == 0 or not flags[index - 1])
        else:
            flags.append(True)
    return flags


def measure(stem: str) -> int:
    """m in [C](VC){m}[V]: how many times a vowel run is followed by a consonant run."""
    flags = consonants(stem)
    return sum(1 for a, b in zip(flags, flags[1:], strict=False) if not a and b)


def positive_measure(stem: str) -> bool:
    return measure(stem) > 0


def contains_vowel(stem: str) -> bool:
    return not all(consonants(stem))


def ends_double_consonant(word: str) -> bool:
    return len(word) >= 2 and word[-1] == word[-2] and consonants(word)[-1]


def ends_cvc(word: str) -> bool:
    """*o: consonant-vowel-consonant, the last not w, x or y; or (NLTK) a vowel-consonant word."""
    flags = consonants(word)
    if len(word) >= 3 and flags[-3] and not flags[-2] and flags[-1]:
        return word[-1] not in "wxy"
    return len(word) == 2 and not flags[0] and flags[1]


def apply_rules(word: str, rules: Sequence[Rule]) -> str:
    for suffix, replacement, condition in rules:
        if suffix == DOUBLE:
            if not ends_double_consonant(word):
                continue
            stem = word[:-2]
        elif word.endswith(suffix):
            stem = word[: len(word) - len(suffix)]
        else:
            continue
        return stem + replacement if condition is None or condition(stem) else word
    return word


def step1a(word: str) -> str:
    if word.endswith("ies") and len(word) == 4:
        return word[:-3] + "ie"
    return apply_rules(
        word, [("sses", "ss", None), ("ies", "i", None), ("ss", "ss", None), ("s", "", None)]
    )


def step1b(word: str) -> str:
    if word.endswith("ied"):
        return word[:-3] + ("ie" if len(word) == 4 else "i")
    if word.endswith("eed"):
        stem = word[:-3]
        return stem + "ee" if measure(stem) > 0 else word
    for suffix in ("ed", "ing"):
        if word.endswith(suffix) and contains_vowel(word[: -len(suffix)]):
            stem = word[: -len(suffix)]
            break
    else:
        return word
    return apply_rules(
        stem,
        [
            ("at", "ate", None),
            ("bl", "ble", None),
            ("iz", "ize", None),
            (DOUBLE, stem[-1], lambda _: stem[-1] not in "lsz"),
            ("", "e", lambda s: measure(s) == 1 and ends_cvc(s)),
        ],
    )


def step1c(word: str) -> str:
    return apply_rules(word, [("y", "i", lambda s: len(s) > 1 and consonants(s)[-1])])


STEP2 = [
    ("ational", "ate"),
    ("tional", "tion"),
    ("enci", "ence"),
    ("anci", "ance"),
    ("izer", "ize"),
    ("bli", "ble"),
    ("alli", "al"),
    ("entli", "ent"),
    ("eli", "e"),
    ("ousli", "ous"),
    ("ization", "ize"),
    ("ation", "ate"),
    ("ator", "ate"),
    ("alism", "al"),
    ("iveness", "ive"),
    ("fulness", "ful"),
    ("ousness", "ous"),
    ("aliti", "al"),
    ("iviti", "ive"),
    ("biliti", "ble"),
    ("fulli", "ful"),
]


def step2(word: str) -> str:
    if word.endswith("alli") and positive_measure(word[:-4]):
        return step2(word[:-4] + "al")
    rules: list[Rule] = [(suffix, to, positive_measure) for suffix, to in STEP2]
    rules.append(("logi", "log", lambda _: positive_measure(word[:-3])))
    return apply_rules(word, rules)


STEP3 = [
    ("icate", "ic"),
    ("ative", ""),
    ("alize", "al"),
    ("iciti", "ic"),
    ("ical", "ic"),
    ("ful", ""),
    ("ness", ""),
]
STEP4 = (
    "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "ou",
    "ism", "ate", "iti", "ous", "ive", "ize",
)  # fmt: skip


def step3(word: str) -> str:
    return apply_rules(word, [(suffix, to, positive_measure) for suffix, to in STEP3])


def step4(word: str) -> str:
    def longer(stem: str) -> bool:
        return measure(stem) > 1

    def ion(stem: str) -> bool:
        return measure(stem) > 1 and stem[-1:] in ("s", "t")

    return apply_rules(word, [(s, "", ion if s == "ion" else longer) for s in STEP4])


def step5a(word: str) -> str:
    if word.endswith("e"):
        stem = word[:-1]
        m = measure(stem)
        if m > 1 or (m == 1 and not ends_cvc(stem)):
            return stem
    return word


def step5b(word: str) -> str:
    return apply_rules(word, [("ll", "l", lambda _: measure(word[:-1]) > 1)])


def porter_stem(word: str) -> str:
    """The stem nltk's `PorterStemmer().stem(word)` gives (lower-cased)."""
    if word.isdigit():  # no rule applies to a number: the commonest token of an answer, kept
        return word
    stem = word.lower()
    if stem in IRREGULAR:
        return IRREGULAR[stem]
    if len(word) <= 2:
        return stem
    for step in (step1a, step1b, step1c, step2, step3, step4, step5a, step5b):
        stem = step(stem)
    return stem
