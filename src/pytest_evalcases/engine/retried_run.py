"""A case's system run tried again on a transient error (domain/retries.py): each attempt's HTTP
exchanges are gathered apart, and only the attempt that succeeded is recorded (its exchanges,
its trace, its usage); what the failed attempts cost, when their exchanges tell, is still spent
against --eval-budget."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..domain.retries import Attempts, Retry
from ..http.router import CaseHttp
from ..http.usage import exchanges_usage

if TYPE_CHECKING:
    from ..http.router import HttpLayer


@dataclass(frozen=True, slots=True)
class RetriedRun:
    """What the attempt that succeeded returned, its HTTP exchanges (None without an HTTP
    layer), the retries before it and what the failed attempts cost (USD, as far as known)."""

    result: Any
    exchanges: list[dict[str, Any]] | None
    retries: tuple[Retry, ...]
    failed_cost: float


async def retried_run(
    attempts: Attempts,
    run_once: Callable[[], Awaitable[Any]],
    http: HttpLayer | None,
    where: str,
    spend: Callable[[float], None],
) -> RetriedRun:
    """`run_once()` (a fresh run of the system each call) under `attempts`' retries. With
    `http`, each attempt's requests go to a CaseHttp of its own named `where`; `spend` gets each
    failed attempt's cost as soon as it failed."""
    kept: list[list[dict[str, Any]]] = []
    failed_cost = 0.0

    async def attempt() -> Any:
        nonlocal failed_cost
        if http is None:
            return await run_once()
        case_http = CaseHttp(where)
        try:
            with http.case(case_http):
                result = await run_once()
        except BaseException:
            cost = exchanges_usage(case_http.interactions).cost_usd or 0.0
            failed_cost += cost
            if cost:
                spend(cost)
            raise
        kept.append(case_http.interactions)
        return result

    result = await attempts.acall(attempt)
    return RetriedRun(result, kept[-1] if kept else None, tuple(attempts.retries), failed_cost)


def failed_attempt_dropped(case_http: CaseHttp, pay: Callable[[float], None]) -> Callable[[], None]:
    """For an ingestion hook tried again: drop the failed attempt's exchanges from `case_http`
    (only the attempt that succeeded is recorded), `pay` what they cost (--eval-budget)."""

    def drop() -> None:
        pay(exchanges_usage(case_http.interactions).cost_usd or 0.0)
        case_http.interactions.clear()

    return drop
