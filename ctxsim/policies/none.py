"""`none`: the recorded history, unmanaged. The baseline every policy is compared with."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ctxsim.policies import PolicyInfo, register
from ctxsim.policies.base import Edit, View


@dataclass(frozen=True)
class NoneParams:
    pass


class NonePolicy:
    name = "none"

    def __init__(self, params: NoneParams) -> None:
        self.params = params

    def decide(self, view: View) -> Sequence[Edit]:
        return ()


register(PolicyInfo("none", NoneParams, NonePolicy, "baseline (no context management)",
                    "replay the history as recorded", __name__))
