"""`--replay-http`'s network guard holds for the system's own threads and for sockets opened
before the case (issue 30, "What to build" 3).

The probe's breaks, each of which reached the network with exit 0: a thread started in `run()`
that connects once its case has ended, a background thread started at the import of the system
module that sends now and then, and a socket connected at import and written in `run()`. Each
test records a two-case suite with `--live` (nothing armed), arms the attack and replays it with
`--replay-http`. A tripwire in this process (a TCP listener that reads what it is sent, and a
UDP socket, on loopback) counts what reaches it. The threads wait for a release, given between
the two cases (the project's conftest, at the first case's teardown: no case runs then) or in
the second case's `run()`, so where the connection falls is certain, not timed.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from evalhelpers import Project, assert_not_aborted, error_block, output

from .test_guard import Tripwire as CountingTripwire

SYSTEM = '''\
"""A system whose threads (or a socket it connected at import) try to reach the tripwire."""
import json
import socket
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
STEERING = ROOT / "behaviour.json"
STEER = json.loads(STEERING.read_text()) if STEERING.exists() else {}
ATTACK = STEER.get("attack") if STEER.get("armed") else None
PORTS = json.loads((ROOT / "tripwire.json").read_text())
release = threading.Event()  # set between the cases (conftest) or in the second case's run()
done = threading.Event()


def note(exc):
    with open(ROOT / "refused.log", "a") as log:
        log.write(f"{type(exc).__name__}\\n")


def knock():
    """A connection with bytes on it and a datagram, as a telemetry thread would send them."""
    try:
        with socket.create_connection(("127.0.0.1", PORTS["tcp"]), timeout=5) as sock:
            sock.sendall(b"leak")
    except BaseException as exc:  # swallowed: the guard must fail the run all the same
        note(exc)
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as datagram:
            datagram.sendto(b"leak", ("127.0.0.1", PORTS["udp"]))
    except BaseException as exc:
        note(exc)


def knock_when_released():
    release.wait(30)
    try:
        knock()
    finally:
        done.set()


def knock_after_the_run():
    """Waits past the run's end (a file the test writes once pytest returned)."""
    for _ in range(3000):
        if (ROOT / "release").exists():
            break
        time.sleep(0.01)
    try:
        knock()
    finally:
        (ROOT / "done").write_text("")


if ATTACK == "import_thread":
    threading.Thread(target=knock_when_released, name="telemetry", daemon=True).start()
if ATTACK == "import_socket":  # connected now, before any guard: written in run()
    early_tcp = socket.create_connection(("127.0.0.1", PORTS["tcp"]), timeout=5)
    early_udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    early_udp.connect(("127.0.0.1", PORTS["udp"]))


def run(case):
    if ATTACK == "run_thread" and case["id"] == "first":
        threading.Thread(target=knock_when_released, daemon=True).start()
    if ATTACK == "after_run" and case["id"] == "second":
        threading.Thread(target=knock_after_the_run, daemon=True).start()
    if ATTACK == "import_socket" and case["id"] == "first":
        for write in (
            lambda: early_tcp.send(b"leak"),
            lambda: early_tcp.sendall(b"leak"),
            lambda: early_udp.send(b"leak"),
            lambda: early_udp.sendmsg([b"leak"]),
        ):
            try:
                write()
            except BaseException as exc:
                note(exc)
    if STEER.get("release") == "in_run" and case["id"] == "second":
        release.set()
        done.wait(30)
    return {"answer": "done", "tool_calls": [], "retrieved": [], "context": []}
