"""A fact extractor over a small corpus: retrieve, extract triples with patterns, answer in JSON.

`run(case)` returns the trace the suite scores:
- `retrieved`: the two documents sharing the most words with the question;
- `triples`: `[subject, relation, object]` extracted from their sentences, about the person the
  question names (relations in the extractor's own vocabulary: `birthplace`, `worksFor`...);
- `answer`: JSON `{"subject", "facts": [{"relation", "object", "year"?}], "summary"}`;
- `citations`: one entry per summary sentence, citing the document its fact came from.
Deterministic: the same question always gives the same trace.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).with_name("corpus.json")
K = 2
WORD = re.compile(r"\w+")
STOPWORDS = frozenset(
    "a an and at did do does for in is of on the to was what when where which "
    "who whom with about me tell".split()
)

# (pattern, relation, summary template); a sentence yields at most one fact.
SUBJECT = r"(?P<s>[A-Z].*?)"
YEAR = r"(?: in (?:the )?(?P<y>\d{4}s?))?"
PATTERNS = (
    (rf"^{SUBJECT} was born in (?P<o>[A-Z][\w ]*?){YEAR}\.$", "birthplace", "{s} was born in {o}"),
    (
        rf"^{SUBJECT} worked for (?:the )?(?P<o>[A-Z][\w ]*?){YEAR}\.$",
        "worksFor",
        "{s} worked for {o}",
    ),
    (
        rf"^{SUBJECT} worked with (?P<o>[A-Z][\w ]*?){YEAR}\.$",
        "collaboratedWith",
        "{s} worked with {o}",
    ),
    (rf"^{SUBJECT} won the (?P<o>[A-Z][\w ]*?){YEAR}\.$", "won", "{s} won the {o}"),
    (rf"^{SUBJECT} married (?P<o>[A-Z][\w ]*?){YEAR}\.$", "spouse", "{s} married {o}"),
    (rf"^{SUBJECT} discovered (?P<o>\w[\w ]*?){YEAR}\.$", "discovered", "{s} discovered {o}"),
)
EXTRACTOR = "patterns-v1"


def words(text: str) -> set[str]:
    return {w for w in WORD.findall(text.lower()) if w not in STOPWORDS}


def sentences(text: str) -> list[str]:
    return [part.strip() for part in re.split(r"(?<=\.)\s+", text) if part.strip()]


def extract(sentence: str) -> dict[str, Any] | None:
    for pattern, relation, template in PATTERNS:
        match = re.match(pattern, sentence)
        if match:
            year = match.group("y")
            # A year is a number; a decade ("1840s") is kept as the text says it.
            fact: dict[str, Any] = {
                "subject": match.group("s"),
                "relation": relation,
                "object": match.group("o"),
            }
            if year:
                fact["year"] = int(year) if year.isdigit() else year
            summary = template.format(s=fact["subject"], o=fact["object"])
            fact["sentence"] = summary + (f" in {year}." if year else ".")
            return fact
    return None


class FactAgent:
    def __init__(self, corpus: Path = CORPUS) -> None:
        self.docs: list[dict[str, str]] = json.loads(corpus.read_text(encoding="utf-8"))

    def fingerprint(self) -> dict[str, Any]:
        return {"extractor": EXTRACTOR, "k": K}

    def retrieve(self, question: str) -> list[dict[str, str]]:
        wanted = words(question)
        scored = [(len(wanted & words(doc["text"])), i) for i, doc in enumerate(self.docs)]
        ranked = sorted((-score, i) for score, i in scored if score > 0)
        return [self.docs[i] for _, i in ranked[:K]]

    def run(self, case: dict[str, Any]) -> dict[str, Any]:
        question = case["input"]
        docs = self.retrieve(question)
        # The person the question names: its capitalised words, e.g. {"Marie", "Curie"}.
        names = set(re.findall(r"\b[A-Z][a-z]+\b", question))
        facts = []
        for doc in docs:
            for sentence in sentences(doc["text"]):
                fact = extract(sentence)
                if fact and names & set(fact["subject"].split()):
                    # Cited by the document's citation key: the id, unless it names another.
                    fact["doc"] = doc.get("cite_as", doc["id"])
                    facts.append(fact)
        subject = facts[0]["subject"] if facts else None
        answer = {
            "subject": subject,
            "facts": [
                {key: fact[key] for key in ("relation", "object", "year") if key in fact}
                for fact in facts
            ],
            "summary": " ".join(fact["sentence"] for fact in facts),
        }
        return {
            "answer": json.dumps(answer, ensure_ascii=False),
            "retrieved": [doc["id"] for doc in docs],
            "context": [doc["text"] for doc in docs],
            "triples": [[fact["subject"], fact["relation"], fact["object"]] for fact in facts],
            "citations": [{"sentence": fact["sentence"], "docs": [fact["doc"]]} for fact in facts],
        }


system = FactAgent()
