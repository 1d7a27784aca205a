"""The files `python -m pytest_evalcases init` writes, as Python strings.

Shared by every framework: the pytest config, the case file, the README of next steps, the
agent's tools and the stand-in model's rules (`stand_in.py`, framework-neutral). Each framework
adds its stand-in model in the framework's own objects (`model.py`), the agent (`agent.py`) and
the thin system module over the framework's adapter (`system.py`).
"""

from __future__ import annotations

FRAMEWORKS = ("openai", "langchain", "pydantic-ai", "plain")
PACKAGE = "my_agent"

PYTEST_INI = """\
[pytest]
# deepeval's and langsmith's pytest plugins load in every run where they are installed (about
# 2 s each, and deepeval writes .deepeval/ folders); a replay needs neither.
addopts = -p no:deepeval -p no:langsmith_plugin
eval_cases = cases
eval_cassettes = cassettes
{asyncio_line}
"""

ASYNCIO_LINE = "asyncio_default_fixture_loop_scope = function"
ASYNCIO_COMMENT = (
    "# with pytest-asyncio installed, add: asyncio_default_fixture_loop_scope = function"
)

CASES_JSON = """\
{{
  "name": "{suite}",
  "system": "my_agent.system:system",
  "judge": "lexical",
  "stages": ["tools", "retrieval", "faithfulness", "answer_relevancy"],
  "k": 2,
  "cases": [
    {{"id": "return-window", "input": "How many days do I have to return an item?",
     "category": "returns", "expected_tools": ["search_kb"], "expected_docs": ["returns"],
     "reference": "30 days after delivery."}},
    {{"id": "shipping-time", "input": "How long does express shipping take?",
     "category": "shipping", "expected_tools": ["search_kb"], "expected_docs": ["shipping"],
     "reference": "Express shipping takes 1 business day."}},
    {{"id": "order-status", "input": "Where is my order A-100?", "category": "orders",
     "expected_tools": [{{"name": "get_order", "args": {{"order_id": "A-100"}}}}]}}
  ]
}}
"""

README = """\
# {suite}: an eval gate with pytest-evalcases

Scaffolded by `python -m pytest_evalcases init --framework {framework}`. `my_agent/` is a
stand-in agent: its "model" is a deterministic function (`my_agent/stand_in.py`{model_note}), so
everything here runs offline, with no key.

```bash
pytest --live --eval-judge lexical   # run the agent and the offline judge, record cassettes/
pytest                               # replay the recordings: no model call, no key, no network
```

Next steps:

1. **Replace the stand-in** with your agent: {replace_hint} Keep `my_agent/system.py` a few
   lines over the adapter (docs/adapters.md of pytest-evalcases), and build clients inside
   functions, not at import: a replay imports the module with no key.
2. **Write your cases** in `cases/{suite}.json` (fields: docs/case-files.md), and pick a real
   judge: `"judge": "openai:gpt-4o-mini"` (or keep `lexical`, offline and deterministic).
3. **Record**: `OPENAI_API_KEY=... pytest --live`. A recording covers the cases, the judge, the
   system's `fingerprint()` and the source of every module of this project that the system
   imports: change one and the replay names what went stale.
4. **Commit `cassettes/`**, and check them for secrets: `python -m pytest_evalcases scan`.
5. **In CI**, run `pytest` (e.g. `pytest -n auto --junitxml=evals.xml --eval-report evals/`).
"""

INIT_PY = '''\
"""A stand-in agent scaffolded by `python -m pytest_evalcases init`: replace it with yours."""
'''

TOOLS_PY = '''\
"""The agent's tools: a help-article search and an order lookup over tiny in-code data.
Each returns JSON text, the way a tool answers a model."""

from __future__ import annotations

import json
import re

ARTICLES = {
    "returns": "You can return an item within 30 days after delivery. Refunds reach your card "
    "within 5 business days.",
    "shipping": "Standard shipping takes 3 to 5 business days. Express shipping takes 1 "
    "business day.",
    "warranty": "Every product has a two year warranty against manufacturing defects.",
}
ORDERS = {"A-100": {"id": "A-100", "status": "shipped", "detail": "it left our warehouse today"}}


def terms(text: str) -> set[str]:
    return {word for word in re.findall(r"[a-z0-9]+", text.lower()) if len(word) > 2}


def search_kb(query: str) -> str:
    """Search the help articles; returns the two best matches as a JSON list of {id, text}."""
    ranked = sorted(ARTICLES, key=lambda doc: -len(terms(ARTICLES[doc]) & terms(query)))
    return json.dumps([{"id": doc, "text": ARTICLES[doc]} for doc in ranked[:2]])


def get_order(order_id: str) -> str:
    """Look up an order by its id (such as A-100); returns its status as JSON."""
    order = ORDERS.get(order_id.upper(), {"error": f"There is no order {order_id}"})
    return json.dumps(order)


TOOLS = {"search_kb": search_kb, "get_order": get_order}
'''

STAND_IN_PY = '''\
"""The stand-in model's rules: a deterministic function in place of an LLM, so the scaffold
runs offline. Given the question and the tool results so far, it returns the tool calls to
make next, or the answer. Delete this file when your agent has a real model."""

from __future__ import annotations

import json
import re

from .tools import terms

MODEL_NAME = "stand-in-1"
ORDER_ID = re.compile(r"\\b[A-Z]-\\d{3}\\b", re.IGNORECASE)


def next_step(question: str, results: list[tuple[str, str]]) -> list[tuple[str, dict]] | str:
    """`results` holds (tool name, output) pairs; the answer once there are results."""
    if results:
        return answer(question, results)
    if match := ORDER_ID.search(question):
        return [("get_order", {"order_id": match.group().upper()})]
    return [("search_kb", {"query": question})]


def answer(question: str, results: list[tuple[str, str]]) -> str:
    parts = []
    for name, output in results:
        value = json.loads(output)
        if name == "get_order":
            parts.append(
                f"Order {value['id']} is {value['status']}: {value['detail']}."
                if "status" in value
                else value["error"] + "."
            )
        elif value:
            sentences = re.split(r"(?<=\\.)\\s+", value[0]["text"])
            parts.append(max(sentences, key=lambda s: len(terms(s) & terms(question))))
    return " ".join(parts) or "I can't find anything about that."
'''

PROMPT_LINE = """\
PROMPT = (
    "You are the assistant of a web shop. Use search_kb for questions about returns, shipping "
    "and warranty, and get_order when the customer names an order id such as A-100."
)
"""

# --- plain: a function, no framework --------------------------------------------------------


# --- openai: the Chat Completions SDK -------------------------------------------------------


# --- langchain: a LangGraph tool loop on a langchain-core chat model ------------------------


# --- pydantic-ai ------------------------------------------------------------------------------
