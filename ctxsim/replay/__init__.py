"""The road from a trace to a run: the replay engine and its meter, the entry points the commands and
the Python library call (`api`, `library`), the run artefact (`run`) and the recorded bill beside it
(`recorded`), and the corpus sweep (`sweep`, on a Dask cluster `sweep_dask`, its dates `sweep_dates`).

`ctxsim.replay` is also the library's `replay` function (README, "Python API"): once a module of this
package is imported, Python binds the package to that name on `ctxsim`, so the package itself answers
a call the way `ctxsim.replay.library.replay` does.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ctxsim.replay.library import Result


class _CallablePackage(types.ModuleType):
    def __call__(self, *args: Any, **kwargs: Any) -> Result:
        from ctxsim.replay.library import replay

        return replay(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
