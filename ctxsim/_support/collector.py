"""The cyclic garbage collector paused while ctxsim builds large, acyclic structures.

Reading a trace and replaying it allocate many small objects that hold no cycles (messages,
items, rows); the collector would keep re-scanning them and everything older, for nothing.
Reference counting still frees memory.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside the block; the collector runs again afterwards.

    On the way out, what the block made and kept (the runs' rows, about 100,000 objects for 8
    runs of 2,400 requests) is moved to the oldest generation as it is: re-enabling the collector
    would otherwise scan all of it at the next allocation (about 30 ms), to find it alive. It is
    looked at again by the next full collection, with the rest of the old objects. Skipped when
    the caller froze objects of its own (`gc.unfreeze` would release them too).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if gc.get_freeze_count() == 0:
                gc.freeze()  # every tracked object to the permanent generation, in constant time...
                gc.unfreeze()  # ...and back into the oldest one
            gc.enable()
