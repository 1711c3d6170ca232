"""Prices from genai-prices, each request priced on its own at its own timestamp.

Pricing a request alone matters: tiered prices (Sonnet's rate above 200k
prompt tokens, Gemini's long-context tier) depend on that request's prompt.
Where the price data has no 1-hour cache-write price, 1-hour writes are priced
at the documented 2x base input and the run says so.

Importing genai-prices costs about 0.25 s of CPU (pydantic, its HTTP client, 2,300 models),
more than reading a session. So the models a run looks up are kept in a small cache file
(`price_cache_path`), written from genai-prices' own data the first time a model is looked up
(offline, like every run) and read instead of it afterwards: each (provider, model) lookup's
answer (the priced model, or the error it gave), and that model's rates (the five per-MTok
rates the meter uses, tiered ones with their tiers) with the constraints they apply under
(a start date, a time of day), as genai-prices' `get_prices` applies them. The file is tied to
the installed genai-prices (its data file's size and time): another version makes a new one.
tests/test_price_cache.py checks every model's cached rates against genai-prices'.
"""

from __future__ import annotations

import contextlib
import json
import os
from bisect import bisect_left
from dataclasses import dataclass, field
from datetime import UTC, datetime, time
from decimal import Decimal
from typing import Any, NamedTuple

from ctxsim.errors import CtxsimError

ONE_HOUR_WRITE_MULTIPLIER = Decimal(2)  # Anthropic: 1-hour writes are 2x base input
MTOK = Decimal(1_000_000)
CACHE_FORMAT = 1  # bump when what the cache holds, or how it is read, changes


def price_data_version() -> str:
    """`genai-prices VERSION`: read from the installed package's metadata once (kept in the price cache)."""
    return _cache().version


def price_data_latest_change() -> str | None:
    """The newest dated price change in the bundled price data (ISO date): how recent the data is.

    genai-prices does not stamp its snapshot with a date; its dated changes are the best measure.
    """
    return _cache().latest_change


def _latest_change() -> str | None:
    from genai_prices import data_snapshot

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


def _tiered(price: Any) -> bool:
    """A tiered price (genai-prices' TieredPrices, or the cache's `_Tiered`): base, tiers by start."""
    return price is not None and not isinstance(price, Decimal)


def _rate(price: Any, prompt_tokens: int) -> Decimal | None:
    if price is None:
        return None
    if isinstance(price, Decimal):
        return price
    rate: Decimal = price.base
    for tier in reversed(price.tiers):
        if prompt_tokens > tier.start:
            tiered: Decimal = tier.price
            return tiered
    return rate


def _suggestion(provider: str, model: str) -> str:
    """A "did you mean" for a mistyped provider, else for a mistyped model of a known provider."""
    from genai_prices import data_snapshot

    from ctxsim.errors import did_you_mean

    providers = {p.id: p for p in data_snapshot.get_snapshot().providers}
    if provider not in providers:
        return did_you_mean(provider, providers)
    return did_you_mean(model, [m.id for m in providers[provider].models])


# ---------------------------------------------------------------- the price cache


class _Tier(NamedTuple):
    start: int
    price: Decimal


class _Tiered:
    """A tiered rate as genai-prices' TieredPrices reads: `base`, then `tiers` ascending by start."""

    __slots__ = ("base", "tiers")

    def __init__(self, base: Decimal, tiers: list[_Tier]) -> None:
        self.base, self.tiers = base, tiers


class _Rates:
    """The five rates of one of a model's prices (genai-prices' ModelPrice, as the meter reads it)."""

    __slots__ = _KEYS

    def __init__(self, values: dict[str, Any]) -> None:
        for key in _KEYS:
            setattr(self, key, values.get(key))


_Constraint = tuple[str, Any, Any] | None  # ("date", date, None) | ("time", start µs UTC, end µs UTC) | None


class _Model:
    """A priced model from the cache: its id, context window, and prices under their constraints."""

    __slots__ = ("context_window", "id", "prices")

    def __init__(self, model_id: str, context_window: int | None, prices: _Rates | list[tuple[_Constraint, _Rates]]):
        self.id, self.context_window, self.prices = model_id, context_window, prices

    def get_prices(self, moment: datetime) -> _Rates:
        """genai-prices' ModelInfo.get_prices with no price context: the last price whose constraint holds."""
        if isinstance(self.prices, _Rates):
            return self.prices
        standard = self.prices[0][1]
        for constraint, rates in reversed(self.prices):
            if constraint is None or _active(constraint, moment):
                return rates
        return standard


def _micros(t: datetime | time) -> int:
    return ((t.hour * 60 + t.minute) * 60 + t.second) * 1_000_000 + t.microsecond


