"""The agent's two LangChain tools over kb.json.

`search_kb` returns its text to the model and the matching articles as `Document`s in the
tool message's artifact (`response_format="content_and_artifact"`): that is what the trace
adapter turns into `retrieved` and `context`.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from langchain_core.documents import Document
from langchain_core.tools import tool

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


@tool(response_format="content_and_artifact")
def search_kb(query: str) -> tuple[str, list[Document]]:
    """Search the Pedalworks help articles (fees, extensions, deposits, equipment) and return
    the two best matches."""
    wanted = terms(query)
    scored = []
    for position, article in enumerate(load_kb()["articles"]):
        score = sum(
            2 * (w in terms(article["title"])) + (w in terms(article["text"])) for w in wanted
        )
        if score:
            scored.append((-score, position, article))
    hits = [article for _, _, article in sorted(scored, key=lambda row: row[:2])[:2]]
    documents = [Document(page_content=a["text"], metadata={"id": a["id"]}) for a in hits]
    return "\n\n".join(a["text"] for a in hits) or "No article matches.", documents


@tool
def get_rental(rental_id: str) -> str:
    """Look up one rental by its id (R- and three digits, e.g. R-101): bike, status, details."""
    wanted = rental_id.strip().upper()
    for rental in load_kb()["rentals"]:
        if rental["id"] == wanted:
            return json.dumps(rental)
    return json.dumps({"error": f"no rental {wanted}"})


TOOLS = [search_kb, get_rental]
