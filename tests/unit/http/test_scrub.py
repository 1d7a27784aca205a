"""Scrubbing of one recorded HTTP interaction (vcrpy's dict shapes): headers, query parameters
and JSON body fields that hold credentials are dropped; everything else is kept byte for byte."""

from __future__ import annotations

import copy
import gzip
import json
import zlib
from typing import Any

import pytest

from pytest_evalcases.http.scrub import (
    SECRET_BODY_FIELDS,
    SECRET_HEADERS,
    SECRET_QUERY_PARAMETERS,
    drop_secret_fields,
    parsed_json_body,
    scrub_request,
    scrub_response,
    scrub_uri,
    with_body_length,
)

URI = "https://api.example.com/v1/chat/completions"


def request(body: Any = None, headers: dict[str, Any] | None = None, uri: str = URI) -> dict:
    return {"method": "POST", "uri": uri, "body": body, "headers": headers or {}}


def response(body: Any, headers: dict[str, Any] | None = None) -> dict:
    return {
        "status": {"code": 200, "message": "OK"},
        "headers": headers or {},
        "body": {"string": body},
    }


# Headers --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SECRET_HEADERS))
@pytest.mark.parametrize("spelling", [str.lower, str.upper, str.title])
def test_secret_header_dropped_from_request_and_response(name: str, spelling: Any) -> None:
    headers = {spelling(name): ["s3cr3t-value"], "Content-Type": ["application/json"]}

    assert scrub_request(request(headers=headers))["headers"] == {
        "Content-Type": ["application/json"]
    }
    assert scrub_response(response(b"", headers))["headers"] == {
        "Content-Type": ["application/json"]
    }


def test_header_list_is_exactly_the_issue_list() -> None:
    assert SECRET_HEADERS == {
        "authorization",
        "api-key",
        "x-api-key",
        "x-goog-api-key",
        "cookie",
        "set-cookie",
        "openai-organization",
        "openai-project",
        "proxy-authorization",  # issue 30
        "ocp-apim-subscription-key",
    }


def test_other_headers_kept_in_order_with_all_their_values() -> None:
    headers = {
        "User-Agent": ["OpenAI/Python 3.57.0"],
        "Accept": ["a", "b"],
        "X-Request-Id": ["42"],
        "Authorization": ["Bearer t"],
    }

    scrubbed = scrub_request(request(headers=headers))["headers"]

    assert list(scrubbed.items()) == [
        ("User-Agent", ["OpenAI/Python 3.57.0"]),
        ("Accept", ["a", "b"]),
        ("X-Request-Id", ["42"]),
    ]


def test_header_values_as_bare_strings_are_handled() -> None:
    # Older cassettes (and aiohttp's loader) allow a header value that is not a list.
    scrubbed = scrub_response(response(b"ok", {"Set-Cookie": "session=abc", "Server": "x"}))

    assert scrubbed["headers"] == {"Server": "x"}


def test_several_set_cookie_values_all_dropped() -> None:
    headers = {"set-cookie": ["a=1", "b=2"], "content-type": ["text/plain"]}

    assert scrub_response(response(b"ok", headers))["headers"] == {"content-type": ["text/plain"]}


# Query parameters -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SECRET_QUERY_PARAMETERS))
def test_secret_query_parameter_dropped(name: str) -> None:
    uri = f"https://maps.example.com/geo?q=a%20b&{name}=s3cr3t&lang=en"

    assert scrub_request(request(uri=uri))["uri"] == "https://maps.example.com/geo?q=a%20b&lang=en"


def test_query_parameter_names_compared_case_insensitively_and_decoded() -> None:
    uri = "https://h/p?KEY=1&Api_Key=2&access%5Ftoken=3&x=4"

    assert scrub_uri(uri) == "https://h/p?x=4"


def test_query_keeps_order_and_exact_encoding_of_the_rest() -> None:
    uri = "https://h/p?z=1&key=s&a=%2F+x&flag&a=2#frag?key=not-a-query"

    assert scrub_uri(uri) == "https://h/p?z=1&a=%2F+x&flag&a=2#frag?key=not-a-query"


def test_query_emptied_drops_the_question_mark() -> None:
    assert scrub_uri("https://h/p?key=s#top") == "https://h/p#top"
    assert scrub_uri("https://h/p?api_key=s") == "https://h/p"


