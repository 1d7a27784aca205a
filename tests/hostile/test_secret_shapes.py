"""Redaction covers the shapes the third probe found, everywhere we write; `scan` finds every
shape redaction does; ordinary text stays as it is (issue 30, "What to build" 2).

One `--live` run of a system that plants each shape in its answer (a PEM block and an AWS
secret each on lines of their own, which the lexical faithfulness judge splits into claims), a
tool argument, an HTTP request (headers, URL, body), its `fingerprint()`, a user's ingestion
(`setup_user`'s result and HTTP request) and an exception message, with `--junitxml` and
`--eval-report`; then every file the run wrote, and what it printed, is searched for every
planted secret. Then unit tests of the shapes, the labelled
fields, the lone pieces of a key, `scan`, and the corpus of ordinary text
(tests/redaction_corpus.py, also measured by benchmarks/redaction.py).

The fake secrets are built at run time (tests/fake_secrets.py): no file holds one.
"""

from __future__ import annotations

import asyncio
import html
import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import unquote

import fake_secrets as fake
import pytest
from echo_server import EchoServer
from evalhelpers import Project, output
from fake_secrets import live_run_read_back
from redaction_corpus import ordinary_texts, planted_secrets

from pytest_evalcases.http.match import request_view
from pytest_evalcases.http.scrub import scrub_request, scrub_uri
from pytest_evalcases.judges.base import JudgeInput, StageOptions
from pytest_evalcases.judges.lexical import LexicalJudge
from pytest_evalcases.store.http import stored_request
from pytest_evalcases.store.key_shapes import SHAPE_NAMES
from pytest_evalcases.store.redaction import redact
from pytest_evalcases.store.secret_scan import scan_files

# A short `sk-proj-` key: a fingerprint value of at most 80 characters is shown as it is.
SHORT_OPENAI = fake.fake("sk-", "proj-" + fake.RANDOM)
PEM_BODY_LINE = fake.PEM.splitlines()[1]

# Each secret the run plants, by what it is.
PLANTED = {
    "sk-proj key in the fingerprint": SHORT_OPENAI,
    "Stripe secret key": fake.STRIPE,
    "Stripe test key": fake.STRIPE_TEST,
    "Stripe restricted key": fake.STRIPE_RESTRICTED,
    "Hugging Face token": fake.HUGGING_FACE,
    "password in a URL or DSN": fake.URL_PASSWORD,
    "Basic credentials": fake.BASIC_AUTH.split()[1],
    "Azure subscription key": fake.AZURE_SUBSCRIPTION_KEY,
    "Azure SAS signature": fake.AZURE_SAS_SIGNATURE,
    "AWS secret of another length": fake.SHORT_AWS_SECRET,
    "AWS secret on a line of its own": fake.AWS_SECRET,
    "PEM body line": PEM_BODY_LINE,
}

