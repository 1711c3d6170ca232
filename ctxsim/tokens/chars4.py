"""`chars4`: ceil(characters / 4), the rule of thumb. An estimate, labelled so."""

from __future__ import annotations

from ctxsim.tokens import TokenizerInfo, register


class Chars4:
    name = "chars4"
    exact = False

    def count_batch(self, texts: list[str]) -> list[int]:
        return [-(-len(t) // 4) for t in texts]


register(TokenizerInfo("chars4", False, "ceil(characters / 4); an estimate", Chars4, __name__))
