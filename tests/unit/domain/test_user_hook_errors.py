"""domain/users.py: a hook's error, said as that hook's and readable without a message."""

from __future__ import annotations

from pytest_evalcases.domain.users import SuiteUser, UserData, call_hook


def user() -> SuiteUser:
    return SuiteUser("u-ana", "user.u-ana", "h", None, UserData(id="u-ana"))


def test_an_error_without_a_message_is_named_by_its_type() -> None:
    def user_ready(data: object, result: object) -> bool:
        raise ValueError()

    try:
        call_hook("user_ready", user(), "memory", user_ready, {"memory_id": "m"})
    except Exception as exc:  # noqa: BLE001 - the error under test
        said = str(exc)
    assert said.startswith("user_ready('u-ana') of suite 'memory' raised ValueError; none of ")


def test_a_hook_error_names_the_hook_and_keeps_its_message() -> None:
    def ready(data: object, result: object) -> bool:
        raise ConnectionError("memory service down\n")

    try:
        call_hook("ready", user(), "memory", ready, None)
    except Exception as exc:  # noqa: BLE001
        said = str(exc)
    assert said.startswith(
        "ready('u-ana') of suite 'memory' raised ConnectionError: memory service down; none of "
    )
