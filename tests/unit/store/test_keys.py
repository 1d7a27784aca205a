"""store/keys.py: stale messages that show the words a long fingerprint value changed, and
advice that names a command that can succeed."""

import pytest

from pytest_evalcases.adapters.fingerprints import fingerprint_of
from pytest_evalcases.core.errors import StaleRecording
from pytest_evalcases.core.hashing import LABEL_CHARS, fingerprint_label, name_label
from pytest_evalcases.store.keys import (
    changed_fields,
    check_key,
    ingestion_key,
    replay_http_can_check,
    suite_key_fields,
    suite_key_labels,
    user_ingestion_key,
)

PROMPT = (
    "You are the ShopCo support agent. Use the tools to look things up before you answer. "
    "Answer in one sentence, only from what the tools return. Never guess a number."
)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search_kb",
            "description": "Search the ShopCo knowledge base for policy articles; returns the "
            "best matching article ids and their text.",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
        },
    }
]


def _key_and_labels(fingerprint):
    return (
        suite_key_fields("app:system", {}, fingerprint),
        suite_key_labels("app:system", [], fingerprint, {}),
    )


def test_a_long_prompt_change_shows_the_words_that_changed():
    old_key, old_labels = _key_and_labels({"prompt": PROMPT})
    new_prompt = PROMPT.replace("one sentence", "two short sentences")
    new_key, new_labels = _key_and_labels({"prompt": new_prompt})
    assert changed_fields(old_key, new_key, old_labels, new_labels) == [
        'fingerprint.prompt changed: "…Answer in one sentence, only from…" -> '
        '"…Answer in two short sentences, only from…"'
    ]


def test_a_tool_description_change_via_fingerprint_of_shows_its_words():
    old_key, old_labels = _key_and_labels(fingerprint_of(TOOLS, prompt="p"))
    edited = [{**TOOLS[0], "function": dict(TOOLS[0]["function"])}]
    edited[0]["function"]["description"] = TOOLS[0]["function"]["description"].replace(
        "knowledge base", "help center"
    )
    new_key, new_labels = _key_and_labels(fingerprint_of(edited, prompt="p"))
    assert changed_fields(old_key, new_key, old_labels, new_labels) == [
        'fingerprint.tool.search_kb changed: description "…the ShopCo knowledge base for policy…" '
        '-> "…the ShopCo help center for policy…"'
    ]


def test_fingerprint_of_keys_are_unchanged_and_tools_keep_a_readable_label():
    """The tool entries hash as before (no key change on upgrade); their label is the JSON of
    description and parameters."""
    fingerprint = fingerprint_of(TOOLS, prompt="p")
    key, labels = _key_and_labels(fingerprint)
    assert fingerprint["tool.search_kb"] == {
        "description": TOOLS[0]["function"]["description"],
        "parameters": TOOLS[0]["function"]["parameters"],
    }
    label = labels["fingerprint.tool.search_kb"]
    assert label == fingerprint_label(fingerprint["tool.search_kb"])
    assert '"description": "Search the ShopCo knowledge base' in label


def test_a_tool_parameter_change_reads_as_its_json_words():
    old_key, old_labels = _key_and_labels({"tool.t": {"description": "d", "parameters": {}}})
    new_key, new_labels = _key_and_labels(
        {"tool.t": {"description": "d", "parameters": {"type": "object"}}}
    )
    assert changed_fields(old_key, new_key, old_labels, new_labels) == [
        'fingerprint.tool.t changed: parameters {} -> {"type": "object"}'
    ]


def test_without_a_recorded_long_label_the_hashes_are_shown():
    old_key, _ = _key_and_labels({"prompt": PROMPT})
    new_key, new_labels = _key_and_labels({"prompt": PROMPT + " Be kind."})
    (change,) = changed_fields(old_key, new_key, {}, new_labels)
    assert change.startswith("fingerprint.prompt changed (" + old_key["fingerprint.prompt"][:6])
    (change,) = changed_fields(old_key, new_key, {"fingerprint.prompt": '"[REDACTED'}, new_labels)
    assert change.startswith("fingerprint.prompt changed (")  # an unreadable label: hashes
    huge_key, huge_labels = _key_and_labels({"prompt": "x " * 5000})  # past the text limit
    assert "fingerprint.prompt" not in huge_labels
    (change,) = changed_fields(old_key, huge_key, {}, huge_labels)
    assert change == (
        f"fingerprint.prompt changed ({old_key['fingerprint.prompt'][:6]} -> "
        f"{huge_key['fingerprint.prompt'][:6]})"
    )
    (change,) = changed_fields(huge_key, new_key, {}, new_labels)  # never the whole new text
    assert change == (
        f"fingerprint.prompt changed ({huge_key['fingerprint.prompt'][:6]} -> "
        f"{new_key['fingerprint.prompt'][:6]})"
    )
    short_key, short_labels = _key_and_labels({"model": "gpt-4o"})
    other_key, other_labels = _key_and_labels({"model": "gpt-4o-mini"})
    assert changed_fields(short_key, other_key, short_labels, other_labels) == [
        'fingerprint.model changed ("gpt-4o" -> "gpt-4o-mini")'  # short labels as before
    ]


