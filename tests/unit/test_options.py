"""The plugin's options as a parsed configuration reads them: the rate limits come from the
flag, then the environment, then the ini; bad values are usage errors."""

from __future__ import annotations

import re

import pytest
from evalhelpers import INI

from pytest_evalcases.pytest_plugin.session import get_session


@pytest.mark.parametrize(
    ("args", "env", "ini", "expected"),
    [
        (["--eval-rpm", "120"], {"EVALCASES_RPM": "60"}, "eval_rpm = 30", (120.0, None)),
        ([], {"EVALCASES_RPM": "60", "EVALCASES_TPM": "9000"}, "eval_rpm = 30", (60.0, 9000.0)),
        ([], {}, "eval_rpm = 30\neval_tpm = 40000", (30.0, 40000.0)),
        ([], {}, "", (None, None)),
    ],
    ids=["flag", "environment", "ini", "none"],
)
def test_rate_options_flag_then_environment_then_ini(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    env: dict[str, str],
    ini: str,
    expected: tuple[float | None, float | None],
) -> None:
    for name in ("EVALCASES_RPM", "EVALCASES_TPM"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    pytester.makeini(INI + ini + "\n")
    state = get_session(pytester.parseconfigure(*args))
    assert (state.settings.judge_rpm, state.settings.judge_tpm) == expected


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--eval-rpm", "0"], {}, "--eval-rpm must be a positive number, not 0.0"),
        ([], {"EVALCASES_TPM": "lots"}, "EVALCASES_TPM: 'lots' is not a number"),
    ],
)
def test_bad_rate_options_are_usage_errors(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    env: dict[str, str],
    message: str,
) -> None:
    for name in ("EVALCASES_RPM", "EVALCASES_TPM"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    pytester.makeini(INI)
    with pytest.raises(pytest.UsageError, match=re.escape(message)):
        pytester.parseconfigure(*args)