SHAPES_SYSTEM = '''\
"""A system that plants every secret of secrets.json in each way out it has."""
import json
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent
S = json.loads((ROOT / "secrets.json").read_text())


class System:
    def setup_user(self, user):
        headers = {"Proxy-Authorization": S["basic"], "Ocp-Apim-Subscription-Key": S["azure"]}
        with httpx.Client(timeout=5) as client:
            client.post(S["url"] + "/ingest?" + S["sas_url"].partition("?")[2],
                        json={"dsn": S["dsn"], "hf": S["hf"]}, headers=headers)
        return {"indexed": 1, "dsn": S["dsn"], "aws_secret_access_key": S["short_aws"],
                "note": f"stripe {S['stripe']} hf {S['hf']} at {S['git_url']}"}

    def fingerprint(self):
        return {"model": "gpt-4o-mini", "api_key_hint": S["openai"], "billing": S["stripe"],
                "aws_secret_access_key": S["short_aws"]}

    def run(self, case):
        if case["id"] == "raises":
            raise RuntimeError(
                f"connect {S['dsn']} failed; clone {S['git_url']}; stripe {S['stripe']}; "
                f"hf {S['hf']}; proxy {S['basic']}; Ocp-Apim-Subscription-Key: {S['azure']}; "
                f"blob {S['sas_url']}; aws_secret_access_key={S['short_aws']}"
            )
        headers = {"Proxy-Authorization": S["basic"], "Ocp-Apim-Subscription-Key": S["azure"],
                   "X-Debug": f"stripe {S['stripe_test']} hf {S['hf']}"}
        body = {"question": case["input"], "dsn": S["dsn"], "restricted": S["stripe_rk"],
                "password": S["url_password"], "sas": S["sas_url"]}
        query = S["sas_url"].partition("?")[2]
        with httpx.Client(timeout=5) as client:
            reply = client.post(S["url"] + "/ask?" + query, json=body, headers=headers).json()
        lines = [
            "The database is reachable at " + S["dsn"] + ".",
            "The deploy key follows.",
            S["pem"],
            "The access key id is " + S["aws_id"] + ".",
            S["aws_secret"],
            "Stripe key " + S["stripe"] + " and test key " + S["stripe_test"] + ".",
            "Hugging Face token " + S["hf"] + ".",
            "Proxy-Authorization: " + S["basic"],
            "Ocp-Apim-Subscription-Key: " + S["azure"],
            "The report is at " + S["sas_url"],
            "Clone " + S["git_url"],
        ]
        answer = "\\n".join(lines)
        return {
            "answer": answer,
            "tool_calls": [{"name": "lookup", "args": {
                "aws_secret_access_key": S["short_aws"], "password": S["url_password"],
                "dsn": S["dsn"], "ocp-apim-subscription-key": S["azure"]}}],
            "tool_outputs": [{"tool": "lookup", "content": json.dumps(reply)}],
            "retrieved": [],
            "context": [answer],
        }


system = System()
'''


def shapes_project(root: Path, server: EchoServer) -> Project:
    project = Project(root).write_base()
    project.write_text("shapesys.py", SHAPES_SYSTEM)
    secrets = {
        "url": server.url,
        "openai": SHORT_OPENAI,
        "stripe": fake.STRIPE,
        "stripe_test": fake.STRIPE_TEST,
        "stripe_rk": fake.STRIPE_RESTRICTED,
        "hf": fake.HUGGING_FACE,
        "dsn": fake.DSN,
        "git_url": fake.URL_WITH_PASSWORD,
        "url_password": fake.URL_PASSWORD,
        "basic": fake.BASIC_AUTH,
        "azure": fake.AZURE_SUBSCRIPTION_KEY,
        "sas_url": fake.AZURE_SAS_URL,
        "short_aws": fake.SHORT_AWS_SECRET,
        "aws_id": fake.AWS,
        "aws_secret": fake.AWS_SECRET,
        "pem": fake.PEM,
    }
    project.write_text("secrets.json", json.dumps(secrets))
    project.write_suite(
        {
            "name": "shapes",
            "system": "shapesys:system",
            "judge": "lexical",
            "stages": ["tools", "faithfulness", "exact_match"],
            "cases": [
                # Failing stages: their failure messages show the answer and the tool call.
                {"id": "answers", "input": "q", "expected_tools": ["search"], "reference": "no"},
                {"id": "raises", "input": "q", "expected_tools": ["search"], "reference": "no"},
                # A user: its ingestion recording (setup_user's result and HTTP) is written too.
                {"id": "of-a-user", "input": "q", "user": "u-leak", "reference": "no"},
            ],
            "users": [{"id": "u-leak", "notes": "data/kb.txt"}],
        }
    )
    return project


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimpleNamespace]:
    """The files the --live run wrote (path -> text) and what it printed."""
    with EchoServer() as server:
        yield live_run_read_back(shapes_project(tmp_path_factory.mktemp("shapes"), server))


