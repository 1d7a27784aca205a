"""Time `redact` on a realistic ~20 KB trace cassette and a ~20 KB HTTP recording, and measure
what it finds: the false positives on a corpus of ordinary text and the shapes it finds.

    python benchmarks/redaction.py [-n N]

Both documents are clean (the common case: nothing to replace), then the trace again with two
secrets in it. Five environment secrets are searched for, as in a live run with a few keys set.
The corpus (tests/redaction_corpus.py: ids, hashes, uuids, base64 data, random tokens, URLs
without a password, prose) must come out unchanged: each text that does not counts as a false
positive, by category. Each planted secret of a known shape must be found under its kind.
"""

from __future__ import annotations

import argparse
import json
import sys
import timeit
from collections import Counter
from pathlib import Path
from typing import Any

from pytest_evalcases.store.redaction import redact

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from redaction_corpus import ordinary_texts, planted_secrets  # noqa: E402

WORDS = (
    "Run jotter doctor to check the database, the config file and the sync remote in one go. "
    "Add --verbose to any command to print debug logs, or set JOTTER_LOG=debug. If notes.db is "
    "corrupted, restore the latest copy with jotter backup restore (risk-free, 30 days kept). "
)
ENV_SECRETS = {
    "OPENAI_API_KEY": "sk-proj-Zb7Qx1" + "a" * 120,
    "ANTHROPIC_API_KEY": "sk-ant-api03-Qz8" + "b" * 90,
    "GITHUB_TOKEN": "ghs_" + "C1" * 18,
    "DB_PASSWORD": "correct-horse-battery",
    "HF_TOKEN": "hf_" + "D2" * 17,
}


def trace_cassette() -> dict[str, Any]:
    context = [WORDS * 3 for _ in range(20)]
    return {
        "case": "troubleshooting-db-locked",
        "format": 1,
        "key": {f"fingerprint.{n}": "4f40d272437b721b" for n in ("k", "model", "prompt")},
        "trace": {
            "answer": WORDS,
            "context": context,
            "retrieved": [{"id": f"doc-{i}", "score": 0.5 + i / 100} for i in range(20)],
            "tool_calls": [
                {"name": "search", "args": {"query": "database is locked", "k": 5}, "result": WORDS}
                for _ in range(4)
            ],
            "usage": {"prompt_tokens": 1234, "completion_tokens": 56, "max_tokens": 512},
        },
        "verdicts": {
            stage: {
                "key": {"judge": "4e07408562bedb8b", "params": "d2072528e84ddb65"},
                "score": 1.0,
                "reason": WORDS,
                "judge": "lexical",
                "latency_ms": 0.2,
            }
            for stage in ("faithfulness", "contextual_recall", "answer_relevancy")
        },
    }


def http_recording() -> dict[str, Any]:
    def interaction() -> dict[str, Any]:
        body = {
            "model": "gpt-4o-mini",
            "max_tokens": 512,
            "messages": [{"role": "user", "content": WORDS * 5}],
            "tools": [{"type": "function", "function": {"name": "search", "description": WORDS}}],
        }
        answer = {
            "id": "chatcmpl-1",
            "choices": [{"message": {"content": WORDS * 4}}],
            "usage": {"prompt_tokens": 1234, "completion_tokens": 56},
        }
        return {
            "request": {
                "method": "POST",
                "uri": "https://api.openai.com/v1/chat/completions",
                "body": json.dumps(body),
                "headers": {
                    "content-type": ["application/json"],
                    "user-agent": ["OpenAI/Python 3.57.0"],
                },
            },
            "response": {
                "status": {"code": 200, "message": "OK"},
                "headers": {"content-type": ["application/json"]},
                "body": {"string": json.dumps(answer)},
            },
        }

    return {"version": 1, "interactions": [interaction() for _ in range(3)]}


def corpus_figures() -> None:
    """Print the false positives on the ordinary corpus and the shapes found."""
    corpus = ordinary_texts()
    wrong: Counter[str] = Counter()
    for category, text in corpus:
        redacted, findings = redact(text, {})
        if findings:
            wrong[category] += 1
            print(f"  false positive ({category}): {text[:70]!r} -> {redacted[:70]!r}")
    sizes = Counter(category for category, _ in corpus)
    by_category = ", ".join(f"{name} {wrong[name]}/{count}" for name, count in sizes.items())
    print(f"false positives: {sum(wrong.values())} of {len(corpus)} ordinary texts ({by_category})")
    planted = planted_secrets()
    found = 0
    for kind, text in planted:
        _, findings = redact(text, {})
        kinds = [found_kind for _, found_kind in findings]
        found += kind in kinds
        print(f"  {kind:24} {'found' if kind in kinds else 'MISSED'}")
    print(f"shapes found: {found} of {len(planted)} planted secrets")
    texts = [text for _, text in corpus]
    best = min(timeit.repeat(lambda: redact(texts, {}), number=20, repeat=5)) / 20
    size = sum(len(text) for text in texts)
    print(f"corpus {len(texts)} texts, {size / 1024:.0f} KB: {best * 1e3:.2f} ms per pass")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=2000, help="calls per timing (default 2000)")
    args = parser.parse_args()
    trace = trace_cassette()
    leaky = json.loads(json.dumps(trace))
    leaky["trace"]["answer"] += " token " + ENV_SECRETS["OPENAI_API_KEY"]
    leaky["trace"]["tool_calls"][0]["args"]["auth"] = "Bearer abcDEF1234567890xyzXYZ"
    for name, doc in (
        ("trace, clean", trace),
        ("HTTP recording, clean", http_recording()),
        ("trace, 2 secrets", leaky),
    ):
        size = len(json.dumps(doc))
        best = (
            min(timeit.repeat(lambda doc=doc: redact(doc, ENV_SECRETS), number=args.n, repeat=5))
            / args.n
        )
        print(
            f"{name:24} {size / 1024:5.1f} KB  {best * 1e6:7.1f} us per document  "
            f"({1 / best:,.0f} per second)"
        )
    corpus_figures()


if __name__ == "__main__":
    main()
