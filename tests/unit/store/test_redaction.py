"""Redaction of every cassette before it is written, and `scan_files` behind the `scan`
command for pre-commit/CI (the command itself: tests/integration/test_scan_command.py).

The fake keys (tests/fake_secrets.py) are assembled at run time from pieces, so no file holds
anything that a secret scanner (ours, or a code host's push protection) takes for a key.
"""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import pytest
from fake_secrets import (
    ANTHROPIC,
    AWS,
    AWS_SECRET,
    AWS_TEMPORARY,
    GITHUB,
    GITHUB_APP,
    GITHUB_OAUTH,
    GITHUB_PAT,
    GOOGLE,
    JWT,
    OPENAI,
    OPENAI_LEGACY,
    PEM,
    RANDOM,
    SLACK_BOT,
    SLACK_USER,
    fake_pem,
)

from pytest_evalcases.store.key_shapes import KEY_SHAPES
from pytest_evalcases.store.redaction import redact, redaction_summary, secret_values_from_env
from pytest_evalcases.store.secret_scan import (
    Finding,
    ScanPathError,
    cassettes_folder_from_ini,
    scan_files,
)

REPO = Path(__file__).resolve().parents[3]

SHAPE_SAMPLES = [
    (OPENAI, "openai-key"),
    (OPENAI_LEGACY, "openai-key"),
    (ANTHROPIC, "anthropic-key"),
    (GOOGLE, "google-api-key"),
    (GITHUB, "github-token"),
    (GITHUB_APP, "github-token"),
    (GITHUB_OAUTH, "github-token"),
    (GITHUB_PAT, "github-token"),
    (SLACK_BOT, "slack-token"),
    (SLACK_USER, "slack-token"),
    (AWS, "aws-access-key-id"),
    (AWS_TEMPORARY, "aws-access-key-id"),
    (JWT, "jwt"),
    (PEM, "private-key"),
    (fake_pem("OPENSSH"), "private-key"),
    (fake_pem("EC"), "private-key"),
    (fake_pem(""), "private-key"),
]


# Environment secrets ---------------------------------------------------------------------------


def test_secret_values_from_env_by_name_suffix_and_length() -> None:
    environ = {
        "OPENAI_API_KEY": "sk-abcdefgh",
        "GH_TOKEN": " tok-12345 ",
        "APP_SECRET": "12345678",
        "DB_PASSWORD": "hunter22",
        "lower_api_key": "abcdefghij",
        "SHORT_KEY": "1234567",  # under 8 characters
        "KEY_PATH": "/etc/secret/key",  # the name does not end in a credential suffix
        "HOME": "/root",
        "MY_KEYS": "abcdefghijk",
        "TOKENIZER": "abcdefghijk",
    }

    assert secret_values_from_env(environ) == {
        "APP_SECRET": "12345678",
        "DB_PASSWORD": "hunter22",
        "GH_TOKEN": "tok-12345",
        "OPENAI_API_KEY": "sk-abcdefgh",
        "lower_api_key": "abcdefghij",
    }


def test_env_secret_replaced_by_its_name_everywhere() -> None:
    secret = "s3cr3t-v4lue-from-env"
    doc = {
        "trace": {
            "answer": f"the key is {secret}.",
            "tool_calls": [{"args": {"q": secret, "n": 3}}, {"args": {f"{secret}": True}}],
        },
        "verdicts": {"faithfulness": {"reason": f"{secret} and {secret}"}},
    }

    new, findings = redact(doc, {"MY_SERVICE_TOKEN": secret})

    assert new == {
        "trace": {
            "answer": "the key is [REDACTED:MY_SERVICE_TOKEN].",
            "tool_calls": [
                {"args": {"q": "[REDACTED:MY_SERVICE_TOKEN]", "n": 3}},
                {"args": {"[REDACTED:MY_SERVICE_TOKEN]": True}},
            ],
        },
        "verdicts": {
            "faithfulness": {
                "reason": "[REDACTED:MY_SERVICE_TOKEN] and [REDACTED:MY_SERVICE_TOKEN]"
            }
        },
    }
    assert findings == [
        ("$.trace.answer", "MY_SERVICE_TOKEN"),
        ("$.trace.tool_calls[0].args.q", "MY_SERVICE_TOKEN"),
        ('$.trace.tool_calls[1].args["[REDACTED:MY_SERVICE_TOKEN]"]', "MY_SERVICE_TOKEN"),
        ("$.verdicts.faithfulness.reason", "MY_SERVICE_TOKEN"),
        ("$.verdicts.faithfulness.reason", "MY_SERVICE_TOKEN"),
    ]


