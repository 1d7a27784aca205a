"""`--replay-http`'s network guard has no way round (issue 21, "What to build" 6).

Each test records a one-case suite with `--live` (the system attacks nothing then), arms the
attack and replays it with `--replay-http`. A tripwire in this process (a TCP listener and a UDP
socket on loopback) counts every connection and datagram that reaches it: the attack must not
reach it, and the case must error with the guard's named message.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator

import pytest
from evalhelpers import Project, assert_not_aborted, error_block

ATTACKS = '''\
"""A system that, once armed, tries to reach the tripwire one way or another."""
import asyncio
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
CHILD_FETCH = (
    "import sys, urllib.request\\n"
    "try:\\n"
    "    urllib.request.urlopen(sys.argv[1], timeout=5)\\n"
    "except Exception as exc:\\n"
    "    print(type(exc).__name__, exc)\\n"
    "    sys.exit(3)\\n"
)


def child_fetch(url):  # a multiprocessing child's target
    import urllib.request
    urllib.request.urlopen(url, timeout=5)


def http_client(tcp, udp):
    import http.client
    connection = http.client.HTTPConnection("127.0.0.1", tcp, timeout=5)
    connection.request("GET", "/")
    connection.getresponse()


def urllib_open(tcp, udp):
    import urllib.request
    urllib.request.urlopen(f"http://127.0.0.1:{tcp}/", timeout=5)


def httpx_get(tcp, udp):
    import httpx
    httpx.get(f"http://127.0.0.1:{tcp}/", timeout=5)


def raw_connect(tcp, udp):
    socket.create_connection(("127.0.0.1", tcp), timeout=5).close()


def low_level_connect(tcp, udp):
    import _socket
    raw = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    raw.settimeout(5)
    raw.connect(("127.0.0.1", tcp))
    raw.close()


def low_level_connect_ex(tcp, udp):
    import _socket
    raw = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    raw.settimeout(5)
    raw.connect_ex(("127.0.0.1", tcp))
    raw.close()


def udp_sendto(tcp, udp):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as datagram:
        datagram.sendto(b"leak", ("127.0.0.1", udp))


def udp_sendmsg(tcp, udp):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as datagram:
        datagram.sendmsg([b"leak"], [], 0, ("127.0.0.1", udp))


def name_lookup(tcp, udp):
    socket.create_connection(("localhost", tcp), timeout=5).close()


def asyncio_connection(tcp, udp):
    async def knock():
        reader, writer = await asyncio.open_connection("127.0.0.1", tcp)
        writer.close()

    asyncio.run(knock())


def subprocess_child(tcp, udp):
    child = subprocess.run([sys.executable, "-c", CHILD_FETCH, f"http://127.0.0.1:{tcp}/"],
                           capture_output=True, text=True, timeout=60)
    (ROOT / "child.log").write_text(f"{child.returncode}\\n{child.stdout}{child.stderr}")


def shell_command(tcp, udp):
    script = ROOT / "fetch.py"
    script.write_text(CHILD_FETCH)
    os.system(f"{sys.executable} {script} http://127.0.0.1:{tcp}/")


def posix_spawn_child(tcp, udp):
    pid = os.posix_spawn(sys.executable, [sys.executable, "-c", CHILD_FETCH,
                                          f"http://127.0.0.1:{tcp}/"], os.environ)
    os.waitpid(pid, 0)


def multiprocessing_child(tcp, udp):
    import multiprocessing
    child = multiprocessing.get_context("spawn").Process(
        target=child_fetch, args=(f"http://127.0.0.1:{tcp}/",))
    child.start()
    child.join(60)


def run(case):
    steer = ROOT / "behaviour.json"
    if steer.exists() and json.loads(steer.read_text()).get("armed"):
        ports = json.loads((ROOT / "tripwire.json").read_text())
        try:
            globals()[case["input"]](ports["tcp"], ports["udp"])
        except BaseException as exc:  # swallowed: the guard must fail the case all the same
            (ROOT / "swallowed.log").write_text(repr(exc))
    return {"answer": "done", "tool_calls": [], "retrieved": [], "context": []}
'''


class Tripwire:
    """A TCP listener and a UDP socket on loopback that count what reaches them."""

    def __init__(self) -> None:
        self.connections = 0
        self.datagrams = 0
        self._tcp = socket.create_server(("127.0.0.1", 0))
        self._udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._udp.bind(("127.0.0.1", 0))
        self._threads = [
            threading.Thread(target=self._accept, daemon=True),
            threading.Thread(target=self._receive, daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    @property
    def ports(self) -> dict[str, int]:
        return {"tcp": self._tcp.getsockname()[1], "udp": self._udp.getsockname()[1]}

    @property
    def reached(self) -> int:
        return self.connections + self.datagrams

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._tcp.accept()
            except OSError:
                return
            self.connections += 1
            connection.close()

    def _receive(self) -> None:
        while True:
            try:
                self._udp.recv(64)
            except OSError:
                return
            self.datagrams += 1

    def close(self) -> None:
        # shutdown wakes the threads blocked in accept/recv (close alone may not on Linux)
        for sock in (self._tcp, self._udp):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        for thread in self._threads:
            thread.join(5)


@pytest.fixture
def tripwire() -> Iterator[Tripwire]:
    wire = Tripwire()
    yield wire
    wire.close()


@pytest.fixture(autouse=True)
def _no_proxy_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


def replay_attack(project: Project, tripwire: Tripwire, attack: str, **suite: object) -> str:
    """Record a one-case suite whose system runs `attack` once armed, replay it armed with
    --replay-http, and return the case's error block."""
    project.write_text("attacks.py", ATTACKS)
    project.write_text("tripwire.json", json.dumps(tripwire.ports))
    doc = {
        "name": "guard",
        "system": "attacks:run",
        "stages": ["exact_match"],
        "cases": [{"id": "attack", "input": attack, "reference": "done"}],
        **suite,
    }
    project.write_suite(doc)
    recorded = project.run("--live", "-p", "no:cacheprovider")
    assert_not_aborted(recorded)
    recorded.assert_outcomes(passed=1)
    assert (project.root / "cassettes" / "guard" / "attack.http.json").exists()

    project.steer(armed=True)
    replayed = project.run("--replay-http", "-p", "no:cacheprovider")
    assert_not_aborted(replayed)
    replayed.assert_outcomes(errors=1)
    return error_block(replayed, "guard::attack")