@pytest.mark.parametrize(
    "uri",
    [
        "https://h/p?keyword=x&monkey=y&max_tokens=3",  # names that merely contain "key"/"token"
        "https://h/p",
        "https://h/p#key=in-a-fragment",
        "https://h/p?",
    ],
)
def test_uri_without_secret_parameters_unchanged(uri: str) -> None:
    assert scrub_uri(uri) is uri


# JSON bodies ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SECRET_BODY_FIELDS))
def test_secret_body_field_dropped(name: str) -> None:
    body = json.dumps({"model": "m", name: "s3cr3t", name.upper(): "s3cr3t"}).encode()

    scrubbed = scrub_request(request(body, {"content-type": ["application/json"]}))

    assert json.loads(scrubbed["body"]) == {"model": "m"}


def test_body_field_list_is_exactly_the_issue_list() -> None:
    assert SECRET_BODY_FIELDS == {
        "api_key",
        "apikey",
        "key",
        "token",
        "access_token",
        "refresh_token",
        "id_token",
        "client_secret",
        "secret",
        "password",
    }


def test_body_fields_dropped_at_any_depth_and_in_arrays() -> None:
    body = {
        "auth": {"Client_Secret": "s", "scopes": ["a"]},
        "items": [{"Token": "t", "id": 1}, [{"password": "p", "name": "n"}], "key"],
        "deep": {"a": {"b": {"c": {"ApiKey": "k", "keep": True}}}},
    }

    scrubbed = json.loads(scrub_request(request(json.dumps(body)))["body"])

    assert scrubbed == {
        "auth": {"scopes": ["a"]},
        "items": [{"id": 1}, [{"name": "n"}], "key"],
        "deep": {"a": {"b": {"c": {"keep": True}}}},
    }


def test_counters_and_lookalike_names_kept() -> None:
    body = {
        "max_tokens": 512,
        "prompt_tokens": 10,
        "max_completion_tokens": 9,
        "usage": {"completion_tokens": 5, "total_tokens": 15},
        "keywords": ["a"],
        "token_count": 3,
        "secret_santa": "yes",
        "passwords_checked": 2,
        "keys": ["k"],
        "primary_key": "id",
        "tokens": 7,
    }
    raw = json.dumps(body).encode()

    scrubbed = scrub_request(request(raw, {"Content-Type": ["application/json"]}))

    assert scrubbed["body"] is raw  # nothing dropped: the very same bytes


def test_values_that_look_like_secret_names_are_not_fields() -> None:
    raw = json.dumps({"messages": [{"role": "user", "content": "token"}], "stop": ["key"]})

    assert scrub_request(request(raw))["body"] is raw


def test_json_body_keeps_its_type_and_fixes_content_length() -> None:
    raw = b'{"api_key": "s3cr3t", "model": "m\xc3\xa9"}'
    headers = {"Content-Type": ["application/json"], "Content-Length": [str(len(raw))]}

    as_bytes = scrub_request(request(raw, headers))
    as_text = scrub_request(request(raw.decode(), headers))

    assert as_bytes["body"] == '{"model":"mé"}'.encode()
    assert as_text["body"] == '{"model":"mé"}'
    assert as_bytes["headers"]["Content-Length"] == [str(len('{"model":"mé"}'.encode()))]
    assert as_text["headers"]["Content-Length"] == as_bytes["headers"]["Content-Length"]


def test_json_recognised_without_a_json_content_type() -> None:
    raw = b'  [{"token": "t", "n": 1}]'

    scrubbed = scrub_request(request(raw, {"Content-Type": ["text/plain"]}))

    assert json.loads(scrubbed["body"]) == [{"n": 1}]


def test_json_body_without_secrets_keeps_its_formatting() -> None:
    raw = b'{\n  "model" : "m",\n  "b": 1\n}'

    assert scrub_request(request(raw))["body"] is raw


@pytest.mark.parametrize(
    "body",
    [
        b"key=s3cr3t&grant_type=client_credentials",  # form data: not JSON, kept as it is
        b'\x89PNG\r\n\x1a\n\x00\x00{"token": 1}',  # binary
        b'{"token": "unterminated',  # broken JSON
        b'\xff\xfe{"token": 1}',  # not UTF-8
        "plain text with token and key",
        '"a JSON string"',
        b"",
        None,
    ],
)
def test_non_json_body_untouched(body: Any) -> None:
    assert scrub_request(request(body))["body"] is body
    assert scrub_response(response(body))["body"]["string"] is body