def test_the_run_wrote_every_file_kind_and_judged_the_claims(planted: SimpleNamespace) -> None:
    """The run under test wrote what the probe read, and the lexical judge's claims (one per
    line of the answer) are in the cassette's verdict details."""
    assert {
        "cassettes/shapes/answers.json",
        "cassettes/shapes/answers.http.json",
        "cassettes/shapes/users/u-leak.json",
        "cassettes/shapes/users/u-leak.http.json",
        "junit.xml",
        "reports/results.json",
        "reports/manifest.json",
        "reports/report.md",
        "reports/dashboard.html",
        "reports/recording-changes.md",
    } <= set(planted.texts), sorted(planted.texts)
    cassette = json.loads(planted.texts["cassettes/shapes/answers.json"])
    claims = [row["claim"] for row in cassette["verdicts"]["faithfulness"]["details"]["claims"]]
    assert "The deploy key follows." in claims
    assert any("[REDACTED:private-key]" in claim for claim in claims)
    manifest = json.loads(planted.texts["reports/manifest.json"])
    assert manifest["config"]["suites"]["shapes"]["fingerprint"]["model"] == "gpt-4o-mini"
    assert (
        "connect postgres://app:[REDACTED:url-password]@" in planted.texts["reports/results.json"]
    )


def planted_forms(secret: str) -> list[str]:
    """The secret as each kind of file would hold it: as is, JSON-escaped, HTML-escaped,
    URL-decoded."""
    return sorted({secret, json.dumps(secret)[1:-1], html.escape(secret), unquote(secret)})


@pytest.mark.parametrize("what", list(PLANTED))
def test_no_planted_secret_reaches_any_written_file_or_the_terminal(
    planted: SimpleNamespace, what: str
) -> None:
    """Each was written raw before: the sk-proj key of a fingerprint to manifest.json and
    results.json; a PEM body line and an AWS secret alone on their lines to the verdict's
    claims; the shapes outside the table and a short value of `aws_secret_access_key` to every
    file and the terminal."""
    forms = planted_forms(PLANTED[what])
    leaks = [
        name
        for name, text in {**planted.texts, "(terminal)": planted.printed}.items()
        if any(form in text for form in forms)
    ]
    assert leaks == []


def test_scan_of_the_run_is_clean(planted: SimpleNamespace) -> None:
    root = planted.project.root
    findings = scan_files([root / "cassettes", root / "reports", root / "junit.xml"], {})

    assert [finding.line() for finding in findings] == []


# The shapes, one by one ----------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "text"), planted_secrets(), ids=lambda value: value[:40])
def test_each_planted_shape_is_redacted_and_named(kind: str, text: str) -> None:
    new, findings = redact({"s": text}, {})

    assert kind in [found for _, found in findings]
    assert f"[REDACTED:{kind}]" in new["s"]


def test_every_shape_of_the_table_is_planted() -> None:
    """The corpus of planted secrets covers the whole table (the benchmark counts on it)."""
    assert set(SHAPE_NAMES) <= {kind for kind, _ in planted_secrets()}


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (f"connect to {fake.DSN}", "postgres://app:"),
        (f"clone {fake.URL_WITH_PASSWORD}", "@git.example.com/org/repo.git"),
        (f"Proxy-Authorization: {fake.BASIC_AUTH}", "Proxy-Authorization: Basic "),
        (f"ocp-apim-subscription-key: {fake.AZURE_SUBSCRIPTION_KEY}", "ocp-apim-subscription-key"),
        (fake.AZURE_SAS_URL, "&sp=r&sig="),
    ],
)
def test_the_frame_of_a_credential_stays_readable(text: str, kept: str) -> None:
    """The user, the host, the header name and the other query parameters stay."""
    new, _ = redact(text, {})

    assert kept in new


def test_the_user_of_a_url_stays_and_only_its_password_goes() -> None:
    new, findings = redact(f"db {fake.DSN} and https://user:pass@host.example/x", {})

    assert new == (
        "db postgres://app:[REDACTED:url-password]@db.internal:5432/orders and "
        "https://user:[REDACTED:url-password]@host.example/x"
    )
    assert [kind for _, kind in findings] == ["url-password", "url-password"]


