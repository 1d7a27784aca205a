"""Suite users, the pure parts: a suite without users keys its cases as before, a case cannot
be grouped apart from its user, a stale user names only the files that changed."""

from __future__ import annotations

import pytest


def test_a_suite_without_users_keys_and_views_its_cases_as_before() -> None:
    from pytest_evalcases.core.schema import validate_case
    from pytest_evalcases.domain.system import key_view, system_view

    plain = validate_case({"id": "c", "input": "q", "tone": "dry"})
    assert system_view(plain) == {"id": "c", "input": "q", "tone": "dry"}
    assert plain.group is None and plain.user is None
    with_user = validate_case(
        {"id": "c", "input": "q", "user": "u-ana", "metadata": {"level": "hard"}}
    )
    # The user is in the system's view (and so in the `case` hash); metadata never is.
    assert key_view(system_view(with_user)) == {"input": "q", "user": "u-ana"}
    assert with_user.group == "u-ana" and with_user.metadata == {"level": "hard"}


def test_a_case_grouped_apart_from_its_user_is_refused() -> None:
    from pytest_evalcases.core.schema import ValidationError, validate_case

    with pytest.raises(ValidationError, match='grouped by its user: remove "group"'):
        validate_case({"id": "c", "input": "q", "user": "u-ana", "group": "team-1"})
    assert validate_case({"id": "c", "input": "q", "user": "u-ana", "group": "u-ana"}).group == (
        "u-ana"
    )


def test_a_stale_user_names_only_the_files_that_changed() -> None:
    from pytest_evalcases.domain.users import changed_user_files, user_label

    old = user_label(
        {
            "chats": [("data/a/chats.json", "1a2b3c4d")],
            "notes": [("data/a/n1.md", "aaaaaa11"), ("data/a/n2.md", "bbbbbb22")],
        }
    )
    new = user_label(
        {
            "chats": [("data/a/chats.json", "1a2b3c4d")],
            "notes": [("data/a/n1.md", "aaaaaa11"), ("data/a/n3.md", "cccccc33")],
        }
    )
    assert old == "data/a/chats.json@1a2b3c data/a/n1.md@aaaaaa data/a/n2.md@bbbbbb"
    assert changed_user_files(old, new) == "data/a/n2.md@bbbbbb -> data/a/n3.md@cccccc"
    assert changed_user_files("not a list", new) is None
    long_files = {"docs": [(f"data/a/document-{n}.md", "1a2b3c") for n in range(9)]}
    assert user_label(long_files) is None  # too long to read: the hash is shown instead
