"""The network guard's pure pieces: the environment an allowed child starts with."""

from __future__ import annotations

from pytest_evalcases.http.guard import DENYING_PROXY, proxy_denying


def test_every_proxy_variable_points_at_the_closed_port_and_nothing_bypasses_it() -> None:
    env = {"PATH": "/bin", "https_proxy": "http://corp:3128", "NO_PROXY": "*"}

    denied = proxy_denying(env)

    assert denied["PATH"] == "/bin"
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        assert denied[name] == DENYING_PROXY
    assert denied["NO_PROXY"] == denied["no_proxy"] == ""
    assert env["NO_PROXY"] == "*"  # the caller's mapping is left as it was


def test_an_environment_of_bytes_gets_bytes() -> None:
    denied = proxy_denying({b"PATH": b"/bin"})

    assert denied[b"HTTP_PROXY"] == DENYING_PROXY.encode()
    assert all(isinstance(name, bytes) for name in denied)