def test_env_secret_named_before_its_shape() -> None:
    new, findings = redact({"answer": f"use {OPENAI}"}, {"OPENAI_API_KEY": OPENAI})

    assert new == {"answer": "use [REDACTED:OPENAI_API_KEY]"}
    assert findings == [("$.answer", "OPENAI_API_KEY")]


def test_longer_env_secret_replaced_whole_before_one_it_contains() -> None:
    new, _ = redact(["abcdefgh-ijklmnop"], {"A_KEY": "abcdefgh", "B_KEY": "abcdefgh-ijklmnop"})

    assert new == ["[REDACTED:B_KEY]"]


def test_one_value_under_two_names_reported_once() -> None:
    new, findings = redact(
        {"a": "x=hunter2hunter2"}, {"Z_TOKEN": "hunter2hunter2", "A_TOKEN": "hunter2hunter2"}
    )

    assert new == {"a": "x=[REDACTED:A_TOKEN]"}
    assert findings == [("$.a", "A_TOKEN")]


def test_env_secret_inside_an_http_json_body_string() -> None:
    secret = "s3cr3t-v4lue-from-env"
    body = json.dumps({"model": "m", "messages": [{"content": f"key: {secret}"}]})
    doc = {"interactions": [{"request": {"body": body, "headers": {"x": [secret]}}}]}

    new, findings = redact(doc, {"SERVICE_KEY": secret})

    request = new["interactions"][0]["request"]
    assert json.loads(request["body"])["messages"][0]["content"] == "key: [REDACTED:SERVICE_KEY]"
    assert request["headers"] == {"x": ["[REDACTED:SERVICE_KEY]"]}
    assert [path for path, _ in findings] == [
        "$.interactions[0].request.body",
        "$.interactions[0].request.headers.x[0]",
    ]


# Key shapes ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("key", "shape"), SHAPE_SAMPLES)
@pytest.mark.parametrize(
    "template", ["{}", "token: {}.", '"{}"', "key={}&a=1", "{}\nnext line", "/v1/keys/{}/info"]
)
def test_each_key_shape_redacted(key: str, shape: str, template: str) -> None:
    new, findings = redact({"s": template.format(key)}, {})

    assert new == {"s": template.format(f"[REDACTED:{shape}]")}
    assert findings == [("$.s", shape)]


def test_shape_names_are_the_documented_ones() -> None:
    assert [shape.name for shape in KEY_SHAPES] == [
        "private-key",
        "jwt",
        "anthropic-key",
        "openai-key",
        "google-api-key",
        "github-token",
        "slack-token",
        "aws-secret-key",
        "password",
        "azure-subscription-key",
        "aws-access-key-id",
        "stripe-key",
        "huggingface-token",
        "url-password",
        "azure-sas-signature",
        "basic-auth",
        "bearer-token",
    ]


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER"])
def test_bearer_token_keeps_its_scheme(scheme: str) -> None:
    opaque = "tok." + RANDOM  # no known shape: named as a bearer token (a JWT is named `jwt`)

    new, findings = redact({"h": f"Authorization: {scheme} {opaque}"}, {})

    assert new == {"h": f"Authorization: {scheme} [REDACTED:bearer-token]"}
    assert findings == [("$.h", "bearer-token")]


def test_bearer_with_a_known_key_named_by_the_key_shape() -> None:
    new, findings = redact({"h": f"Bearer {OPENAI}"}, {})

    assert new == {"h": "Bearer [REDACTED:openai-key]"}
    assert findings == [("$.h", "openai-key")]


def test_key_after_a_json_escape_in_a_recorded_body_string() -> None:
    # In a body string, a newline is the two characters `\n`: the `n` must not hide the key.
    body = json.dumps({"content": f"line one\n{OPENAI}\t{GOOGLE}"})

    new, findings = redact({"body": body}, {})

    assert json.loads(new["body"]) == {
        "content": "line one\n[REDACTED:openai-key]\t[REDACTED:google-api-key]"
    }
    assert [kind for _, kind in findings] == ["openai-key", "google-api-key"]


def test_several_shapes_in_one_string_all_reported() -> None:
    text = f"{AWS} then {GITHUB} then {SLACK_BOT}"

    new, findings = redact(text, {})

    assert new == (
        "[REDACTED:aws-access-key-id] then [REDACTED:github-token] then [REDACTED:slack-token]"
    )
    assert findings == [("$", "github-token"), ("$", "slack-token"), ("$", "aws-access-key-id")]