@pytest.mark.parametrize(
    "field",
    [
        "aws_secret_access_key",
        "SecretAccessKey",
        "AWS_SECRET_ACCESS_KEY",
        "password",
        "DB_PASSWORD",
        "client_secret",
        "x-api-key",
        "Ocp-Apim-Subscription-Key",
        "Proxy-Authorization",
    ],
)
@pytest.mark.parametrize("value", [fake.SHORT_AWS_SECRET, "hunter2", "a b c"])
def test_a_labelled_secret_field_is_redacted_whatever_its_value(field: str, value: str) -> None:
    """`aws_secret_access_key` with a value that is not 40 characters was written as it is."""
    new, findings = redact({"config": {field: value, "region": "eu-west-1"}}, {})

    assert value not in json.dumps(new)
    assert new["config"]["region"] == "eu-west-1"
    assert [path for path, _ in findings] == [f"$.config{json_step(field)}"]


def json_step(name: str) -> str:
    return f".{name}" if name.replace("_", "").isalnum() else f"[{json.dumps(name)}]"


@pytest.mark.parametrize(
    "value", ["", "   ", "***", "<password>", "${DB_PASSWORD}", "null", "[REDACTED:password]"]
)
def test_a_labelled_field_keeps_an_empty_value_a_placeholder_and_a_marker(value: str) -> None:
    new, findings = redact({"password": value}, {})

    assert (new, findings) == ({"password": value}, [])


def test_a_labelled_field_that_is_not_text_is_kept() -> None:
    doc = {"password": None, "api_key": 12, "authorization": True}

    assert redact(doc, {}) == (doc, [])


def test_a_field_whose_name_only_looks_like_a_secret_is_kept() -> None:
    doc = {"max_tokens": 512, "keywords": "alpha beta", "api_key_env": "OPENAI_API_KEY"}

    assert redact(doc, {}) == (doc, [])


# Lone pieces of a key ------------------------------------------------------------------------


def test_a_pem_body_line_alone_is_found_when_the_document_holds_the_frame() -> None:
    """The lexical judge's claims: one line each, the BEGIN frame in another string."""
    doc = {
        "trace": {"answer": f"The key:\n{fake.PEM}"},
        "verdicts": {"claims": [{"claim": "The key:"}, {"claim": PEM_BODY_LINE}]},
    }

    new, findings = redact(doc, {})

    assert PEM_BODY_LINE not in json.dumps(new)
    assert new["verdicts"]["claims"] == [
        {"claim": "The key:"},
        {"claim": "[REDACTED:private-key]"},
    ]
    assert ("$.verdicts.claims[1].claim", "private-key") in findings


def test_a_pem_body_line_is_found_beside_a_marker_of_an_earlier_redaction() -> None:
    """A cassette written before: its answer holds the marker, a claim the raw line."""
    doc = {"answer": "[REDACTED:private-key]", "claims": [f"  {PEM_BODY_LINE}  "]}

    new, findings = redact(doc, {})

    assert new["claims"] == ["  [REDACTED:private-key]  "]
    assert findings == [("$.claims[0]", "private-key")]


def test_an_aws_secret_alone_is_found_when_the_document_holds_a_key_id() -> None:
    doc = {"answer": f"id {fake.AWS}", "claims": ["x " * 200, fake.AWS_SECRET]}

    new, findings = redact(doc, {})

    assert new["claims"][1] == "[REDACTED:aws-secret-key]"
    assert ("$.claims[1]", "aws-secret-key") in findings


def test_without_a_frame_or_a_key_id_a_lone_line_of_base64_is_left_alone() -> None:
    """Base64 data and a 40-character token are ordinary where no key is."""
    doc = {"answer": "image data follows", "claims": [PEM_BODY_LINE, fake.AWS_SECRET]}

    assert redact(doc, {}) == (doc, [])


