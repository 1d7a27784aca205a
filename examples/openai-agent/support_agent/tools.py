"""The agent's two tools: the functions it runs and the JSON-schema definitions the model sees.

Tool outputs are JSON strings, because that is what goes back to the model in a `tool` message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

KB_PATH = Path(__file__).with_name("kb.json")
DEFAULT_K = 3

_WORD = re.compile(r"[a-z0-9]+")
# Question and function words: they match almost every article, so they must not rank one.
_STOPWORDS = frozenset(
    """a about an and any are be by can do does for from have how i if in is it me my of on
    or the there this to what when where which who why will with you your""".split()
)


@cache
def load_kb() -> dict[str, Any]:
    return json.loads(KB_PATH.read_text(encoding="utf-8"))


def terms(text: str) -> set[str]:
    """Lower-case content words with a plural -s stripped ("orders" finds "order")."""
    found = set()
    for word in _WORD.findall(text.lower()):
        if word in _STOPWORDS:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        found.add(word)
    return found


def search_kb(query: str, k: int = DEFAULT_K) -> str:
    """Articles ranked by shared words (a title match counts twice); ties keep the kb order."""
    wanted = terms(query)
    scored = []
    for position, article in enumerate(load_kb()["articles"]):
        title, text = terms(article["title"]), terms(article["text"])
        score = sum(2 * (word in title) + (word in text) for word in wanted)
        if score > 0:
            scored.append((-score, position, article))
    scored.sort(key=lambda row: row[:2])
    hits = [
        {"id": article["id"], "title": article["title"], "text": article["text"]}
        for _, _, article in scored[: max(1, int(k))]
    ]
    return json.dumps(hits)


def get_order(order_id: str) -> str:
    wanted = order_id.strip().upper()
    for order in load_kb()["orders"]:
        if order["id"] == wanted:
            return json.dumps(order)
    return json.dumps({"error": f"no order {wanted}"})


TOOL_FUNCTIONS: dict[str, Callable[..., str]] = {"search_kb": search_kb, "get_order": get_order}

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "search_kb",
            "description": (
                "Search the Kettlebird knowledge base (help articles about the kettles, "
                "returns, warranty, shipping and troubleshooting) and return the best-matching "
                "articles with their id, title and text."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "description": "What to look for, in the customer's own words.",
                    },
                    "k": {
                        "type": "integer",
                        "description": "How many articles to return.",
                        "default": DEFAULT_K,
                        "minimum": 1,
                        "maximum": 10,
                    },
                },
                "required": ["query"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_order",
            "description": (
                "Look up one order by its id (a letter, a dash and four digits, e.g. A-1001) "
                "and return the item, its status and delivery details."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "order_id": {"type": "string", "description": "The order id, e.g. A-1001."}
                },
                "required": ["order_id"],
                "additionalProperties": False,
            },
        },
    },
]


def call_tool(name: str, arguments: dict[str, Any]) -> str:
    """Run one tool call from the model; a bad call becomes an error the model can read."""
    function = TOOL_FUNCTIONS.get(name)
    if function is None:
        return json.dumps({"error": f"unknown tool {name!r}"})
    try:
        return function(**arguments)
    except (TypeError, ValueError) as exc:  # wrong or missing arguments from the model
        return json.dumps({"error": f"bad arguments for {name}: {exc}"})
