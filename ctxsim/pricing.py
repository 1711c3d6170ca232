"""Prices from genai-prices, each request priced on its own at its own timestamp.

Pricing a request alone matters: tiered prices (Sonnet's rate above 200k
prompt tokens, Gemini's long-context tier) depend on that request's prompt.
Where the price data has no 1-hour cache-write price, 1-hour writes are priced
at the documented 2x base input and the run says so.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from functools import cache
from importlib.metadata import version
from typing import Any, NamedTuple

from genai_prices import Usage, data_snapshot
from genai_prices.types import TieredPrices

from ctxsim.errors import CtxsimError

ONE_HOUR_WRITE_MULTIPLIER = Decimal(2)  # Anthropic: 1-hour writes are 2x base input
MTOK = Decimal(1_000_000)


@cache  # read from the installed package's metadata: the same for the life of the process
def price_data_version() -> str:
    return f"genai-prices {version('genai-prices')}"


@cache
def price_data_latest_change() -> str | None:
    """The newest dated price change in the bundled price data (ISO date): how recent the data is.

    genai-prices does not stamp its snapshot with a date; its dated changes are the best measure.
    """
    latest = None
    for provider in data_snapshot.get_snapshot().providers:
        for model in provider.models:
            if not isinstance(model.prices, list):
                continue
            for conditional in model.prices:
                start = getattr(conditional.constraint, "start_date", None)
                if start is None:
                    continue
                day = start.date() if isinstance(start, datetime) else start
                latest = day if latest is None or day > latest else latest
    return latest.isoformat() if latest else None


class Bill(NamedTuple):
    """Tokens of one request as the provider bills them (inclusive input); a tuple, made twice per request."""

    input_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0
    output_tokens: int = 0


_KEYS = ("input_mtok", "cache_read_mtok", "cache_write_mtok", "cache_write_1h_mtok", "output_mtok")


def _rate(price: Decimal | TieredPrices | None, prompt_tokens: int) -> Decimal | None:
    if price is None or isinstance(price, Decimal):
        return price
    rate = price.base
    for tier in reversed(price.tiers):
        if prompt_tokens > tier.start:
            return tier.price
    return rate


def _suggestion(provider: str, model: str) -> str:
    """A "did you mean" for a mistyped provider, else for a mistyped model of a known provider."""
    from ctxsim.errors import did_you_mean

    providers = {p.id: p for p in data_snapshot.get_snapshot().providers}
    if provider not in providers:
        return did_you_mean(provider, providers)
    return did_you_mean(model, [m.id for m in providers[provider].models])


@dataclass
class Pricer:
    """Prices requests for one provider and model."""

    provider: str
    model: str
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        try:
            self._provider, self._model = data_snapshot.get_snapshot().find_provider_model(
                self.model, None, self.provider, None
            )
        except LookupError as exc:
            raise CtxsimError(
                f"no price for model {self.model!r} at provider {self.provider!r} in {price_data_version()} "
                f"({exc}){_suggestion(self.provider, self.model)}; pass --model with a priced model id"
            ) from None
        self.model_id = self._model.id
        self.provider_id = self._provider.id
        self._prices_memo: dict[int | None, Any] = {}
        self._cards: dict[int, tuple[Any, list[int], dict[int, tuple]]] = {}

    @property
    def context_window(self) -> int | None:
        return self._model.context_window

    def _prices(self, ts_s: float | None) -> Any:
        key = int(ts_s // 3600) if ts_s is not None else None  # price changes land on the hour
        prices = self._prices_memo.get(key)
        if prices is None:
            moment = datetime.fromtimestamp(ts_s, tz=UTC) if ts_s is not None else None
            prices = self._model.get_prices(moment or datetime.now(tz=UTC))
            self._prices_memo[key] = prices
        return prices

    def costs(self, real: Bill, warm: Bill, ts_s: float | None) -> tuple[Decimal, Decimal, Decimal]:
        """One request three ways: as metered, with a warm cache, and with no cache at all."""
        card = self._card(self._prices(ts_s), real.input_tokens)
        plain = (real.input_tokens * card[0] + real.output_tokens * card[4]) / MTOK
        first = self._bill_cost(real, card)
        return first, (first if warm == real else self._bill_cost(warm, card)), plain

    def cost(self, bill: Bill, ts_s: float | None) -> Decimal:
        """Price one request: genai-prices' rates for this model at `ts_s`, tier chosen by this prompt.

        Equal to genai-prices' own `calc_price` for these usage keys (a test checks it); read off
        the price data directly because calc_price costs about 0.3 ms a call.
        """
        return self._bill_cost(bill, self._card(self._prices(ts_s), bill.input_tokens))

    def _bill_cost(self, bill: Bill, card: tuple) -> Decimal:
        base, read_rate, write_rate, hour_rate, out_rate = card
        uncached = bill.input_tokens
        total: Decimal = Decimal(0)
        if bill.cache_read_tokens and read_rate is not None:
            total += bill.cache_read_tokens * read_rate
            uncached -= bill.cache_read_tokens
        if bill.cache_write_tokens and write_rate is not None:
            total += bill.cache_write_tokens * write_rate
            uncached -= bill.cache_write_tokens
        if bill.cache_write_1h_tokens:
            if hour_rate is None:
                hour_rate = ONE_HOUR_WRITE_MULTIPLIER * base
                self._note_derived_1h()
            total += bill.cache_write_1h_tokens * hour_rate
            uncached -= bill.cache_write_1h_tokens
        total += uncached * base + bill.output_tokens * out_rate
        return total / MTOK

    def _card(self, prices: Any, prompt: int) -> tuple[Decimal, Decimal | None, Decimal | None, Decimal | None,
                                                        Decimal]:
        """The five per-MTok rates that apply to a prompt of this size (memoised per tier)."""
        cards = self._cards.get(id(prices))
        if cards is None:
            starts = sorted({t.start for key in _KEYS if isinstance(getattr(prices, key), TieredPrices)
                             for t in getattr(prices, key).tiers})
            cards = self._cards[id(prices)] = (prices, starts, {})
        _, starts, memo = cards
        tier = bisect_left(starts, prompt) if starts else 0  # tiers whose start the prompt exceeds
        card = memo.get(tier)
        if card is None:
            probe = starts[tier - 1] + 1 if tier else 0
            rates = [_rate(getattr(prices, key), probe) for key in _KEYS]
            card = memo[tier] = (rates[0] or Decimal(0), rates[1], rates[2], rates[3], rates[4] or Decimal(0))
        return card

    def _note_derived_1h(self) -> None:
        note = (f"1-hour cache writes for {self.model_id} priced at {ONE_HOUR_WRITE_MULTIPLIER}x base input "
                "(documented multiplier; the price data has no 1-hour price)")
        if note not in self.notes:
            self.notes.append(note)

    def reference_cost(self, bill: Bill, ts_s: float | None) -> Decimal:
        """The same price through genai-prices' calc_price (slow; used to check `cost`)."""
        prices = self._prices(ts_s)
        kwargs: dict[str, int] = {
            "input_tokens": bill.input_tokens,
            "cache_read_tokens": bill.cache_read_tokens if prices.cache_read_mtok is not None else 0,
            "cache_write_tokens": (bill.cache_write_tokens + bill.cache_write_1h_tokens)
            if prices.cache_write_mtok is not None else 0,
            "output_tokens": bill.output_tokens,
        }
        if bill.cache_write_1h_tokens and prices.cache_write_mtok is not None:
            kwargs["cache_write_1h_tokens"] = bill.cache_write_1h_tokens
        price: Decimal = prices.calc_price(Usage(**kwargs))["total_price"]
        return price
