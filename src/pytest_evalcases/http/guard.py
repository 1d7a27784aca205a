"""The network guard of --replay-http: a connection the recording cannot serve is refused.

vcrpy serves the clients it patches without opening a socket; anything else (a raw socket, a
client vcrpy does not patch, a name lookup) would reach the network. While a replaying case runs,
socket connections and name lookups are refused unless the suite lists the host in
`allow_hosts`; loopback is no exception, since a local server is part of what was recorded.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from typing import Any

from .router import CaseHttp, HttpLayer


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True


class NetworkGuard:
    def __init__(self, layer: HttpLayer) -> None:
        self._layer = layer
        self._originals: dict[str, Any] = {}
        self._resolved: dict[str, set[str]] = {}

    def _replaying_case(self) -> CaseHttp | None:
        case = self._layer.current()
        return case if case is not None and case.replaying else None

    def _allowed(self, case: CaseHttp, host: str, port: Any) -> bool:
        for entry in case.allow_hosts:  # "host" or "host:port" (an IPv6 address has no port)
            name, wanted_port = entry.split(":") if entry.count(":") == 1 else (entry, "")
            if wanted_port and str(port) != wanted_port:
                continue
            if host.lower() == name.lower() or host in self._addresses(name):
                return True
        return False

    def _addresses(self, name: str) -> set[str]:
        """An allowed host's addresses (resolved with the real lookup, once)."""
        if name not in self._resolved:
            lookup = self._originals.get("getaddrinfo", socket.getaddrinfo)
            try:
                self._resolved[name] = {info[4][0] for info in lookup(name, None)}
            except OSError:
                self._resolved[name] = set()
        return self._resolved[name]

    def _check(self, host: str, port: Any) -> None:
        case = self._replaying_case()
        if case is not None and not self._allowed(case, host, port):
            raise case.fail(
                f"network guard: the system opened a connection to {host}:{port}, which the HTTP "
                f"recording cannot serve (a client vcrpy does not patch, or a raw socket); list "
                f'the host in the suite\'s "allow_hosts" if it may be reached offline'
            )

    def install(self) -> None:
        if self._originals:
            return
        connect, connect_ex = socket.socket.connect, socket.socket.connect_ex
        getaddrinfo = socket.getaddrinfo
        self._originals = {"connect": connect, "connect_ex": connect_ex, "getaddrinfo": getaddrinfo}
        check = self._check

        def guarded(method: Callable[..., Any]) -> Callable[..., Any]:
            def wrapper(sock: socket.socket, address: Any, *args: Any) -> Any:
                if sock.family in (socket.AF_INET, socket.AF_INET6) and isinstance(address, tuple):
                    check(str(address[0]), address[1])
                return method(sock, address, *args)

            return wrapper

        def guarded_getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
            if host is not None:
                text = host.decode() if isinstance(host, bytes) else str(host)
                if not _is_ip(text):
                    check(text, port)
            return getaddrinfo(host, port, *args, **kwargs)

        socket.socket.connect = guarded(connect)  # type: ignore[method-assign]
        socket.socket.connect_ex = guarded(connect_ex)  # type: ignore[method-assign]
        socket.getaddrinfo = guarded_getaddrinfo

    def uninstall(self) -> None:
        if not self._originals:
            return
        socket.socket.connect = self._originals["connect"]  # type: ignore[method-assign]
        socket.socket.connect_ex = self._originals["connect_ex"]  # type: ignore[method-assign]
        socket.getaddrinfo = self._originals["getaddrinfo"]
        self._originals = {}