'''

CONFTEST = """\
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent


def pytest_runtest_teardown(item):
    steer = ROOT / "behaviour.json"
    if not steer.exists() or json.loads(steer.read_text()).get("release") != "between_cases":
        return
    system = sys.modules.get("threads_system")
    if system is not None and item.nodeid.endswith("::first"):
        system.release.set()  # no case runs now: the first has ended, the second not begun
        system.done.wait(30)
"""


class Tripwire(CountingTripwire):
    """test_guard's tripwire that also reads what a connection sends, and can wait until what
    reached it is counted."""

    def __init__(self) -> None:
        self.bytes_received = 0
        self._accepted: list[socket.socket] = []
        self._sentinels: set[tuple[str, int]] = set()  # settle()'s own, not counted
        self._seen = threading.Condition()
        super().__init__()

    def _accept(self) -> None:
        while True:
            try:
                connection, peer = self._tcp.accept()
            except OSError:
                return
            if self._saw_sentinel(peer):
                connection.close()
                continue
            self.connections += 1
            self._accepted.append(connection)
            threading.Thread(target=self._read, args=(connection,), daemon=True).start()

    def _read(self, connection: socket.socket) -> None:
        while True:
            try:
                data = connection.recv(64)
            except OSError:
                return
            if not data:
                return
            self.bytes_received += len(data)

    def _receive(self) -> None:
        while True:
            try:
                _, peer = self._udp.recvfrom(64)
            except OSError:
                return
            if not self._saw_sentinel(peer):
                self.datagrams += 1

    def _saw_sentinel(self, peer: tuple[str, int]) -> bool:
        with self._seen:
            if peer not in self._sentinels:
                return False
            self._sentinels.discard(peer)
            self._seen.notify_all()
            return True

    def settle(self) -> None:
        """Wait until what reached the tripwire so far is counted: a connection and a datagram
        of its own, sent now, arrive after them (the accept queue and a socket's datagrams keep
        their order)."""
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        for sock in (tcp, udp):
            sock.bind(("127.0.0.1", 0))  # its address known before it is sent
        with self._seen:
            self._sentinels |= {tcp.getsockname()[:2], udp.getsockname()[:2]}
        tcp.connect(("127.0.0.1", self.ports["tcp"]))
        udp.sendto(b"", ("127.0.0.1", self.ports["udp"]))
        with self._seen:
            assert self._seen.wait_for(lambda: not self._sentinels, 30), "the tripwire is stuck"
        tcp.close()
        udp.close()

    def close(self) -> None:
        for connection in self._accepted:
            connection.close()
        super().close()


@pytest.fixture
def tripwire() -> Iterator[Tripwire]:
    wire = Tripwire()
    yield wire
    wire.close()


def replay_armed(
    project: Project, tripwire: Tripwire, *args: str, **steer: object
) -> tuple[pytest.RunResult, str]:
    """Record the two-case suite with --live (unarmed), replay it armed with --replay-http
    (and `args`); the run and its output."""
    project.write_text("threads_system.py", SYSTEM)
    project.write_text("conftest.py", CONFTEST)
    project.write_text("tripwire.json", json.dumps(tripwire.ports))
    suite = steer.pop("suite", {})
    assert isinstance(suite, dict)
    project.write_suite(
        {
            "name": "guard",
            "system": "threads_system:run",
            "stages": ["exact_match"],
            "cases": [
                {"id": "first", "input": "one", "reference": "done"},
                {"id": "second", "input": "two", "reference": "done"},
            ],
            **suite,
        }
    )
    recorded = project.run("--live", "-p", "no:cacheprovider")
    assert_not_aborted(recorded)
    recorded.assert_outcomes(passed=2)

    project.steer(armed=True, **steer)
    replayed = project.run("--replay-http", "-p", "no:cacheprovider", *args)
    assert_not_aborted(replayed)
    tripwire.settle()
    return replayed, output(replayed)


def refused_in_thread(project: Project) -> list[str]:
    return (project.root / "refused.log").read_text().split()


ALLOW_HOSTS_HINT = (
    'a replay must not reach the network: list the host in the suite\'s "allow_hosts" if it may '
    "be reached offline"
)


@pytest.mark.parametrize(
    ("attack", "started_during"),
    [
        ("run_thread", "guard::first"),
        ("import_thread", "the import of the system 'threads_system:run'"),
    ],
)
def test_a_thread_of_the_system_is_refused_between_cases_and_the_run_fails(
    project: Project, tripwire: Tripwire, attack: str, started_during: str
) -> None:
    """Break: "a thread started in run() that connects a second later" and "a background
    thread started at import that sends every 0.3 s" reached the network, exit 0: once the case
    had returned no case was running, and a thread's connection then belonged to nobody."""
    replayed, text = replay_armed(project, tripwire, attack=attack, release="between_cases")

    assert (tripwire.connections, tripwire.bytes_received, tripwire.datagrams) == (0, 0, 0)
    assert refused_in_thread(project) == ["UnservedRequest", "UnservedRequest"]
    replayed.assert_outcomes(passed=2)  # both cases ran clean: the run fails, not a case
    assert replayed.ret == pytest.ExitCode.TESTS_FAILED
    assert "network guard: refused outside any case" in text
    thread = f"from a thread the system started during {started_during} (no case was running)"
    tcp, udp = tripwire.ports["tcp"], tripwire.ports["udp"]
    assert (
        f"network guard: the system opened a connection to 127.0.0.1:{tcp}, which the HTTP "
        f"recording cannot serve (a client vcrpy does not patch, or a raw socket), {thread}; "
        f"{ALLOW_HOSTS_HINT}"
    ) in text
    assert f"--replay-http blocked UDP sendto 127.0.0.1:{udp}, {thread}; {ALLOW_HOSTS_HINT}" in text


@pytest.mark.parametrize(
    ("attack", "started_during"),
    [
        ("run_thread", "guard::first"),
        ("import_thread", "the import of the system 'threads_system:run'"),
    ],
)
def test_a_thread_of_the_system_fails_the_case_that_runs_when_it_connects(
    project: Project, tripwire: Tripwire, attack: str, started_during: str
) -> None:
    """Not a break (the case that ran was failed before too), now said of the thread: a
    connection while a case replays is that case's, whichever thread makes it."""
    replayed, _ = replay_armed(project, tripwire, attack=attack, release="in_run")

    assert (tripwire.connections, tripwire.bytes_received, tripwire.datagrams) == (0, 0, 0)
    replayed.assert_outcomes(passed=1, errors=1)
    block = error_block(replayed, "guard::second")
    assert (
        f"network guard: the system opened a connection to 127.0.0.1:{tripwire.ports['tcp']}, "
        "which the HTTP recording cannot serve (a client vcrpy does not patch, or a raw socket), "
        f"from a thread the system started during {started_during}; "
    ) in block
    assert '"allow_hosts"' in block


def test_a_socket_connected_at_import_cannot_be_written_in_run(
    project: Project, tripwire: Tripwire
) -> None:
    """Break: "a socket connected at import and written in run()" reached the network, exit 0:
    a send on a connected socket raises no audit event. The connection itself, made at import
    (collection, before any case), is out of the guard's reach and documented so."""
    replayed, _ = replay_armed(project, tripwire, attack="import_socket")

    assert tripwire.connections == 1  # at import, before the replay began
    assert (tripwire.bytes_received, tripwire.datagrams) == (0, 0)
    # TCP send and sendall, UDP send and sendmsg: each refused
    assert refused_in_thread(project) == ["UnservedRequest"] * 4
    replayed.assert_outcomes(passed=1, errors=1)
    block = error_block(replayed, "guard::first")
    assert (
        f"stale recording: --replay-http blocked a send to 127.0.0.1:{tripwire.ports['tcp']} on "
        f"a socket connected before the case; {ALLOW_HOSTS_HINT}"
    ) in block


@pytest.mark.parametrize(
    ("attack", "reached"),
    [("import_socket", (1, 8, 2)), ("run_thread", (1, 4, 1)), ("import_thread", (1, 4, 1))],
)
def test_an_allowed_host_keeps_its_socket_and_its_threads(
    project: Project, tripwire: Tripwire, attack: str, reached: tuple[int, int, int]
) -> None:
    """What must keep working: a host the suite allows is reached from a socket connected at
    import (send, sendall, a connected UDP send) and from the system's threads between cases."""
    replayed, text = replay_armed(
        project,
        tripwire,
        attack=attack,
        release=None if attack == "import_socket" else "between_cases",  # no thread to wait for
        suite={"allow_hosts": ["127.0.0.1"]},
    )

    replayed.assert_outcomes(passed=2)
    assert replayed.ret == pytest.ExitCode.OK, text
    assert not (project.root / "refused.log").exists()
    deadline = time.monotonic() + 30  # the reader thread counts a connection's bytes on its own
    while tripwire.bytes_received < reached[1] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert (tripwire.connections, tripwire.bytes_received, tripwire.datagrams) == reached


def test_under_xdist_a_workers_refusal_fails_the_run(project: Project, tripwire: Tripwire) -> None:
    """The between-cases break under `-n 2`: the worker whose thread was refused hands the
    refusal to the controller, whose run fails and prints it (the workers' channels and their
    replay keep working)."""
    replayed, text = replay_armed(
        project, tripwire, "-n", "2", attack="run_thread", release="between_cases"
    )

    assert (tripwire.connections, tripwire.bytes_received, tripwire.datagrams) == (0, 0, 0)
    replayed.assert_outcomes(passed=2)
    assert replayed.ret == pytest.ExitCode.TESTS_FAILED
    assert "network guard: refused outside any case" in text
    assert (
        f"opened a connection to 127.0.0.1:{tripwire.ports['tcp']}, which the HTTP recording "
        "cannot serve (a client vcrpy does not patch, or a raw socket), from a thread the system "
        "started during guard::first (no case was running)"
    ) in text


def test_a_thread_that_outlives_the_run_stays_refused(project: Project, tripwire: Tripwire) -> None:
    """The break's other form: the thread connects once pytest has returned (a non-daemon
    thread keeps the interpreter alive until it ends), when the guard has come down. It stays
    refused until another run begins; there is no run left to fail, so its own traceback says
    it."""
    replayed, _ = replay_armed(project, tripwire, attack="after_run")
    replayed.assert_outcomes(passed=2)  # nothing was tried while it ran

    (project.root / "release").write_text("")
    for _ in range(3000):  # the thread polls for the release, then writes "done"
        if (project.root / "done").exists():
            break
        time.sleep(0.01)
    assert (project.root / "done").exists(), "the system's thread never finished"
    tripwire.settle()
    assert (tripwire.connections, tripwire.bytes_received, tripwire.datagrams) == (0, 0, 0)
    assert refused_in_thread(project) == ["UnservedRequest", "UnservedRequest"]