def test_response_json_body_scrubbed() -> None:
    raw = json.dumps(
        {
            "access_token": "t",
            "refresh_token": "r",
            "id_token": "i",
            "expires_in": 3600,
            "token_type": "Bearer",
        }
    ).encode()

    scrubbed = scrub_response(response(raw, {"Content-Type": ["application/json"]}))

    assert json.loads(scrubbed["body"]["string"]) == {"expires_in": 3600, "token_type": "Bearer"}


def test_already_parsed_body_scrubbed_as_data() -> None:
    scrubbed = scrub_request(request({"password": "p", "user": "u"}))

    assert scrubbed["body"] == {"user": "u"}


def test_drop_secret_fields_on_a_parsed_value() -> None:
    value = {"a": [{"KEY": 1, "b": 2}], "c": "key"}

    assert drop_secret_fields(value) == {"a": [{"b": 2}], "c": "key"}
    assert drop_secret_fields({"b": [1]}) == {"b": [1]}


# Compressed responses -------------------------------------------------------------------------

SECRET_JSON = json.dumps({"token": "s3cr3t", "answer": "42"}).encode()


def raw_deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


@pytest.mark.parametrize(
    ("coding", "compress"),
    [
        ("gzip", gzip.compress),
        ("x-gzip", gzip.compress),
        ("GZIP", gzip.compress),
        ("deflate", zlib.compress),
        ("deflate", raw_deflate),
    ],
)
def test_compressed_response_decoded_then_scrubbed(coding: str, compress: Any) -> None:
    body = compress(SECRET_JSON)
    headers = {
        "Content-Encoding": [coding],
        "Content-Length": [str(len(body))],
        "Content-Type": ["application/json"],
    }

    scrubbed = scrub_response(response(body, headers))

    assert json.loads(scrubbed["body"]["string"]) == {"answer": "42"}
    assert scrubbed["headers"] == {
        "Content-Length": [str(len(scrubbed["body"]["string"]))],
        "Content-Type": ["application/json"],
    }


def test_compressed_response_without_secrets_is_still_decoded() -> None:
    plain = b'{"answer": "42"}'
    headers = {"content-encoding": ["gzip"], "content-length": ["999"]}

    scrubbed = scrub_response(response(gzip.compress(plain), headers))

    assert scrubbed["body"]["string"] == plain
    assert scrubbed["headers"] == {"content-length": [str(len(plain))]}


def test_body_recorded_decoded_under_a_gzip_header_is_scrubbed() -> None:
    # aiohttp hands vcrpy the decoded body and the server's Content-Encoding header.
    scrubbed = scrub_response(response(SECRET_JSON, {"Content-Encoding": ["gzip"]}))

    assert json.loads(scrubbed["body"]["string"]) == {"answer": "42"}
    assert scrubbed["headers"] == {}


def test_stacked_codings_undone_only_as_far_as_known() -> None:
    # "br, gzip": brotli first, then gzip. gzip is undone; brotli stays (no decoder here).
    inner = b"brotli bytes"
    scrubbed = scrub_response(response(gzip.compress(inner), {"Content-Encoding": ["br, gzip"]}))

    assert scrubbed["body"]["string"] == inner
    assert scrubbed["headers"] == {"Content-Encoding": ["br"]}


def test_unknown_coding_left_alone() -> None:
    body = b"\x1b\x00compressed"
    original = response(body, {"Content-Encoding": ["br"], "Content-Length": ["12"]})

    assert scrub_response(original) == original


def test_empty_aiohttp_body_kept_empty() -> None:
    original = {
        "status": {"code": 204, "message": "No Content"},
        "headers": {"Content-Encoding": ["gzip"]},
        "body": {},
    }

    assert scrub_response(original)["body"] == {}


# Purity, determinism, idempotence -------------------------------------------------------------

