"""`pipeline`: several policies run in order before each request, cheapest first.

Source: seed 000's ContextManager.prepare, which clears stale tool results and
compacts only when clearing was not enough. Each stage sees the history with
the earlier stages' edits applied (the engine runs `stages` one by one), so a
later, costlier stage fires only if it is still needed. On the command line:
`clear:trigger=30000+compact:keep_recent=10`, or `pipeline:stages=[clear|compact]`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ctxsim.errors import ParameterError
from ctxsim.params import field_doc
from ctxsim.policies import Policy, PolicyInfo, parse_policy, register
from ctxsim.policies.base import Edit, View


@dataclass(frozen=True)
class PipelineParams:
    stages: tuple[str, ...] = field(default=(), metadata=field_doc("policy specs run in order, cheapest first"))


class Pipeline:
    name = "pipeline"

    def __init__(self, params: PipelineParams, stages: Sequence[Policy] | None = None) -> None:
        self.params = params
        self.stages: tuple[Policy, ...] = tuple(stages) if stages is not None else tuple(
            parse_policy(spec) for spec in params.stages)
        if not self.stages:
            raise ParameterError("policy pipeline: needs at least one stage")
        if any(isinstance(s, Pipeline) for s in self.stages):
            self.stages = tuple(x for s in self.stages for x in (s.stages if isinstance(s, Pipeline) else (s,)))

    def decide(self, view: View) -> Sequence[Edit]:
        # The engine runs `stages` itself, applying each stage's edits before the next decides.
        raise RuntimeError("a pipeline's stages are run by the engine")


def pipeline_of(stages: Sequence[Policy], specs: Sequence[str]) -> Pipeline:
    return Pipeline(PipelineParams(tuple(specs)), stages)


register(PolicyInfo("pipeline", PipelineParams, Pipeline,
                    "seed 000 ContextManager.prepare (clearing, then compaction)",
                    "run several policies in order, each seeing the previous ones' edits", __name__))
