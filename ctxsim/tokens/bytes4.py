"""`bytes4`: ceil(UTF-8 bytes / 4) per text block, yoagent's estimator. An estimate."""

from __future__ import annotations

from ctxsim.tokens import TokenizerInfo, register


class Bytes4:
    name = "bytes4"
    exact = False

    def count_batch(self, texts: list[str]) -> list[int]:
        return [-(-len(t.encode("utf-8")) // 4) for t in texts]


register(TokenizerInfo("bytes4", False, "ceil(UTF-8 bytes / 4) per block (yoagent); an estimate", Bytes4, __name__))
