"""The agent's two tools over kb.json. `search_catalog` returns a list of `{id, title, text}`
objects: the trace adapter's default extractor reads them into `retrieved` and `context`."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

KB_PATH = Path(__file__).with_name("kb.json")
_WORD = re.compile(r"[a-z0-9]+")
_STOPWORDS = frozenset(
    "a an and are be can do does for from how i if in is it me my of on or the to what when "
    "where which with you your".split()
)


@cache
def load_kb() -> dict[str, Any]:
    return json.loads(KB_PATH.read_text(encoding="utf-8"))


def terms(text: str) -> set[str]:
    found = set()
    for word in _WORD.findall(text.lower()):
        if word not in _STOPWORDS:
            found.add(word[:-1] if len(word) > 3 and word.endswith("s") else word)
    return found


def search_catalog(query: str) -> list[dict[str, str]]:
    """Search the library's help pages (loans, renewals, fees, reservations, opening hours)
    and return the two best matches."""
    wanted = terms(query)
    scored = []
    for position, article in enumerate(load_kb()["articles"]):
        score = sum(
            2 * (w in terms(article["title"])) + (w in terms(article["text"])) for w in wanted
        )
        if score:
            scored.append((-score, position, article))
    return [article for _, _, article in sorted(scored, key=lambda row: row[:2])[:2]]


def get_loan(loan_id: str) -> str:
    """Look up one loan by its id (L- and three digits, e.g. L-501): book, status, details."""
    wanted = loan_id.strip().upper()
    for loan in load_kb()["loans"]:
        if loan["id"] == wanted:
            return json.dumps(loan)
    return json.dumps({"error": f"no loan {wanted}"})


TOOLS = [search_catalog, get_loan]
