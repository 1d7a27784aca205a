"""Errors the judges raise. Every message says what failed and what to do next."""

from __future__ import annotations


class JudgeError(Exception):
    """A verdict could not be produced: retries exhausted, authentication refused, bad input."""


class JudgeConfigError(JudgeError):
    """The judge cannot be built as configured (unknown spec, missing key or package).

    Raised by `make_judge`, i.e. before any case runs.
    """


class JudgeAuthError(JudgeError):
    """The provider refused the credentials (HTTP 401/403). Never retried."""


class JudgeInputError(JudgeError):
    """The stage cannot be judged with the given input (unknown stage, missing reference)."""


class JudgeReplyError(Exception):
    """The judge model answered, but not with JSON that fits the requested schema.

    Deliberately not a JudgeError: the retry policy treats it as retryable and only turns it into
    a JudgeError once the reply attempts are used up.
    """
