"""Plain text: charset detection (every text format reads its bytes through `decode_text`)."""

from __future__ import annotations

import codecs

from clincite.ingest.loaders.base import LoadedDocument, Section, SkipFile, clean_text

# Byte-order marks, longest first (the UTF-32-LE mark begins with the UTF-16-LE one).
BOMS = [
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
]
MAX_CHAOS = 0.2  # charset-normalizer's "mess" ratio above which a guess is not trusted
# Encodings a clinic's Chinese files come in; detection is limited to them (and what they contain), so a Big5 file
# is not read as some Cyrillic code page that happens to decode it.
CANDIDATES = ["utf_8", "gb18030", "big5", "big5hkscs", "cp950", "utf_16", "utf_32", "gbk", "gb2312", "ascii"]


def decode_text(data: bytes) -> str:
    """Bytes → text: a BOM decides; else strict UTF-8; else charset-normalizer among Chinese encodings.

    A file whose encoding cannot be told with confidence is skipped with a reason rather than indexed as garbage.
    """
    for bom, encoding in BOMS:
        if data.startswith(bom):
            try:
                return clean_text(data[len(bom) :].decode(encoding))
            except UnicodeDecodeError as exc:
                raise SkipFile(
                    f"看起来是二进制或已损坏的文件：以 {encoding.upper()} 字节序标记开头，"
                    f"但内容无法按此解码 "
                    f"(binary or corrupt {encoding})"
                ) from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and "\x00" not in text[:4096]:
        return clean_text(text)
    from charset_normalizer import from_bytes

    best = from_bytes(data[:200_000], cp_isolation=CANDIDATES).best()
    if best is None or best.chaos > MAX_CHAOS:
        if b"\x00" in data[:8192]:
            raise SkipFile("看起来是二进制文件，不是文本 (binary content)")
        raise SkipFile(
            "无法解码：识别不出可靠的文本编码（支持 UTF-8/UTF-16/UTF-32、GB18030、Big5），请另存为 UTF-8 "
            "后重试 (encoding not detected with confidence)"
        )
    try:
        return clean_text(data.decode(best.encoding))
    except (UnicodeDecodeError, LookupError) as exc:
        raise SkipFile(f"无法按检测到的编码 {best.encoding} 解码 (undecodable text)") from exc


def plain_document(text: str, title: str) -> LoadedDocument:
    return LoadedDocument(title, text, [Section([], 0, len(text))] if text.strip() else [])