@pytest.mark.parametrize(
    "template",
    [
        "aws_secret_access_key = {}",
        "AWS_SECRET_ACCESS_KEY={}",
        'export AWS_SECRET_ACCESS_KEY="{}"',
        '{{"aws_secret_access_key": "{}"}}',
        '{{\\"SecretAccessKey\\": \\"{}\\"}}',  # inside a JSON body string
        "x-aws-secret-access-key: {}",
    ],
)
def test_aws_secret_in_a_named_field_redacted_and_the_name_kept(template: str) -> None:
    new, findings = redact({"s": template.format(AWS_SECRET)}, {})

    assert new == {"s": template.format("[REDACTED:aws-secret-key]")}
    assert findings == [("$.s", "aws-secret-key")]


@pytest.mark.parametrize("key", ["aws_secret_access_key", "SecretAccessKey", "AWS-Secret-Key"])
def test_aws_secret_under_a_named_dict_key_or_header_redacted(key: str) -> None:
    doc = {"credentials": {key: AWS_SECRET}, "headers": {key: [AWS_SECRET]}}

    new, findings = redact(doc, {})

    assert new == {
        "credentials": {key: "[REDACTED:aws-secret-key]"},
        "headers": {key: ["[REDACTED:aws-secret-key]"]},
    }
    assert [kind for _, kind in findings] == ["aws-secret-key", "aws-secret-key"]


@pytest.mark.parametrize(
    "text", [f"id {AWS} secret {AWS_SECRET}", f"{AWS_SECRET}\n{AWS_TEMPORARY}"]
)
def test_aws_secret_beside_an_access_key_id_redacted(text: str) -> None:
    new, findings = redact(text, {})

    assert AWS_SECRET not in new
    assert sorted(kind for _, kind in findings) == ["aws-access-key-id", "aws-secret-key"]


def test_pem_block_inside_a_json_body_string_and_cut_short() -> None:
    body = json.dumps({"key": PEM, "after": "kept"})
    cut = PEM.split("-----END")[0]

    new, _ = redact({"body": body, "cut": "key: " + cut}, {})

    assert json.loads(new["body"]) == {"key": "[REDACTED:private-key]", "after": "kept"}
    assert new["cut"] == "key: [REDACTED:private-key]"


@pytest.mark.parametrize("ellipsis", ["...", "\u2026"])
@pytest.mark.parametrize("key", [OPENAI, ANTHROPIC, GITHUB, JWT])
def test_a_key_cut_short_for_display_keeps_no_part_of_it(key: str, ellipsis: str) -> None:
    # A note clipped before it was redacted: what is left of the key is still one.
    text = f"HTTP 401: {key[:24]}{ellipsis}"

    new, findings = redact(text, {})

    # Named as the key when what is left still has the key's shape (`sk-` and 20 characters).
    assert new in (f"HTTP 401: [REDACTED:{kind}]{ellipsis}" for kind in ("cut-key", "openai-key"))
    assert len(findings) == 1


# False positives ---------------------------------------------------------------------------------

PNG_BASE64 = base64.b64encode(bytes(range(256)) * 40).decode()


@pytest.mark.parametrize(
    "text",
    [
        "a risk-free trial, a task-management tool and a desk-sharing plan",
        "sk-learn-gradient-boosting-tutorial-2024-notes",  # a slug: no long random run
        "sk-abcdefghijklmnopqrstuvwxyz",  # one case, no digits
        "ask-" + RANDOM * 2,  # `sk-` inside a word
        "the Bearer of this letter, and bearer bonds",
        "Bearer authentication-without-any-digits",
        "cc62c6c03bc239b9 46401bb71681cdd2 4f40d272437b721b",  # our 16-hex key hashes
        "sha256:" + "0123456789abcdef" * 4,
        "max_tokens prompt_tokens completion_tokens api_key_header token",
        "xoxo-gossip-girl-season-one",
        "AKIA" + "IOSFODNN7EXAMPLE" + "X",  # too long for an access key id
        "XAKIA" + "IOSFODNN7EXAMPLE",  # inside a longer word
        "AIza" + RANDOM[:35] + "more",  # longer than a Google key
        "ghp_short",
        "github_pat_too_short",
        "[REDACTED:OPENAI_API_KEY] and [REDACTED:openai-key]",
        "",
        # A git sha, a uuid, a hash and a 40-character word beside an access key id's marker.
        "[REDACTED:aws-access-key-id] commit 0123456789abcdef0123456789abcdef01234567",
        "[REDACTED:aws-access-key-id] run 123e4567-e89b-12d3-a456-426614174000",
        "[REDACTED:aws-access-key-id] " + "Antidisestablishmentarianism" + "Abcdefghijkl",
        "secret_key = too-short-to-be-a-key",
        "eyJ alone, and eyJhbGciOi without its other parts",
        "a bare prefix sk-ant-api... and a slug sk-learn-docs... cut short",
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A\n-----END PUBLIC KEY-----",
        "-----BEGIN CERTIFICATE-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A\n-----END CERTIFICATE-----",
    ],
)
def test_not_a_secret(text: str) -> None:
    assert redact({"s": text}, {}) == ({"s": text}, [])


