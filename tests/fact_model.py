"""A loopback chat model for the ingestion tests (stdlib only): the facts of a line are the line;
each reply has a fresh id and usage of 7 prompt and 3 completion tokens (gpt-4o-mini's price
makes its cost checkable). The `model` fixture starts one per test."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from loopback import CountedService


class FactModel(CountedService):
    """A loopback chat model: the facts of a line are the line; each reply has a fresh id and
    usage of 7 prompt and 3 completion tokens."""

    def __init__(self) -> None:
        super().__init__("/v1")

    def reply(self, number: int, body: Any) -> tuple[int, Any, dict[str, str]]:
        message = {"role": "assistant", "content": body["messages"][0]["content"]}
        return (
            200,
            {
                "id": f"chatcmpl-{number}-{threading.get_ident()}",
                "object": "chat.completion",
                "created": 1_700_000_000 + number,
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
            },
            {},
        )


@pytest.fixture
def model() -> Iterator[FactModel]:
    server = FactModel()
    yield server
    server.close()
