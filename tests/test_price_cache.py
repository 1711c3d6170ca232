"""The price cache (ctxsim/pricing/prices.py) answers as genai-prices does: every model's cached rates equal
genai-prices' own at moments on both sides of each of its price changes, a lookup's answer (or error) is
kept, and a run with the cache file present does not import genai-prices at all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from genai_prices import data_snapshot
from genai_prices.types import StartDateConstraint, TimeOfDateConstraint

from ctxsim.errors import CtxsimError
from ctxsim.pricing import prices as pricing
from ctxsim.pricing.prices import _KEYS, Bill, Pricer

MODELS = [(p, m) for p in data_snapshot.get_snapshot().providers for m in p.models]


def _moments(model) -> list[datetime]:
    """Moments around each price change of `model` (a day apart, a second apart), and two fixed ones."""
    out = [datetime(2024, 1, 1, tzinfo=UTC), datetime(2026, 6, 1, 12, 0, tzinfo=UTC)]
    for conditional in model.prices if isinstance(model.prices, list) else ():
        c = conditional.constraint
        if isinstance(c, StartDateConstraint):
            day = datetime.combine(c.start_date, time(), tzinfo=UTC)
            out += [day - timedelta(seconds=1), day, day + timedelta(hours=13)]
        elif isinstance(c, TimeOfDateConstraint):
            for t in (c.start_time, c.end_time):
                at = datetime.combine(date(2026, 3, 4), t, tzinfo=t.tzinfo or UTC).astimezone(UTC)
                out += [at - timedelta(seconds=1), at, at + timedelta(minutes=30)]
    return out


def _value(price):
    """A rate as plain data: a Decimal (its exact digits and exponent), or (base, ((start, price), ...))."""
    if price is None or isinstance(price, Decimal):
        return None if price is None else (str(price),)
    return (str(price.base), tuple((t.start, str(t.price)) for t in price.tiers))


def test_every_models_cached_rates_equal_genai_prices_own():
    checked = skipped = 0
    for _, model in MODELS:
        raw = pricing._encode_model(model)
        if raw is None:
            skipped += 1
            continue
        cached = pricing._decode_model(json.loads(json.dumps(raw)))  # through the file's JSON
        assert (cached.id, cached.context_window) == (model.id, model.context_window)
        for moment in _moments(model):
            theirs, ours = model.get_prices(moment), cached.get_prices(moment)
            for key in _KEYS:
                assert _value(getattr(ours, key)) == _value(getattr(theirs, key)), (model.id, moment, key)
            checked += 1
    assert skipped == 0  # every model of this genai-prices fits the cache
    assert checked > 2 * len(MODELS)  # two fixed moments each, three more around every price change


def test_time_of_day_prices_switch_where_genai_prices_does():
    """DeepSeek's off-peak rates: a time-of-day constraint, checked minute by minute over a day."""
    timed = [m for _, m in MODELS if isinstance(m.prices, list)
             and any(isinstance(c.constraint, TimeOfDateConstraint) for c in m.prices)]
    assert timed, "the price data has no time-of-day prices any more: pick another check"
    for model in timed:
        cached = pricing._decode_model(pricing._encode_model(model))
        day = datetime(2026, 3, 4, tzinfo=UTC)
        switches = 0
        previous = None
        for minute in range(0, 24 * 60, 7):
            moment = day + timedelta(minutes=minute)
            theirs = _value(model.get_prices(moment).input_mtok)
            assert _value(cached.get_prices(moment).input_mtok) == theirs, (model.id, moment)
            switches += previous is not None and theirs != previous
            previous = theirs
        assert switches >= 1


@pytest.fixture
def cache_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CTXSIM_PRICE_CACHE", str(tmp_path / "prices"))
    pricing.reset_price_cache()
    yield tmp_path / "prices"
    pricing.reset_price_cache()


