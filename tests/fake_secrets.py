"""Fake keys of each shape the redaction knows, for the redaction and scan tests.

They are assembled at run time from pieces, so no file holds anything that a secret scanner
(ours, or a code host's push protection) takes for a key.
"""

from __future__ import annotations

RANDOM = "Zq8" + "xK3vN" * 4 + "pL0wR7tY2u"  # mixed case and digits, as generated keys are


def fake(prefix: str, body: str = RANDOM) -> str:
    return prefix + body


OPENAI = fake("sk-", "proj-" + RANDOM + "_" + RANDOM[::-1] + "-" + RANDOM)
OPENAI_LEGACY = fake("sk-", (RANDOM * 2)[:48])
ANTHROPIC = fake("sk-ant-", "api03-" + RANDOM * 3 + "-AA")
GOOGLE = fake("AIza", "Sy" + (RANDOM * 2)[:33])
GITHUB = fake("ghp_", (RANDOM * 2)[:36])
GITHUB_APP = fake("ghs_", (RANDOM * 2)[:36])
GITHUB_OAUTH = fake("gho_", (RANDOM * 2)[:36])
GITHUB_PAT = fake("github_pat_", "11ABCDEFG0" + "_" + (RANDOM * 3)[:59])
SLACK_BOT = fake("xoxb-", "123456789012-1234567890123-" + RANDOM[:24])
SLACK_USER = fake("xoxp-", "123456789012-1234567890123-" + RANDOM[:24])
AWS = fake("AKIA", "IOSFODNN7EXAMPLE")
AWS_TEMPORARY = fake("ASIA", "Y34FZKBOKMUTVV7A")
