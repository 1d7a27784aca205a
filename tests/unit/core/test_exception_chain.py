"""A system's exception in a few lines: the chain down to its root cause, the request an HTTP
client's error carries (without its query string), the user's frames (no network: the errors
are built by hand, as httpx and openai build them)."""

from __future__ import annotations

from types import SimpleNamespace

import httpx
import pytest

from pytest_evalcases.core.exception_chain import (
    chain_of,
    exception_lines,
    exception_summary,
    request_of,
)

URL = "http://127.0.0.1:8765/v1/chat/completions"


class APIConnectionError(Exception):  # openai's: a request, a fixed message, the cause below
    def __init__(self, request: httpx.Request) -> None:
        super().__init__("Connection error.")
        self.request = request


def connection_error() -> APIConnectionError:
    """openai's chain: APIConnectionError from httpx.ConnectError from httpcore's ConnectError."""
    request = httpx.Request("POST", URL)
    try:
        try:
            try:
                raise ConnectionRefusedError(111, "Connection refused")
            except ConnectionRefusedError as exc:
                raise httpx.ConnectError("[Errno 111] Connection refused") from exc
        except httpx.ConnectError as exc:
            exc.request = request
            raise APIConnectionError(request) from exc
    except APIConnectionError as exc:
        return exc


def test_the_chain_runs_from_what_was_raised_to_the_root_cause() -> None:
    chain = chain_of(connection_error())

    assert [type(link).__name__ for link in chain] == [
        "APIConnectionError",
        "ConnectError",
        "ConnectionRefusedError",
    ]


def test_a_suppressed_context_ends_the_chain_and_a_cycle_does_not_loop() -> None:
    try:
        try:
            raise KeyError("inner")
        except KeyError:
            raise ValueError("outer") from None
    except ValueError as exc:
        assert chain_of(exc) == [exc]
    first, second = RuntimeError("a"), RuntimeError("b")
    first.__cause__, second.__cause__ = second, first
    assert chain_of(first) == [first, second]


def test_a_few_lines_name_the_root_cause_and_the_request() -> None:
    lines = exception_lines(connection_error())

    assert lines == [
        f"APIConnectionError: Connection error. (POST {URL})",
        "  caused by ConnectError: [Errno 111] Connection refused",
        "  caused by ConnectionRefusedError: [Errno 111] Connection refused",
    ]
    assert exception_summary(connection_error()) == (
        f"APIConnectionError: Connection error. (POST {URL}); "
        "root cause: ConnectionRefusedError: [Errno 111] Connection refused"
    )


def test_an_error_of_ours_shows_its_message_and_a_root_cause_it_names_is_not_repeated() -> None:
    from pytest_evalcases.domain.users import UserSetupError

    root = ConnectionRefusedError(111, "Connection refused")
    try:
        try:
            raise root
        except OSError as exc:
            raise UserSetupError(
                f"setup_user('u-ben') of suite 'memory' raised ConnectionRefusedError: {exc}"
            ) from exc
    except UserSetupError as ours:
        summary = exception_summary(ours)

    assert summary == (
        "setup_user('u-ben') of suite 'memory' raised ConnectionRefusedError: "
        "[Errno 111] Connection refused"
    )
    # The system's own errors keep their class and a root cause they do not name.
    assert exception_summary(connection_error()).startswith("APIConnectionError: ")
    try:
        try:
            raise TimeoutError()
        except TimeoutError as exc:
            raise RuntimeError("the model did not answer") from exc
    except RuntimeError as theirs:
        assert exception_summary(theirs) == (
            "RuntimeError: the model did not answer; root cause: TimeoutError"
        )


def test_the_request_leaves_out_the_query_string_and_credentials() -> None:
    error = httpx.ConnectError(
        "refused", request=httpx.Request("GET", "https://user:pw@api.example:8443/v1/m?key=AIzaX")
    )

    assert request_of([error]) == "GET https://api.example:8443/v1/m"
    aiohttp_style = RuntimeError("x")
    aiohttp_style.request_info = SimpleNamespace(method="POST", url="http://[::1]:9/a?b=c")  # type: ignore[attr-defined]
    assert request_of([aiohttp_style]) == "POST http://[::1]:9/a"


def test_an_error_without_a_request_is_shown_without_one() -> None:
    error = httpx.ConnectError("refused")  # its .request raises RuntimeError

    with pytest.raises(RuntimeError):
        _ = error.request
    assert request_of([error]) is None
    assert exception_lines(error) == ["ConnectError: refused"]


def test_a_long_chain_keeps_its_first_causes_and_its_root() -> None:
    links = [RuntimeError(f"link {i}") for i in range(7)]
    for outer, inner in zip(links, links[1:], strict=False):
        outer.__cause__ = inner

    assert exception_lines(links[0]) == [
        "RuntimeError: link 0",
        "  caused by RuntimeError: link 1",
        "  caused by RuntimeError: link 2",
        "  … (3 more)",
        "  caused by RuntimeError: link 6",
    ]


def test_a_message_is_one_line_and_cut() -> None:
    error = ValueError("first line\nsecond line " + "x" * 500)

    (line,) = exception_lines(error)

    assert line.startswith("ValueError: first line second line xxx") and line.endswith("…")
    assert len(line) == 300


def raise_in_user_code() -> None:
    def library_call() -> None:
        raise ConnectionError("refused")

    library_call()


def test_the_users_innermost_frames_say_where_the_call_was_made() -> None:
    try:
        raise_in_user_code()
    except ConnectionError as exc:
        error = exc

    def user_path(filename: str) -> str | None:  # this file is the "user's code"
        return "mine.py" if filename == __file__ else None

    lines = exception_lines(error, user_path)

    assert lines[0] == "ConnectionError: refused"
    assert lines[1].startswith("  at mine.py:") and lines[1].endswith(
        "in test_the_users_innermost_frames_say_where_the_call_was_made: raise_in_user_code()"
    )
    assert lines[2].endswith("in raise_in_user_code: library_call()")
    assert lines[3].endswith('in library_call: raise ConnectionError("refused")')
    assert len(lines) == 4
