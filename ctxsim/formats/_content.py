"""Content and images: a content value (a string or an array of text, image and other blocks) as the text a
reader keeps plus the tokens its images cost, and image sizes read from their first bytes (PNG, JPEG, GIF,
WebP) priced by Anthropic's and OpenAI's documented rules."""

from __future__ import annotations

import base64
import json
import math
import struct
from collections.abc import Callable

from ctxsim.formats._node import Node, kind_of


def text_of(node: Node, images: Callable[[Node], int] | None = None) -> tuple[str, int]:
    """A content value (a string, or an array of text/image blocks) as text plus extra tokens for images.

    Blocks of an unknown kind count by their JSON text: what they are is not known, that they were
    sent is.
    """
    value = node.value
    if value is None:
        return "", 0
    if isinstance(value, str):
        return value, 0
    if isinstance(value, dict):
        value = [value]
        node = Node(value, node.source, node.line, node.path)
    if not isinstance(value, list):
        raise node.fail(f"must be a string or an array of content blocks, got {kind_of(value)}")
    parts: list[str] = []
    extra = 0
    for block in node.items():
        v = block.value
        if isinstance(v, str):
            parts.append(v)
            continue
        if not isinstance(v, dict):
            raise block.fail(f"must be a content block (an object), got {kind_of(v)}")
        kind = v.get("type")
        if isinstance(v.get("text"), str) and kind in (None, "text", "input_text", "output_text", "summary_text"):
            parts.append(v["text"])
        elif kind in ("image", "input_image", "image_url") or "image_url" in v:
            extra += images(block) if images else IMAGE_FALLBACK_TOKENS
        elif kind == "tool_result" or kind == "tool_use":
            raise block.fail(f"a {kind} block is not allowed here")
        elif isinstance(v.get("text"), str):
            parts.append(v["text"])
        elif isinstance(v.get("content"), (str, list)):
            inner, more = text_of(block.child("content"), images)
            parts.append(inner)
            extra += more
        else:
            parts.append(json.dumps(v, ensure_ascii=False, separators=(",", ":")))
    return "\n".join(parts), extra


# ---------------------------------------------------------------- images

IMAGE_FALLBACK_TOKENS = 1_600  # an image whose size cannot be read: about a full-size Claude image


def image_size(data: bytes) -> tuple[int, int] | None:
    """Width and height from the first bytes of a PNG, JPEG, GIF or WebP image."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        return struct.unpack(">II", data[16:24])
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        return struct.unpack("<HH", data[6:10])
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP" and len(data) >= 30:
        chunk = data[12:16]
        if chunk == b"VP8X":
            w = int.from_bytes(data[24:27], "little") + 1
            h = int.from_bytes(data[27:30], "little") + 1
            return w, h
        if chunk == b"VP8 " and len(data) >= 30:
            w, h = struct.unpack("<HH", data[26:30])
            return w & 0x3FFF, h & 0x3FFF
        if chunk == b"VP8L" and len(data) >= 25:
            bits = int.from_bytes(data[21:25], "little")
            return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if data[:2] == b"\xff\xd8":
        i = 2
        while i + 9 < len(data):
            if data[i] != 0xFF:
                i += 1
                continue
            marker = data[i + 1]
            if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
                i += 2
                continue
            length = int.from_bytes(data[i + 2:i + 4], "big")
            if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF):
                h, w = struct.unpack(">HH", data[i + 5:i + 9])
                return w, h
            i += 2 + length
    return None


def _decode_head(b64: str, limit: int = 65536) -> bytes:
    head = b64[:limit]
    head = head[: len(head) - len(head) % 4]
    try:
        return base64.b64decode(head, validate=False)
    except (ValueError, TypeError):
        return b""


def anthropic_image_tokens(width: int, height: int) -> int:
    """Claude's documented estimate: pixels / 750, after scaling to at most 1568 px a side and ~1.15 MP."""
    scale = min(1.0, 1568 / max(width, height), math.sqrt(1_150_000 / (width * height)) if width * height else 1.0)
    w, h = width * scale, height * scale
    return max(1, math.ceil(w * h / 750))


def openai_image_tokens(width: int, height: int) -> int:
    """OpenAI's high-detail tile rule: fit in 2048, shortest side to 768, 170 a 512-px tile plus 85."""
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    short = min(w, h)
    if short > 768:
        w, h = w * 768 / short, h * 768 / short
    tiles = math.ceil(w / 512) * math.ceil(h / 512)
    return 85 + 170 * tiles


def image_tokens(block: Node, provider: str) -> int:
    """Tokens of one image block (Anthropic `source`, OpenAI `image_url` / `input_image`)."""
    v = block.value if isinstance(block.value, dict) else {}
    data = ""
    source = v.get("source")
    if isinstance(source, dict) and isinstance(source.get("data"), str):
        data = source["data"]
    url = v.get("image_url")
    if isinstance(url, dict):
        url = url.get("url")
    if isinstance(url, str) and url.startswith("data:") and "," in url:
        data = url.split(",", 1)[1]
    size = image_size(_decode_head(data)) if data else None
    if size is None or not size[0] or not size[1]:
        return IMAGE_FALLBACK_TOKENS
    return anthropic_image_tokens(*size) if provider == "anthropic" else openai_image_tokens(*size)