def test_a_git_sha_stays_beside_a_key_id() -> None:
    sha = "4f40d272437b721b4e07408562bedb8bd2072528"
    doc = {"answer": f"id {fake.AWS}", "commit": sha, "line": f"\n{sha}\n"}

    new, _ = redact(doc, {})

    assert new["commit"] == sha
    assert sha in new["line"]


def test_the_lexical_judge_redacts_before_it_splits_claims() -> None:
    answer = f"The deploy key follows.\n{fake.PEM}\nIt belongs to {fake.AWS}.\n{fake.AWS_SECRET}"
    data = JudgeInput(input="q", answer=answer, reference=None, context=[answer])

    grade = asyncio.run(LexicalJudge()._grade("faithfulness", data, StageOptions()))
    text = json.dumps(grade.details)

    assert PEM_BODY_LINE not in text
    assert fake.AWS_SECRET not in text
    assert "[REDACTED:private-key]" in text


# scan finds what redaction does --------------------------------------------------------------


@pytest.mark.parametrize(("kind", "text"), planted_secrets(), ids=lambda value: value[:40])
@pytest.mark.parametrize("file_name", ["cassette.json", "report.md", "junit.xml"])
def test_scan_finds_each_shape_in_each_file_kind(
    tmp_path: Path, kind: str, text: str, file_name: str
) -> None:
    if file_name.endswith(".json"):
        content = json.dumps({"trace": {"answer": text}})
    elif file_name.endswith(".xml"):
        content = f'<testcase><failure message="{html.escape(text, quote=True)}"/></testcase>\n'
    else:
        content = f"# Report\n\n{text}\n"
    (tmp_path / file_name).write_text(content, encoding="utf-8")

    assert kind in {finding.kind for finding in scan_files([tmp_path], {})}


def test_scan_finds_a_labelled_field_of_any_value_in_a_recording(tmp_path: Path) -> None:
    doc = {"trace": {"tool_calls": [{"args": {"aws_secret_access_key": "short"}}]}}
    (tmp_path / "case.json").write_text(json.dumps(doc), encoding="utf-8")

    found = [finding.line() for finding in scan_files([tmp_path], {})]

    assert found == [
        f"{tmp_path / 'case.json'}: $.trace.tool_calls[0].args.aws_secret_access_key: "
        "aws-secret-key"
    ]


def test_scan_finds_a_lone_pem_line_of_a_markdown_file_by_its_frame_elsewhere(
    tmp_path: Path,
) -> None:
    report = f"# Report\n\nkey: [REDACTED:private-key]\n\n| claim |\n| {PEM_BODY_LINE} |\n"
    (tmp_path / "report.md").write_text(report, encoding="utf-8")

    found = [finding.line() for finding in scan_files([tmp_path], {})]

    assert found == [f"{tmp_path / 'report.md'}: line 6: private-key"]


# What must stay ------------------------------------------------------------------------------


def test_the_corpus_of_ordinary_text_comes_out_unchanged() -> None:
    """Ids, hashes, uuids, base64 data, random tokens, URLs without a password and prose: no
    false positive (benchmarks/redaction.py prints the count by category)."""
    corpus = ordinary_texts()
    changed = [(category, text) for category, text in corpus if redact(text, {})[1]]

    assert len(corpus) > 1000
    assert changed == []


def test_the_corpus_holds_each_category_the_issue_names() -> None:
    categories = {category for category, _ in ordinary_texts()}

    assert categories == {"prose", "url", "id", "hash", "uuid", "base64", "token"}


# A URL's password in an HTTP recording --------------------------------------------------------


