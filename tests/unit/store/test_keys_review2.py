"""review2: `changed_fields` tells a data file named `ingestion.*` from an ingestion setting by
its label, which a path over LABEL_CHARS does not have."""

from __future__ import annotations

import pytest

from pytest_evalcases.core.hashing import LABEL_CHARS, name_label
from pytest_evalcases.store.keys import changed_fields


@pytest.mark.xfail(
    strict=True,
    reason="review2 #4: a data file `ingestion.<long name>` (no label) is said as Ana's ingestion",
)
def test_a_long_data_file_named_ingestion_is_not_said_as_the_users_ingestion() -> None:
    path = "ingestion." + "x" * LABEL_CHARS + ".md"
    labels = {"user.u-ana": "data/ana/chats.json@1a2b3c"}
    if name_label(path) is not None:  # as suite_key_labels labels an input file
        labels[path] = path
    recorded = {"user.u-ana": "aaaaaa", path: "111111"}
    current = {"user.u-ana": "aaaaaa", path: "222222"}

    assert changed_fields(recorded, current, labels, labels) == [
        f"{path} changed (111111 -> 222222)"
    ]