def test_base64_image_data_holding_key_prefixes_is_not_a_secret() -> None:
    # Key prefixes in the middle of base64 data are preceded by a letter or digit.
    head = PNG_BASE64[:2000]
    assert head[-1].isalnum()
    data = (
        f"data:image/png;base64,{head}AIza{RANDOM[:35]}/{head}AKIA"
        f"IOSFODNN7EXAMPLE+{head}AIza{RANDOM[:35]}{head}"
    )

    assert redact({"image": data}, {}) == ({"image": data}, [])


def test_the_demo_cassettes_hold_no_secret_shape() -> None:
    assert scan_files([REPO / "cassettes"], {}) == []


# Idempotence, purity, structure ------------------------------------------------------------------


def leaky_doc() -> dict[str, Any]:
    return {
        "trace": {
            "answer": f"k={OPENAI} t=env-secret-value-1",
            "tool_calls": [{"name": "search", "args": {"auth": f"Bearer {AWS}"}}],
            "retrieved": [{"id": 1, "score": 0.5, "ok": True, "none": None}],
        },
        "key": {"case": "cc62c6c03bc239b9"},
        GITHUB: "as a key",
    }


def test_redacting_twice_equals_once_and_reports_nothing_new() -> None:
    secrets = {"APP_TOKEN": "env-secret-value-1"}
    once, findings = redact(leaky_doc(), secrets)

    twice, again = redact(once, secrets)

    assert twice == once
    assert again == []
    assert len(findings) == 4


def test_input_not_modified_and_clean_parts_shared() -> None:
    doc = leaky_doc()
    before = copy.deepcopy(doc)

    new, _ = redact(doc, {})

    assert doc == before
    assert new["trace"]["retrieved"] is doc["trace"]["retrieved"]
    assert new["key"] is doc["key"]
    assert redact(doc["key"], {})[0] is doc["key"]


def test_non_string_values_kept_and_tuples_stay_tuples() -> None:
    doc = {"n": 1, "f": 0.5, "b": False, "none": None, "t": ("x", GITHUB)}

    new, _ = redact(doc, {})

    assert new == {
        "n": 1,
        "f": 0.5,
        "b": False,
        "none": None,
        "t": ("x", "[REDACTED:github-token]"),
    }


def test_bytes_values_redacted_as_text() -> None:
    new, findings = redact({"body": f"k={OPENAI}".encode(), "bin": b"\xff" + OPENAI.encode()}, {})

    assert new["body"] == b"k=[REDACTED:openai-key]"
    assert new["bin"] == b"\xff" + OPENAI.encode()  # not UTF-8: left alone
    assert findings == [("$.body", "openai-key")]


def test_two_secret_dict_keys_do_not_collide() -> None:
    new, findings = redact({GITHUB: 1, GITHUB_APP: 2}, {})

    assert new == {"[REDACTED:github-token]": 1, "[REDACTED:github-token] #2": 2}
    assert len(findings) == 2


def test_json_paths_quote_names_that_are_not_identifiers() -> None:
    _, findings = redact({"headers": {"x-api-key": [OPENAI]}, "a b": {"0": OPENAI}}, {})

    assert [path for path, _ in findings] == ['$.headers["x-api-key"][0]', '$["a b"]["0"]']


@pytest.mark.parametrize(
    ("secrets", "recordings", "line"),
    [
        (2, 1, "redacted 2 secrets in 1 recording"),
        (1, 1, "redacted 1 secret in 1 recording"),
        (5, 3, "redacted 5 secrets in 3 recordings"),
    ],
)
def test_redaction_summary_wording(secrets: int, recordings: int, line: str) -> None:
    assert redaction_summary(secrets, recordings) == line


# scan_files and the ini lookup -----------------------------------------------------------------