def test_a_recorded_request_keeps_no_url_password_and_stays_readable_after_redaction() -> None:
    """A URL password redacted in place (`user:[REDACTED:url-password]@host`) would be a host
    part urlsplit refuses: replay's matching of that request would crash. Scrubbing drops it."""
    request = {
        "method": "GET",
        "uri": fake.URL_WITH_PASSWORD + "?" + fake.AZURE_SAS_URL.partition("?")[2],
        "body": None,
        "headers": {"proxy-authorization": [fake.BASIC_AUTH]},
    }

    stored, _ = redact(stored_request(scrub_request(request)), {})
    view = request_view(stored, [])

    assert stored["uri"].startswith("https://deploy@git.example.com/org/repo.git?")
    assert "sig=[REDACTED:azure-sas-signature]" in stored["uri"]
    assert fake.URL_PASSWORD not in json.dumps(stored)
    assert "proxy-authorization" not in stored.get("headers", {})
    assert view[2] == "git.example.com"


@pytest.mark.parametrize(
    "uri",
    [
        "https://user@host/x",
        "https://host/x?next=https://a:b@c",
        "mailto:someone@example.com",
        "http://[::1]:8080/health",
    ],
)
def test_scrubbing_leaves_a_url_without_a_password_as_it_is(uri: str) -> None:
    assert scrub_uri(uri) == uri


# The labels of a stale message ---------------------------------------------------------------

LABELLED_FINGERPRINT_SYSTEM = """
class System:
    def fingerprint(self):
        return {{"aws_secret_access_key": "{secret}"}}

    def run(self, case):
        return {{"answer": "b", "tool_calls": [], "retrieved": [], "context": []}}


system = System()
"""


def fingerprint_project(root: Path, secret: str) -> Project:
    """One case, its system's fingerprint `{"aws_secret_access_key": secret}`."""
    project = Project(root).write_base()
    project.write_text("fpsys.py", LABELLED_FINGERPRINT_SYSTEM.format(secret=secret))
    project.write_suite(
        {
            "name": "fp",
            "system": "fpsys:system",
            "stages": ["exact_match"],
            "cases": [{"id": "a", "input": "q", "reference": "b"}],
        }
    )
    return project


def test_a_stale_message_shows_no_value_of_a_labelled_fingerprint_field(tmp_path: Path) -> None:
    """`fingerprint.aws_secret_access_key changed (388832 -> "Zz9newsecret2")`: the new value
    of a field named like a secret was printed and written to the reports (no shape names it)."""
    old_secret, new_secret = "Zz9" + "oldsecret1", "Zz9" + "newsecret2"
    project = fingerprint_project(tmp_path, old_secret)
    project.run("--live", "-p", "no:cacheprovider")
    project.write_text("fpsys.py", LABELLED_FINGERPRINT_SYSTEM.format(secret=new_secret))

    result = project.run("-p", "no:cacheprovider", "-rA", "--eval-report=reports")

    written = "".join(path.read_text() for path in (tmp_path / "reports").iterdir())
    printed = output(result)
    assert "fingerprint.aws_secret_access_key changed" in printed
    assert [secret for secret in (old_secret, new_secret) if secret in printed + written] == []


def test_a_locked_manifest_with_a_raw_key_is_refused_without_showing_it(tmp_path: Path) -> None:
    """A manifest.json locked before fingerprint values were redacted holds the key raw: the
    refusal lists the difference, redacted (it is printed)."""
    project = fingerprint_project(tmp_path, SHORT_OPENAI)
    project.run("--live", "-p", "no:cacheprovider", "--eval-report=lock")
    manifest = tmp_path / "lock" / "manifest.json"
    locked = json.loads(manifest.read_text())
    fingerprint = locked["config"]["suites"]["fp"]["fingerprint"]
    assert fingerprint == {"aws_secret_access_key": "[REDACTED:openai-key]"}
    fingerprint["aws_secret_access_key"] = SHORT_OPENAI  # as an older version wrote it
    manifest.write_text(json.dumps(locked))

    result = project.run("-p", "no:cacheprovider", "--eval-manifest", "lock/manifest.json")

    printed = output(result)
    assert "differs from the locked manifest" in printed
    assert "aws_secret_access_key" in printed
    assert SHORT_OPENAI[:16] not in printed
