"""A memo keyed by object identity, for values worked out once per message, call or history item.

Those objects are frozen or never changed once made, but not all hashable, and hashing a
message would read its whole text: the identity is the key. Each entry holds its object, so
the object cannot be freed and its id reused by another while the entry is there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class IdentityMemo(Generic[K, V]):
    def __init__(self) -> None:
        self._entries: dict[int, tuple[K, V]] = {}

    def get(self, key: K) -> V | None:
        hit = self._entries.get(id(key))
        return hit[1] if hit is not None and hit[0] is key else None

    def put(self, key: K, value: V) -> V:
        self._entries[id(key)] = (key, value)
        return value

    def get_or(self, key: K, make: Callable[[K], V]) -> V:
        """The value of `key`, made by `make(key)` the first time."""
        hit = self._entries.get(id(key))
        if hit is not None and hit[0] is key:
            return hit[1]
        return self.put(key, make(key))

    def keep(self, alive: Callable[[K], bool]) -> None:
        """Forget the entries whose key is no longer `alive`."""
        self._entries = {k: e for k, e in self._entries.items() if alive(e[0])}

    def keep_only(self, keys: Iterable[K]) -> None:
        """Forget every entry but those of `keys`."""
        live = {id(k) for k in keys}
        self._entries = {k: e for k, e in self._entries.items() if k in live}

    def values(self) -> Iterator[V]:
        return (value for _, value in self._entries.values())