def _active(constraint: tuple[str, Any, Any], moment: datetime) -> bool:
    """StartDateConstraint.active / TimeOfDateConstraint.active, on UTC dates and times of day."""
    at = moment.astimezone(UTC) if moment.tzinfo is not None else moment
    kind, start, end = constraint
    if kind == "date":
        started: bool = at.date() >= start
        return started
    now = _micros(at)
    first: int = start
    last: int = end
    if last < first:
        return now >= first or now < last
    return first <= now < last


def _encode_price(price: Any) -> Any:
    if price is None:
        return None
    if isinstance(price, Decimal):
        return str(price)
    tiers = getattr(price, "tiers", None)
    if isinstance(getattr(price, "base", None), Decimal) and isinstance(tiers, list) and all(
            isinstance(t.start, int) and isinstance(t.price, Decimal) for t in tiers):
        return {"base": str(price.base), "tiers": [[t.start, str(t.price)] for t in tiers]}
    raise TypeError(type(price).__name__)


def _decode_price(raw: Any) -> Any:
    if raw is None:
        return None
    if isinstance(raw, str):
        return Decimal(raw)
    return _Tiered(Decimal(raw["base"]), [_Tier(start, Decimal(price)) for start, price in raw["tiers"]])


def _encode_constraint(constraint: Any) -> Any:
    from datetime import date

    from genai_prices.types import StartDateConstraint, TimeOfDateConstraint, _utc_timetz

    if constraint is None:
        return None
    if type(constraint) is StartDateConstraint and type(constraint.start_date) is date:
        return ["date", constraint.start_date.isoformat()]
    if type(constraint) is TimeOfDateConstraint:
        return ["time", _micros(_utc_timetz(constraint.start_time)), _micros(_utc_timetz(constraint.end_time))]
    raise TypeError(type(constraint).__name__)


def _decode_constraint(raw: Any) -> _Constraint:
    if raw is None:
        return None
    if raw[0] == "date":
        from datetime import date

        return ("date", date.fromisoformat(raw[1]), None)
    return ("time", raw[1], raw[2])


def _encode_model(model: Any) -> dict[str, Any] | None:
    """What the meter reads of a genai-prices model, as JSON; None when it holds something the cache cannot."""
    def rates(price: Any) -> dict[str, Any]:
        return {key: _encode_price(getattr(price, key)) for key in _KEYS if getattr(price, key) is not None}

    try:
        prices: Any = rates(model.prices) if not isinstance(model.prices, list) else \
            [[_encode_constraint(c.constraint), rates(c.prices)] for c in model.prices]
    except TypeError:
        return None
    window = model.context_window
    if window is not None and type(window) is not int:
        return None
    return {"id": model.id, "context_window": window, "prices": prices}


def _decode_model(raw: dict[str, Any]) -> _Model:
    def rates(values: dict[str, Any]) -> _Rates:
        return _Rates({key: _decode_price(value) for key, value in values.items()})

    prices = raw["prices"]
    return _Model(raw["id"], raw["context_window"],
                  rates(prices) if isinstance(prices, dict) else
                  [(_decode_constraint(c), rates(values)) for c, values in prices])


