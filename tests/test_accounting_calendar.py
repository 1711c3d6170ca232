"""Grouping by day, week or month looks each UTC quarter hour up once: the keys are those of every
request's own local time, in zones with half- and quarter-hour offsets and across DST changes."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from ctxsim.analysis import accounting as acc


def charge(ts_s: float) -> acc.Charge:
    return acc.Charge(ts_s, "s", "p", "claude-code", "m", True, input_tokens=10)


def key_of(ts_s: float, by: str, tz: object) -> str:
    local = datetime.fromtimestamp(ts_s, tz=UTC).astimezone(tz)  # type: ignore[arg-type]
    if by == "day":
        return f"{local:%Y-%m-%d}"
    if by == "month":
        return f"{local:%Y-%m}"
    monday = local.date() - timedelta(days=local.date().weekday())
    return f"{monday:%Y-%m-%d} (W{monday.isocalendar()[1]:02d})"


@pytest.mark.parametrize("zone", ["UTC", "Europe/Paris", "Asia/Kathmandu", "America/St_Johns", "Australia/Eucla",
                                  "Pacific/Chatham"])
@pytest.mark.parametrize("by", ["day", "week", "month"])
def test_each_request_is_grouped_by_its_own_local_time(zone: str, by: str) -> None:
    tz = acc.zone(zone)
    rng = random.Random(31)
    start = datetime(2026, 3, 1, tzinfo=UTC).timestamp()  # spans the March and April DST changes
    stamps = sorted(start + rng.uniform(0, 70 * 86400) for _ in range(3000))
    stamps += [start + n * 900 + d for n in range(0, 70 * 96, 7) for d in (0.0, 899.999)]  # quarter edges
    groups = acc.group([charge(t) for t in stamps], by, tz)
    want: dict[str, int] = {}
    for t in stamps:
        want[key_of(t, by, tz)] = want.get(key_of(t, by, tz), 0) + 1
    assert {k: g.requests for k, g in groups.items()} == want