BILLS = [Bill(300_000, 120_000, 30_000, 5_000, 2_000), Bill(1_200, 0, 1_024, 0, 80), Bill(50_000, 49_000, 0, 0, 900)]
T = datetime(2026, 1, 13, 16, 56, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(("provider", "model"), [
    ("anthropic", "claude-sonnet-4-5-20250929"), ("anthropic", "claude-haiku-4-5"),
    ("openai", "gpt-5"), ("google", "gemini-2.5-pro"), ("deepseek", "deepseek-chat")])
def test_a_cached_pricer_prices_as_one_on_genai_prices_own_model(cache_folder: Path, provider: str, model: str):
    Pricer(provider, model)  # looked up in genai-prices, kept in the file
    assert list(cache_folder.iterdir())
    pricing.reset_price_cache()
    cached = Pricer(provider, model)  # read from the file
    assert isinstance(cached._model, pricing._Model)
    direct = Pricer(provider, model)
    _, direct._model = data_snapshot.get_snapshot().find_provider_model(model, None, provider, None)
    assert (cached.model_id, cached.context_window) == (direct._model.id, direct._model.context_window)
    for bill in BILLS:
        for ts in (T, T + 9 * 3600, T - 400 * 86400, None):  # DeepSeek's off-peak hours; an older price
            assert cached.cost(bill, ts) == direct.cost(bill, ts), (bill, ts)
            assert cached.costs(bill, bill._replace(cache_read_tokens=0), ts) == \
                direct.costs(bill, bill._replace(cache_read_tokens=0), ts)
    assert cached.notes == direct.notes
    if provider == "anthropic":  # genai-prices' calc_price takes these usage keys as they are
        for bill in BILLS:
            assert cached.cost(bill, T) == cached.reference_cost(bill, T)


def test_a_failed_lookup_is_kept_with_its_message(cache_folder: Path):
    with pytest.raises(CtxsimError) as first:
        Pricer("anthropic", "claude-sonet-4-5")
    pricing.reset_price_cache()
    with pytest.raises(CtxsimError) as again:
        Pricer("anthropic", "claude-sonet-4-5")
    assert str(again.value) == str(first.value)
    assert "did you mean" in str(first.value) and "genai-prices" in str(first.value)


def test_another_genai_prices_install_does_not_read_the_file(cache_folder: Path, monkeypatch: pytest.MonkeyPatch):
    Pricer("anthropic", "claude-sonnet-4-5")
    (path,) = cache_folder.iterdir()
    data = json.loads(path.read_text())
    data["models"] = {k: {**v, "context_window": 1} for k, v in data["models"].items()}  # wrong on purpose
    path.write_text(json.dumps(data))
    pricing.reset_price_cache()
    assert Pricer("anthropic", "claude-sonnet-4-5").context_window == 1  # the file is read
    monkeypatch.setattr(pricing, "_genai_key", lambda: "another install")
    pricing.reset_price_cache()
    assert Pricer("anthropic", "claude-sonnet-4-5").context_window == 200_000  # not this one's file


def test_a_damaged_entry_is_looked_up_again(cache_folder: Path):
    expected = Pricer("anthropic", "claude-sonnet-4-5").cost(BILLS[0], T)
    (path,) = cache_folder.iterdir()
    data = json.loads(path.read_text())
    data["models"] = {k: {"id": v["id"], "prices": {"input_mtok": "three"}} for k, v in data["models"].items()}
    path.write_text(json.dumps(data))
    pricing.reset_price_cache()
    assert Pricer("anthropic", "claude-sonnet-4-5").cost(BILLS[0], T) == expected
    pricing.reset_price_cache()
    assert isinstance(Pricer("anthropic", "claude-sonnet-4-5")._model, pricing._Model)  # written over
    assert "three" not in path.read_text()


def test_an_unwritable_or_disabled_cache_prices_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    expected = Pricer("anthropic", "claude-sonnet-4-5").cost(BILLS[0], T)
    for setting in (str(blocker / "prices"), "off"):
        monkeypatch.setenv("CTXSIM_PRICE_CACHE", setting)
        pricing.reset_price_cache()
        assert Pricer("anthropic", "claude-sonnet-4-5").cost(BILLS[0], T) == expected
    assert blocker.read_text() == "not a folder"
    pricing.reset_price_cache()


PROBE = """
import sys
from ctxsim.pricing.prices import Bill, Pricer, price_data_version
p = Pricer("anthropic", "claude-sonnet-4-5-20250929")
print(p.cost(Bill(300000, 1000, 2000, 3000, 500), 1.77e9), price_data_version(), "genai_prices" in sys.modules)
"""


def test_with_the_file_in_place_genai_prices_is_not_imported(cache_folder: Path):
    env = {**os.environ, "CTXSIM_PRICE_CACHE": str(cache_folder)}
    cold = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, check=True).stdout
    warm = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, check=True).stdout
    assert cold.split()[:3] == warm.split()[:3]
    assert cold.split()[3] == "True" and warm.split()[3] == "False"