BLOCKED_SUBPROCESS = "stale recording: --replay-http blocked a subprocess: "
ALLOW_SUBPROCESS_HINT = (
    'a replay must not reach the network: set "allow_subprocess": true in the suite if the child '
    "does not use the network"
)


@pytest.mark.parametrize(
    ("attack", "expected"),
    [
        ("low_level_connect", "network guard: the system opened a connection to 127.0.0.1:{tcp}"),
        (
            "low_level_connect_ex",
            "network guard: the system opened a connection to 127.0.0.1:{tcp}",
        ),
        ("udp_sendto", "stale recording: --replay-http blocked UDP sendto 127.0.0.1:{udp}"),
        ("udp_sendmsg", "stale recording: --replay-http blocked UDP sendmsg 127.0.0.1:{udp}"),
        ("subprocess_child", BLOCKED_SUBPROCESS + "['"),
        ("shell_command", BLOCKED_SUBPROCESS + "'"),
        ("posix_spawn_child", BLOCKED_SUBPROCESS + "['"),
        ("multiprocessing_child", BLOCKED_SUBPROCESS + "['"),
    ],
)
def test_a_path_round_the_guard_is_blocked_and_named(
    project: Project, tripwire: Tripwire, attack: str, expected: str
) -> None:
    """Break: "Escapes from the network guard under --replay-http: a subprocess child,
    `_socket.socket()` and UDP `sendto` got out" (and their siblings: connect_ex on the C-level
    socket, UDP sendmsg, os.system, os.posix_spawn, a multiprocessing child)."""
    block = replay_attack(project, tripwire, attack)

    assert tripwire.reached == 0, f"{attack} reached the tripwire"
    assert expected.format(**tripwire.ports) in block
    if expected.startswith(BLOCKED_SUBPROCESS):
        assert ALLOW_SUBPROCESS_HINT in block
    else:
        assert '"allow_hosts"' in block


@pytest.mark.parametrize(
    ("attack", "expected"),
    [
        ("http_client", "the system sent a request that is not recorded: GET 127.0.0.1:{tcp}/"),
        ("urllib_open", "the system sent a request that is not recorded: GET 127.0.0.1:{tcp}/"),
        ("httpx_get", "the system sent a request that is not recorded: GET 127.0.0.1:{tcp}/"),
        ("raw_connect", "network guard: the system opened a connection to 127.0.0.1:{tcp}"),
        ("name_lookup", "network guard: the system opened a connection to localhost:{tcp}"),
        ("asyncio_connection", "network guard: the system opened a connection to 127.0.0.1:{tcp}"),
    ],
)
def test_a_path_the_guard_held_before_still_holds(
    project: Project, tripwire: Tripwire, attack: str, expected: str
) -> None:
    """Not a break: the eight of eleven hostile paths the probe found held (HTTP clients vcrpy
    serves, a raw `socket.socket` connect, a name lookup, asyncio), kept holding now that the
    guard listens to audit events instead of patching `socket.socket`."""
    block = replay_attack(project, tripwire, attack)

    assert tripwire.reached == 0, f"{attack} reached the tripwire"
    assert expected.format(**tripwire.ports) in block


def test_an_allowed_subprocess_gets_no_way_to_the_network_through_a_proxy(
    project: Project, tripwire: Tripwire
) -> None:
    """Break: "a subprocess child ... got out": with `"allow_subprocess": true` the child runs,
    but its HTTP clients are sent to a proxy nobody listens on (`HTTP_PROXY` & co. at a closed
    loopback port, `NO_PROXY` empty), so its request never reaches the server."""
    project.write_text("attacks.py", ATTACKS)
    project.write_text("tripwire.json", json.dumps(tripwire.ports))
    doc = {
        "name": "guard",
        "system": "attacks:run",
        "stages": ["exact_match"],
        "allow_subprocess": True,
        "cases": [{"id": "attack", "input": "subprocess_child", "reference": "done"}],
    }
    project.write_suite(doc)
    project.run("--live", "-p", "no:cacheprovider").assert_outcomes(passed=1)

    project.steer(armed=True)
    replayed = project.run("--replay-http", "-p", "no:cacheprovider")

    replayed.assert_outcomes(passed=1)  # allowed: the child ran
    returncode, report = (project.root / "child.log").read_text().split("\n", 1)
    assert tripwire.reached == 0
    assert returncode == "3", report  # its request failed at the proxy
    assert "Connection refused" in report
