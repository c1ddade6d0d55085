""" "打开原文": the original file of a KB document, streamed from the KB's original store, never from a path.

    response = await original_response(kb, source)      # 404 JSON when the catalogue or the store has no such file

What is served is exactly what ingest read, hashed and parsed (`clincite.kb.originals`), looked up by the hash the
catalogue keeps: a file in the document folder replaced afterwards (by a symlink to the app's secret, to users.json,
to /etc/shadow) changes nothing here. Everything that touches the file — the catalogue lookup, opening it, telling a
text file's encoding, every read — runs in worker threads, one chunk at a time, so a 100 MB original costs the event
loop (which serves every clinician) no more than one small step per chunk. Text and HTML are sent as the bytes they
are, labelled with their encoding (the browser decodes them; nothing is decoded here) and as text/plain in a sandbox:
a document's HTML is shown as its source, never run. PDF opens inline in the browser's viewer; anything else is a
download.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import anyio
from fastapi.responses import JSONResponse, Response, StreamingResponse

from clincite.ingest.loaders.text import BOMS, CANDIDATES, MAX_CHAOS
from clincite.kb.store import KnowledgeBase

READ_CHUNK = 256 * 1024  # bytes per read (and per event-loop step) while streaming an original
DETECT_CHUNK = 1024 * 1024  # bytes per step while checking that a text file is UTF-8
DETECT_SAMPLE = 200_000  # bytes charset-normalizer looks at (as ingest does)
TEXT_SUFFIXES = {".md", ".markdown", ".txt", ".text", ".html", ".htm", ".json", ".jsonl"}
MEDIA_TYPES = {
    ".pdf": "application/pdf",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
}
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_\-]+)""", re.I)
NOT_IN_KB = {"error": "知识库中没有这个文件 (not found)"}
NOT_STORED = {"error": "这个文件的原文尚未存档，请管理员重新运行一次导入 (original not stored: run ingest again)"}


def _is_utf8(stream: BinaryIO) -> bool:
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        while block := stream.read(DETECT_CHUNK):
            decoder.decode(block)
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def _detect_encoding(kb: KnowledgeBase, digest: str, html: bool) -> str:
    """The encoding ingest read this file in: a BOM, an HTML page's declared charset, UTF-8, else detection. (The
    stream is read again rather than rewound: a shared store's streams go forward only.)"""
    with kb.originals.open(digest) as stream:
        head = stream.read(DETECT_SAMPLE)
    for bom, encoding in BOMS:
        if head.startswith(bom):
            return {"utf-8": "utf-8-sig"}.get(encoding, encoding[:6])  # utf-16 / utf-32 read their own BOM
    if html and (declared := _META_CHARSET.search(head[:4096])):
        name = declared.group(1).decode("ascii").lower()
        name = {"gb2312": "gb18030", "gbk": "gb18030", "big5": "big5hkscs"}.get(name, name)
        try:
            return codecs.lookup(name).name
        except LookupError:
            pass
    with kb.originals.open(digest) as stream:
        if _is_utf8(stream):
            return "utf-8"
    from charset_normalizer import from_bytes

    best = from_bytes(head, cp_isolation=CANDIDATES).best()
    return best.encoding if best is not None and best.chaos <= MAX_CHAOS else "utf-8"


_encodings: dict[tuple[str, bool], str] = {}  # digest → encoding: a stored original never changes


def _encoding_of(kb: KnowledgeBase, digest: str, html: bool) -> str:
    if (digest, html) not in _encodings:
        _encodings[(digest, html)] = _detect_encoding(kb, digest, html)
    return _encodings[(digest, html)]


@dataclass
class Opened:
    stream: BinaryIO
    size: int
    media_type: str
    disposition: str
    encoding: str | None = None  # a text file not in UTF-8: transcoded chunk by chunk on the way out


def _open_original(kb: KnowledgeBase, source: str) -> Opened | JSONResponse:
    """A document's stored original, ready to stream; runs in a worker thread."""
    record = kb.catalogue.documents().get(source)
    if record is None:
        return JSONResponse(NOT_IN_KB, status_code=404)
    try:
        stream = kb.originals.open(record.file_hash)
    except FileNotFoundError:
        return JSONResponse(NOT_STORED, status_code=404)
    size = kb.originals.size(record.file_hash) or 0
    suffix = Path(source).suffix.lower()
    if suffix in TEXT_SUFFIXES:
        encoding = _encoding_of(kb, record.file_hash, suffix in (".html", ".htm"))
        transcode = None if codecs.lookup(encoding).name == "utf-8" else encoding
        return Opened(stream, size, "text/plain; charset=utf-8", "inline", transcode)
    media_type = MEDIA_TYPES.get(suffix, "application/octet-stream")
    return Opened(stream, size, media_type, "inline" if suffix == ".pdf" else "attachment")


def _next_block(opened: Opened, decoder: codecs.IncrementalDecoder | None) -> tuple[bytes, bool]:
    """The next chunk to send (UTF-8 for a transcoded text) and whether the file is exhausted; in a worker thread."""
    block = opened.stream.read(READ_CHUNK)
    if decoder is None:
        return block, not block
    return decoder.decode(block, final=not block).encode("utf-8"), not block


async def _chunks(opened: Opened) -> AsyncIterator[bytes]:
    decoder = codecs.getincrementaldecoder(opened.encoding)("replace") if opened.encoding else None
    try:
        while True:
            block, done = await anyio.to_thread.run_sync(_next_block, opened, decoder)
            if block:
                yield block
            if done:
                return
    finally:
        await anyio.to_thread.run_sync(opened.stream.close)


async def original_response(kb: KnowledgeBase, source: str) -> Response:
    opened = await anyio.to_thread.run_sync(_open_original, kb, source)
    if isinstance(opened, Response):
        return opened
    headers = {
        "X-Content-Type-Options": "nosniff",
        "Content-Disposition": f"{opened.disposition}; filename*=UTF-8''{_quoted_name(source)}",
    }
    if opened.encoding is None:
        headers["Content-Length"] = str(opened.size)
    if opened.media_type != "application/pdf":  # the browser's PDF viewer does not run in a sandboxed document
        headers["Content-Security-Policy"] = "sandbox"
    return StreamingResponse(_chunks(opened), media_type=opened.media_type, headers=headers)


def _quoted_name(source: str) -> str:
    from urllib.parse import quote

    return quote(Path(source).name, safe="")


def stored_text(kb: KnowledgeBase, source: str) -> str | None:
    """A text or Markdown document's original as ingested, decoded as ingest decoded it (the rendered view of
    "打开原文"); None when the catalogue or the store has no such document. Reads the whole file: call it in a worker
    thread."""
    record = kb.catalogue.documents().get(source)
    if record is None:
        return None
    try:
        with kb.originals.open(record.file_hash) as stream:
            data = stream.read()
    except FileNotFoundError:
        return None
    from clincite.ingest.loaders import SkipFile, decode_text

    try:
        return decode_text(data)
    except SkipFile:
        return None