REQUESTS = [
    request(
        json.dumps({"api_key": "k", "messages": [{"content": "hi", "token": "t"}]}).encode(),
        {
            "Authorization": ["Bearer t"],
            "Content-Length": ["70"],
            "Content-Type": ["application/json"],
        },
        uri="https://h/v1?key=k&a=1",
    ),
    request(b"key=s3cr3t", {"Cookie": ["a=b"]}),
    request(None, {"x-api-key": "k"}),
]
RESPONSES = [
    response(
        gzip.compress(SECRET_JSON),
        {"Content-Encoding": ["gzip"], "Set-Cookie": ["a=b"], "Content-Length": ["40"]},
    ),
    response(SECRET_JSON.decode(), {"content-type": ["application/json"]}),
    response(b"\x00binary", {}),
]


@pytest.mark.parametrize(
    ("scrub", "original"),
    [
        *((scrub_request, original) for original in REQUESTS),
        *((scrub_response, original) for original in RESPONSES),
    ],
)
def test_scrubbing_is_pure_deterministic_and_idempotent(scrub: Any, original: dict) -> None:
    before = copy.deepcopy(original)

    once = scrub(original)

    assert original == before
    assert scrub(copy.deepcopy(original)) == once
    assert scrub(once) == once


def test_returned_dicts_share_no_mutable_part_with_the_input() -> None:
    original = response(b"x", {"Server": ["a"]})

    scrubbed = scrub_response(original)
    scrubbed["headers"]["Server"].append("b")
    scrubbed["body"]["string"] = b"y"
    scrubbed["status"]["code"] = 500

    assert original == response(b"x", {"Server": ["a"]})


def test_live_request_scrubbed_matches_its_scrubbed_recording() -> None:
    # Replay scrubs a live request before matching: a new key must not make it differ.
    def live(key: str) -> dict:
        body = json.dumps({"model": "m", "api_key": key, "max_tokens": 5}).encode()
        return request(body, {"Authorization": [f"Bearer {key}"]}, uri=f"https://h/v1?key={key}")

    recorded, replayed = scrub_request(live("old-key")), scrub_request(live("new-key"))

    assert recorded == replayed
    assert parsed_json_body(replayed["body"]) == {"model": "m", "max_tokens": 5}


def test_with_body_length_after_a_body_was_rewritten() -> None:
    # Redaction runs after scrubbing and may change a body's length: the header must follow.
    redacted = response("token [REDACTED:OPENAI_API_KEY] é", {"Content-Length": ["99"], "A": ["b"]})
    fixed = with_body_length(redacted)

    assert fixed["headers"] == {
        "Content-Length": [str(len("token [REDACTED:OPENAI_API_KEY] é".encode()))],
        "A": ["b"],
    }
    assert with_body_length(request(b"abc", {"content-length": "7"}))["headers"] == {
        "content-length": "3"
    }
    assert with_body_length(request(b"abc", {"Host": ["h"]}))["headers"] == {"Host": ["h"]}
    assert redacted["headers"]["Content-Length"] == ["99"]  # the input is not modified


# parsed_json_body ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "parsed"),
    [
        (b'{"a": 1}', {"a": 1}),
        ('\n [1, "x"]', [1, "x"]),
        (bytearray(b'{"b": null}'), {"b": None}),
        ({"already": "parsed"}, {"already": "parsed"}),
        (b"not json", None),
        (b'{"a": ', None),
        (b"42", None),  # scalars are compared as bytes, not as data
        ('"text"', None),
        (b"\xff{}", None),
        (b"", None),
        (None, None),
    ],
)
def test_parsed_json_body(body: Any, parsed: Any) -> None:
    assert parsed_json_body(body) == parsed


# vcrpy's own shapes ----------------------------------------------------------------------------


def test_round_trips_through_vcrpy_request_dicts() -> None:
    vcr_request = pytest.importorskip("vcr.request")
    live = vcr_request.Request(
        "POST",
        "https://h/v1/chat?key=k&a=1",
        json.dumps({"api_key": "k", "max_tokens": 5}),
        {"Authorization": "Bearer k", "Content-Type": "application/json"},
    )

    scrubbed = vcr_request.Request._from_dict(scrub_request(live._to_dict()))

    assert scrubbed.uri == "https://h/v1/chat?a=1"
    assert dict(scrubbed.headers) == {"Content-Type": "application/json"}
    assert json.loads(scrubbed.body) == {"max_tokens": 5}
