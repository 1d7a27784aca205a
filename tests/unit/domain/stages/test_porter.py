"""Our Porter stemmer gives nltk's stems (LoCoMo's evaluation stems with nltk's PorterStemmer()):
Porter's own examples, the NLTK extensions' irregular forms, and every word of the standard
library's source (its first 30,000 distinct words)."""

from __future__ import annotations

import re
import sysconfig
from pathlib import Path

import pytest

from pytest_evalcases.domain.stages.porter import porter_stem

porter = pytest.importorskip("nltk.stem.porter")  # a dev dependency: the reference

PAPER = (
    "caresses ponies ties caress cats feed agreed plastered bled motoring sing conflated "
    "troubled sized hopping tanned falling hissing fizzed failing filing happy sky relational "
    "conditional rational valenci hesitanci digitizer conformabli radicalli differentli vileli "
    "analogousli vietnamization predication operator feudalism decisiveness hopefulness "
    "callousness formaliti sensitiviti sensibiliti triplicate formative formalize electriciti "
    "electrical hopeful goodness revival allowance inference airliner gyroscopic adjustable "
    "defensible irritant replacement adjustment dependent adoption homologou communism activate "
    "angulariti homologous effective bowdlerize probate rate cease controll roll"
)
EXTENSIONS = (
    "skies dying lying tying news innings outings cannings howe proceed exceed succeed spies "
    "died tried enjoy fly generically analogi fully logi y yy yyyy ay by a is running dogs"
)


def test_porters_examples_and_the_nltk_extensions_stem_as_nltk_does():
    reference = porter.PorterStemmer()
    words = (PAPER + " " + EXTENSIONS).split()
    assert [porter_stem(w) for w in words] == [reference.stem(w) for w in words]


def test_30000_words_of_the_standard_library_stem_as_nltk_does():
    words: set[str] = set()
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="ignore")
        words.update(word.lower() for word in re.findall(r"[A-Za-z0-9\u00c0-\u024f]+", text))
        if len(words) > 30_000:  # enough to meet every rule many times; the whole is ~10 s
            break
    assert len(words) > 30_000
    reference = porter.PorterStemmer()
    differ = [(w, reference.stem(w), porter_stem(w)) for w in sorted(words)]
    assert [d for d in differ if d[1] != d[2]] == []