@pytest.mark.parametrize(
    ("changed", "offered"),
    [
        ({"code.app"}, True),
        ({"code.app", "code.app.tools"}, True),
        ({"code.app", "fingerprint.prompt"}, False),
        ({"fingerprint.tool.search_kb"}, False),
        ({"code.app", "judge"}, False),
        ({"code.app", "case"}, False),
        ({"data/kb.json"}, False),
        (set(), False),
    ],
)
def test_replay_http_is_offered_only_when_it_can_check_every_change(changed, offered):
    assert replay_http_can_check(changed) is offered


def test_the_advice_names_replay_http_only_for_code_changes():
    recorded = {"code.app": "1" * 16, "fingerprint.prompt": "a" * 16}
    with pytest.raises(StaleRecording) as code_only:
        check_key(recorded, {**recorded, "code.app": "2" * 16}, "", "--live")
    assert str(code_only.value).endswith(
        "re-record with --live, or check it offline with --replay-http"
    )
    with pytest.raises(StaleRecording) as both:
        check_key(recorded, {"code.app": "2" * 16, "fingerprint.prompt": "b" * 16}, "", "--live")
    assert str(both.value).endswith("; re-record with --live")
    assert "--replay-http" not in str(both.value)
    with pytest.raises(StaleRecording) as verdict:
        check_key({"judge": "a"}, {"judge": "b"}, " (verdict x)", "--live-judges")
    assert str(verdict.value).endswith("re-record with --live-judges")


def _user_key(settings):
    """A user's case key: its files as `user.u-ana`, the suite's ingestion settings."""
    fields, labels = ingestion_key(settings)
    return {"format": "2", "case": "c1", "user.u-ana": "f1", **fields}, labels


def test_a_changed_ingestion_setting_of_a_users_case_is_said_as_that_users_ingestion():
    old_key, old_labels = _user_key({"ontology": "people, pets", "chunk_size": 200})
    new_key, new_labels = _user_key({"ontology": "people, pets", "chunk_size": 400})
    assert changed_fields(old_key, new_key, old_labels, new_labels) == [
        "ingestion.u-ana changed: ingestion.chunk_size 200 -> 400"
    ]
    long_old = "Extract people, their pets and the places they live in. " * 3
    old_key, old_labels = _user_key({"ontology": long_old})
    new_key, new_labels = _user_key({"ontology": long_old.replace("pets", "pets, cars")})
    (change,) = changed_fields(old_key, new_key, old_labels, new_labels)
    assert change.startswith('ingestion.u-ana changed: ingestion.ontology "…people, their pets')
    assert "pets, cars" in change


def test_a_users_ingestion_key_holds_what_setup_user_depends_on_only():
    key = {
        "format": "2",
        "system": "s1",
        "case": "c1",
        "judge": "j1",
        "data/kb.txt": "d1",
        "fingerprint.prompt": "p1",
        "code.app.py": "k1",
        "user.u-ana": "f1",
        "ingestion.ontology": "o1",
    }
    fields, labels = user_ingestion_key(
        key, {"user.u-ana": "a.json@f1", "judge": "x"}, "user.u-ana"
    )
    assert fields == {
        "format": "2",
        "system": "s1",
        "fingerprint.prompt": "p1",
        "code.app.py": "k1",
        "user.u-ana": "f1",
        "ingestion.ontology": "o1",
    }
    assert labels == {"user.u-ana": "a.json@f1"}


def test_a_long_data_file_named_ingestion_is_not_said_as_the_users_ingestion() -> None:
    """A path over LABEL_CHARS has no label; a setting is told by its JSON label alone."""
    path = "ingestion." + "x" * LABEL_CHARS + ".md"
    labels = {"user.u-ana": "data/ana/chats.json@1a2b3c"}
    if name_label(path) is not None:  # as suite_key_labels labels an input file
        labels[path] = path
    recorded = {"user.u-ana": "aaaaaa", path: "111111"}
    current = {"user.u-ana": "aaaaaa", path: "222222"}

    assert changed_fields(recorded, current, labels, labels) == [
        f"{path} changed (111111 -> 222222)"
    ]
