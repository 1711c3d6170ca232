"""One registry mechanism for every kind of plugin (policies, formats, cache models, tokenizers,
presets, reports).

A plugin module registers itself when imported. The registry imports every module of its
package the first time it is asked for its contents (modules whose name starts with `_` are
helpers, not plugins), then the entry points of its group, so third-party plugins join the same
way. The same name registered by two modules is an error that names both.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from importlib.metadata import entry_points
from typing import Generic, TypeVar

from ctxsim.errors import CtxsimError

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, kind: str, package: str, group: str) -> None:
        self.kind = kind  # "policy", "format" ...: used in messages
        self.package = package
        self.group = group  # the entry-point group third-party plugins register under
        self._items: dict[str, T] = {}
        self._modules: dict[str, str] = {}
        self._loaded = False

    def add(self, name: str, item: T, module: str) -> None:
        known = self._modules.get(name)
        if known is not None and known != module:
            raise CtxsimError(f"{self.kind} {name!r} registered twice: by {known} and by {module}")
        self._items[name] = item
        self._modules[name] = module

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        package = importlib.import_module(self.package)
        for module in pkgutil.iter_modules(package.__path__):
            if not module.name.startswith("_"):
                importlib.import_module(f"{self.package}.{module.name}")
        for entry in entry_points(group=self.group):
            entry.load()

    def all(self) -> dict[str, T]:
        """Every registered item, by name, sorted."""
        self._load()
        return dict(sorted(self._items.items()))

    def __iter__(self) -> Iterator[str]:
        return iter(self.all())
