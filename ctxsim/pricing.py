"""Prices from genai-prices, each request priced on its own at its own timestamp.

Pricing a request alone matters: tiered prices (Sonnet's rate above 200k
prompt tokens, Gemini's long-context tier) depend on that request's prompt.
Where the price data has no 1-hour cache-write price, 1-hour writes are priced
at the documented 2x base input and the run says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from decimal import Decimal
from importlib.metadata import version
from typing import Any

from genai_prices import Usage, data_snapshot
from genai_prices.types import TieredPrices

from ctxsim.errors import CtxsimError

ONE_HOUR_WRITE_MULTIPLIER = Decimal(2)  # Anthropic: 1-hour writes are 2x base input
MTOK = Decimal(1_000_000)


def price_data_version() -> str:
    return f"genai-prices {version('genai-prices')}"


@dataclass(frozen=True, slots=True)
class Bill:
    """Tokens of one request as the provider bills them (inclusive input)."""

    input_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0
    output_tokens: int = 0


def _rate(price: Decimal | TieredPrices | None, prompt_tokens: int) -> Decimal | None:
    if price is None or isinstance(price, Decimal):
        return price
    rate = price.base
    for tier in reversed(price.tiers):
        if prompt_tokens > tier.start:
            return tier.price
    return rate


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
                f"({exc}); pass --model with a priced model id"
            ) from None
        self.model_id = self._model.id
        self.provider_id = self._provider.id
        self._prices_memo: dict[str, Any] = {}

    @property
    def context_window(self) -> int | None:
        return self._model.context_window

    def _prices(self, ts_s: float | None) -> Any:
        moment = datetime.fromtimestamp(ts_s, tz=timezone.utc) if ts_s is not None else None
        key = moment.strftime("%Y-%m-%dT%H") if moment else "now"
        prices = self._prices_memo.get(key)
        if prices is None:
            prices = self._model.get_prices(moment or datetime.now(tz=timezone.utc))
            self._prices_memo[key] = prices
        return prices

    def cost(self, bill: Bill, ts_s: float | None) -> Decimal:
        prices = self._prices(ts_s)
        writes = bill.cache_write_tokens + bill.cache_write_1h_tokens
        extra = Decimal(0)
        kwargs: dict[str, int] = {
            "input_tokens": bill.input_tokens,
            "cache_read_tokens": bill.cache_read_tokens,
            "cache_write_tokens": writes,
            "output_tokens": bill.output_tokens,
        }
        if bill.cache_write_1h_tokens:
            if prices.cache_write_1h_mtok is not None:
                kwargs["cache_write_1h_tokens"] = bill.cache_write_1h_tokens
            else:
                base = _rate(prices.input_mtok, bill.input_tokens) or Decimal(0)
                five = _rate(prices.cache_write_mtok, bill.input_tokens) or base
                extra = (ONE_HOUR_WRITE_MULTIPLIER * base - five) * bill.cache_write_1h_tokens / MTOK
                note = (f"1-hour cache writes for {self.model_id} priced at {ONE_HOUR_WRITE_MULTIPLIER}x base "
                        "input (documented multiplier; no 1-hour price in the price data)")
                if note not in self.notes:
                    self.notes.append(note)
        if prices.cache_write_mtok is None and writes:
            # No write price for this model (e.g. OpenAI before GPT-5.6): writes cost as fresh input.
            kwargs["cache_write_tokens"] = 0
        if prices.cache_read_mtok is None and bill.cache_read_tokens:
            kwargs["cache_read_tokens"] = 0
        return prices.calc_price(Usage(**kwargs))["total_price"] + extra
