"""A rule-based stand-in for an LLM judge, served the way OpenAI serves chat completions, so the
example re-records with no key and no network:

    python -m shop_agent.judge 8765 &
    EVALCASES_JUDGE_BASE_URL=http://127.0.0.1:8765/v1 EVALCASES_JUDGE_API_KEY=local pytest --live

It answers the two prompts deepeval's GEval sends for a judged stage of the suite's own
(`judged_stages`): "draft evaluation steps" with fixed steps, and "grade this answer" on GEval's
0-10 scale by words: an answer that blames the customer scores 2, a courteous one 10, a plain
civil one 8. Point EVALCASES_JUDGE_BASE_URL at a real server to judge with a real model.
"""

from __future__ import annotations

import json
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "shop-judge-rules-1"
BLAME = re.compile(r"\byou (should have|failed|forgot|typed|entered)\b|\byour (fault|mistake)\b")
COURTESY = re.compile(r"\b(sorry|glad|thank|please|happy to)\b")
STEPS = [
    "Read the answer as the customer would.",
    "Check that it does not blame the customer for the outcome.",
    "Check that its tone is courteous.",
]


def grade(prompt: str) -> dict[str, object]:
    """The JSON reply to one GEval prompt."""
    if "evaluation steps" in prompt and "Given the following evaluation steps" not in prompt:
        return {"steps": STEPS}
    answer = prompt.split("Actual Output:\n", 1)[-1].split("\n\n", 1)[0].lower()
    if BLAME.search(answer):
        return {"score": 2, "reason": "The answer blames the customer."}
    if COURTESY.search(answer):
        return {"score": 10, "reason": "The answer is courteous and blames no one."}
    return {"score": 8, "reason": "The answer is plain and civil; it blames no one."}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = "\n".join(str(m.get("content", "")) for m in body["messages"])
        content = json.dumps(grade(prompt))
        reply = {
            "id": "chatcmpl-shop-judge",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", MODEL),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": len(prompt.split()),
                "completion_tokens": len(content.split()),
                "total_tokens": len(prompt.split()) + len(content.split()),
            },
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:  # quiet: the test run's output is the point
        pass


def serve(port: int) -> None:
    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    serve(int(sys.argv[1]) if len(sys.argv) > 1 else 8765)