def write(path: Path, content: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def test_scan_files_walks_folders_and_reports_file_path_and_kind(tmp_path: Path) -> None:
    clean = write(tmp_path / "c" / "suite" / "a.json", {"trace": {"answer": "fine"}})
    interaction = {"request": {"headers": {"authorization": [f"Bearer {AWS}"]}}}
    leaky = write(tmp_path / "c" / "suite" / "b.http.json", {"interactions": [interaction]})
    write(tmp_path / "c" / "notes.txt", OPENAI)  # not *.json: not scanned
    broken = write(tmp_path / "c" / "suite" / "c.json", "{")
    binary = write(tmp_path / "c" / "d.json", b"\xff\xfe")
    named = write(tmp_path / "extra.txt", json.dumps({"k": "my-env-secret"}))

    findings = scan_files([tmp_path / "c", named, clean], {"X_SECRET": "my-env-secret"})

    assert findings == [
        Finding(binary, None, "not JSON (not UTF-8 text)"),
        Finding(leaky, "$.interactions[0].request.headers.authorization[0]", "aws-access-key-id"),
        Finding(
            broken, None, "not JSON (Expecting property name enclosed in double quotes at line 1)"
        ),
        Finding(named, "$.k", "X_SECRET"),
    ]
    assert findings[1].line() == (
        f"{leaky}: $.interactions[0].request.headers.authorization[0]: aws-access-key-id"
    )
    assert findings[0].line() == f"{binary}: not JSON (not UTF-8 text)"


def test_scan_files_reads_markdown_html_and_xml_line_by_line(tmp_path: Path) -> None:
    (tmp_path / "report.md").write_text(f"# Report\n\nfine\n| a | {JWT} |\n")
    (tmp_path / "dashboard.html").write_text(f"<p>\n{PEM}\n</p>\n")
    (tmp_path / "junit.xml").write_text(
        f'<failure message="aws_secret_access_key=&quot;{AWS_SECRET}&quot;"/>\n'
    )
    (tmp_path / "notes.txt").write_text(JWT)  # not a kind the plugin writes

    found = [finding.line() for finding in scan_files([tmp_path], {})]

    assert found == [
        f"{tmp_path / 'dashboard.html'}: line 2: private-key",
        # the body lines too: the file is one document, its BEGIN line tells (issue 30)
        f"{tmp_path / 'dashboard.html'}: line 3: private-key",
        f"{tmp_path / 'dashboard.html'}: line 4: private-key",
        f"{tmp_path / 'dashboard.html'}: line 5: private-key",
        f"{tmp_path / 'junit.xml'}: line 1: aws-secret-key",
        f"{tmp_path / 'report.md'}: line 4: jwt",
    ]


def test_scan_files_missing_path_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ScanPathError, match="nope: no such file or folder"):
        scan_files([tmp_path / "nope"])


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("pytest.ini", "[pytest]\neval_cassettes = recs\n"),
        ("pytest.toml", '[pytest]\neval_cassettes = "recs"\n'),
        ("pyproject.toml", '[tool.pytest.ini_options]\neval_cassettes = "recs"\n'),
        ("pyproject.toml", '[tool.pytest]\neval_cassettes = "recs"\n'),
        ("tox.ini", "[pytest]\neval_cassettes = recs\n"),
        ("setup.cfg", "[tool:pytest]\neval_cassettes = recs\n"),
    ],
)
def test_cassettes_folder_read_from_each_config_file(tmp_path: Path, name: str, text: str) -> None:
    write(tmp_path / name, text)

    assert cassettes_folder_from_ini(tmp_path) == (tmp_path / "recs", f"eval_cassettes in {name}")


def test_cassettes_folder_follows_pytest_precedence(tmp_path: Path) -> None:
    # pytest.ini wins even without the option; a tox.ini with no [pytest] section is skipped.
    write(tmp_path / "pytest.ini", "[pytest]\naddopts = -q\n")
    write(tmp_path / "pyproject.toml", '[tool.pytest.ini_options]\neval_cassettes = "other"\n')
    assert cassettes_folder_from_ini(tmp_path)[0] == tmp_path / "cassettes"

    (tmp_path / "pytest.ini").unlink()
    write(tmp_path / "pyproject.toml", "[project]\nname = 'x'\n")
    write(tmp_path / "tox.ini", "[tox]\nenvlist = py\n")
    write(tmp_path / "setup.cfg", "[tool:pytest]\neval_cassettes = from-setup-cfg\n")
    assert cassettes_folder_from_ini(tmp_path)[0] == tmp_path / "from-setup-cfg"


def test_cassettes_folder_defaults_without_config(tmp_path: Path) -> None:
    assert cassettes_folder_from_ini(tmp_path) == (
        tmp_path / "cassettes",
        "the default cassettes folder",
    )


# The scan command ------------------------------------------------------------------------------