def _genai_key() -> str | None:
    """Which genai-prices is installed (its price data file's path, size and time), without importing it."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("genai_prices")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    data = os.path.join(os.path.dirname(spec.origin), "data.py")
    try:
        st = os.stat(data)
    except OSError:
        return None
    return f"{CACHE_FORMAT}:{data}:{st.st_size}:{st.st_mtime_ns}"


def price_cache_path(key: str | None) -> str | None:
    """`$CTXSIM_PRICE_CACHE` (a folder; `off`: no cache), else `$XDG_CACHE_HOME/ctxsim/prices` (else
    `~/.cache/...`), one file per installed genai-prices."""
    folder = os.environ.get("CTXSIM_PRICE_CACHE")
    if key is None or (folder or "").lower() == "off":
        return None
    if not folder:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        folder = os.path.join(base, "ctxsim", "prices")
    import zlib

    return os.path.join(folder, f"genai-prices-{zlib.crc32(key.encode()):08x}.json")


class _PriceCache:
    """The lookups and models a run needs, read from the cache file, else from genai-prices (and kept)."""

    def __init__(self) -> None:
        self.key = _genai_key()
        self.path = price_cache_path(self.key)
        self.data: dict[str, Any] = {"key": self.key, "lookups": {}, "models": {}}
        self.models: dict[str, _Model] = {}
        loaded = self._read()
        if loaded is not None:
            self.data = loaded

    def _read(self) -> dict[str, Any] | None:
        if self.path is None:
            return None
        try:
            with open(self.path, encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("key") != self.key or not isinstance(data.get("lookups"), dict) \
                or not isinstance(data.get("models"), dict):
            return None
        return data

    def _save(self) -> None:
        """Merged with what other processes wrote meanwhile; written beside and renamed over, or not at all."""
        if self.path is None:
            return
        on_disk = self._read()
        if on_disk is not None:
            for name in ("lookups", "models"):
                self.data[name] = {**on_disk[name], **self.data[name]}
            for name in ("version", "latest_change"):
                if name not in self.data and name in on_disk:
                    self.data[name] = on_disk[name]
        temporary = f"{self.path}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            with open(temporary, "w", encoding="utf-8") as handle:
                json.dump(self.data, handle, sort_keys=True)
            os.replace(temporary, self.path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temporary)

    @property
    def version(self) -> str:
        if "version" not in self.data:
            from importlib.metadata import version

            self.data["version"] = f"genai-prices {version('genai-prices')}"
            self._save()
        return str(self.data["version"])

    @property
    def latest_change(self) -> str | None:
        if "latest_change" not in self.data:
            self.data["latest_change"] = _latest_change()
            self._save()
        latest: str | None = self.data["latest_change"]
        return latest

    def find(self, provider: str, model: str) -> tuple[str, Any]:
        """(provider id, model) as genai-prices' find_provider_model answers for these names."""
        name = f"{provider}\t{model}"
        hit = self.data["lookups"].get(name)
        if isinstance(hit, dict) and isinstance(hit.get("error"), str):
            raise CtxsimError(hit["error"])
        if isinstance(hit, str) and hit in self.data["models"]:
            found = self.models.get(hit)
            if found is None:
                try:
                    found = self.models[hit] = _decode_model(self.data["models"][hit])
                except (KeyError, IndexError, TypeError, ValueError, ArithmeticError):
                    found = None  # a damaged entry: looked up again below, and written over
            if found is not None:
                return hit.split("\t", 1)[0], found
        from genai_prices import data_snapshot

        try:
            priced, info = data_snapshot.get_snapshot().find_provider_model(model, None, provider, None)
        except LookupError as exc:
            message = (f"no price for model {model!r} at provider {provider!r} in {self.version} "
                       f"({exc}){_suggestion(provider, model)}; pass --model with a priced model id")
            self.data["lookups"][name] = {"error": message}
            self._save()
            raise CtxsimError(message) from None
        raw = _encode_model(info)
        if raw is None:  # something the cache cannot hold: genai-prices' own model, looked up on every run
            return priced.id, info
        key = f"{priced.id}\t{info.id}"
        self.data["models"][key] = raw
        self.data["lookups"][name] = key
        self._save()
        found = self.models[key] = _decode_model(raw)
        return priced.id, found


_the_cache: _PriceCache | None = None


def _cache() -> _PriceCache:
    global _the_cache
    if _the_cache is None:
        _the_cache = _PriceCache()
    return _the_cache


def reset_price_cache() -> None:
    """Read the cache file again at the next lookup (tests that move `$CTXSIM_PRICE_CACHE`)."""
    global _the_cache
    _the_cache = None


@dataclass
class Pricer:
    """Prices requests for one provider and model."""

    provider: str
    model: str
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.provider_id, self._model = _cache().find(self.provider, self.model)
        self.model_id = self._model.id
        self._prices_memo: dict[int | None, Any] = {}
        self._moments: dict[int | None, datetime] = {}
        self._cards: dict[int, tuple[Any, list[int], dict[int, tuple]]] = {}

    @property
    def context_window(self) -> int | None:
        window: int | None = self._model.context_window
        return window

    def _prices(self, ts_s: float | None) -> Any:
        key = int(ts_s // 3600) if ts_s is not None else None  # price changes land on the hour
        prices = self._prices_memo.get(key)
        if prices is None:
            moment = datetime.fromtimestamp(ts_s, tz=UTC) if ts_s is not None else None
            self._moments[key] = moment = moment or datetime.now(tz=UTC)
            prices = self._model.get_prices(moment)
            self._prices_memo[key] = prices
        return prices

    def prices_cache_reads(self, ts_s: float | None) -> bool:
        """Whether the price data has a cache-read price for this model at `ts_s` (None: now)."""
        return getattr(self._prices(ts_s), "cache_read_mtok", None) is not None

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
            starts = sorted({t.start for key in _KEYS if _tiered(getattr(prices, key))
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
        """The same price through genai-prices' calc_price (slow; used to check `cost`): its own model's
        prices at the moment `cost` took them."""
        from genai_prices import Usage, data_snapshot

        self._prices(ts_s)
        _, model = data_snapshot.get_snapshot().find_provider_model(self.model, None, self.provider, None)
        prices = model.get_prices(self._moments[int(ts_s // 3600) if ts_s is not None else None])
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
