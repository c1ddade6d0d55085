"""Which files an ingest reads, and the guards every file passes before any loader sees its bytes.

Folders are walked without following symlinks; a symlink met there is reported, never read (outside the folders
given it could expose any file on the machine). A file is read once, as a regular file, within the size limit, and
only when nothing wrote to it while it was read; its bytes must be what its extension says, and a .docx's zip is
judged from its directory (members, sizes, compression ratios), never unpacked. The loaders then parse a private
snapshot of exactly the bytes that were hashed.
"""

from __future__ import annotations

import io
import os
import stat
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from clincite.core.settings import Settings
from clincite.ingest.loaders import SUPPORTED_NAMES, SUPPORTED_SUFFIXES, SkipFile, load_document

MB = 1024 * 1024
READ_ATTEMPTS = 5  # reads of a file that is being written, before it is skipped as "changing"
ZIP_MAX_MEMBERS = 10000
ZIP_RATIO_MIN_SIZE = MB  # small members compress extremely well (XML boilerplate); only large ones can be bombs
WHITESPACE = " \n\t\r\u3000\xa0"
PLAIN_TEXT_SUFFIXES = (
    ".md",
    ".markdown",
    ".txt",
    ".text",
    ".json",
    ".jsonl",
)  # (HTML is mostly markup: its bytes say little)


@dataclass
class Candidate:
    """A path found under a folder given to ingest (or given itself), with the identity it would have."""

    path: Path
    source: str  # path relative to the folder given (posix), or the file name for a file given directly
    root: Path | None = None  # the folder given; None for a file given directly
    problem: str | None = None  # known skip reason (found while walking)


def display_name(name: str) -> str:
    """A file name that can be printed and stored: undecodable bytes (surrogate escapes) shown as U+FFFD."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _hidden(name: str) -> bool:
    return name.startswith((".", "~$"))


def collect_files(paths: list[Path]) -> list[Candidate]:
    """Every entry under the folders given (symlinks not followed), and the files given directly, in order."""
    candidates: list[Candidate] = []
    for given in paths:
        if not given.is_dir():
            problem = None if given.exists() or given.is_symlink() else "文件不存在 (not found)"
            candidates.append(Candidate(given, given.name, None, problem))
            continue
        for folder, dirs, files in os.walk(given, followlinks=False):
            here = Path(folder)
            dirs.sort()
            for name in list(dirs):
                entry = here / name
                relative = entry.relative_to(given).as_posix()
                if _hidden(name):
                    candidates.append(Candidate(entry, relative + "/", given, "隐藏文件夹，未导入 (hidden folder)"))
                    dirs.remove(name)
                elif entry.is_symlink():  # os.walk does not descend into it; say so
                    candidates.append(Candidate(entry, relative + "/", given, None))
            for name in sorted(files):
                entry = here / name
                relative = entry.relative_to(given).as_posix()
                problem = "隐藏文件或 Office 临时文件，未导入 (hidden)" if _hidden(name) else None
                candidates.append(Candidate(entry, relative, given, problem))
    return candidates


@dataclass
class FileRead:
    """One read of a file: its bytes (hashed, parsed and stored as the original), where it is, and which state of
    which file they are (device, inode, size, modification time), to tell later whether it changed meanwhile."""

    data: bytes
    resolved: Path
    identity: tuple[int, int, int, int]


def _identity(info: os.stat_result) -> tuple[int, int, int, int]:
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns


def read_regular_file(path: Path, settings: Settings) -> FileRead:
    """The bytes of a regular file, read once (they are hashed and parsed); anything else is a SkipFile.

    stat() before open() keeps FIFOs and devices unopened (opening a FIFO blocks; a device may have side
    effects); fstat() after open() closes the race where the path is swapped in between.
    """
    limit = int(settings.ingest_max_file_mb * MB)
    _require_regular(os.stat(path).st_mode)
    if path.suffix.lower() not in SUPPORTED_SUFFIXES:
        raise SkipFile(f"不支持的文件类型 “{path.suffix or '无扩展名'}”（支持 {SUPPORTED_NAMES}）")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as f:
        for _attempt in range(READ_ATTEMPTS):
            info = os.fstat(f.fileno())
            _require_regular(info.st_mode)
            if info.st_size > limit:
                raise SkipFile(_too_big(info.st_size, settings.ingest_max_file_mb))
            f.seek(0)
            data = f.read(limit + 1)  # a file growing while we read is still bounded
            after = os.fstat(f.fileno())
            if (after.st_size, after.st_mtime_ns) == (info.st_size, info.st_mtime_ns):
                break  # nothing wrote to it while we read: these bytes are one state of the file
        else:
            raise SkipFile("文件在读取过程中不断被修改，请在写入完成后重新导入 (file changing while read)")
    if len(data) > limit:
        raise SkipFile(_too_big(len(data), settings.ingest_max_file_mb))
    if not data:
        raise SkipFile("文件为空 (empty file)")
    return FileRead(data, path.resolve(), _identity(after))


def require_unchanged(path: Path, read: FileRead) -> None:
    """The file is still the one read, as it was read: otherwise it was being written while we parsed it (a copy
    in progress, an editor saving in place), and what we read may be a truncated state. Skipped, so the next run
    reads it again (nothing of it is stored, so it is not "unchanged" then)."""
    try:
        now = _identity(os.stat(path))
    except OSError:
        now = None
    if now != read.identity:
        raise SkipFile(
            "文件在导入过程中被修改（可能仍在复制或保存），本次未导入；写入完成后再次运行导入即可 "
            "(file changed while it was being ingested: retried next run)"
        )


def check_content(suffix: str, data: bytes, settings: Settings) -> None:
    """The bytes must be what the extension says; a .docx's zip is checked from its directory, unpacked never."""
    if suffix in PLAIN_TEXT_SUFFIXES:
        # No encoding takes more than 4 bytes a character: a lower bound of the letters, before decoding a byte.
        letters = (len(data) - sum(data.count(c) for c in (b" ", b"\n", b"\t", b"\r"))) // 4
        _refuse_letters(letters, settings)
    if suffix == ".pdf" and b"%PDF-" not in data[:1024]:
        raise SkipFile("PDF 文件损坏或不是 PDF：文件头不是 %PDF（内容与扩展名不符） (not a PDF)")
    if suffix != ".docx":
        return
    if not data.startswith(b"PK\x03\x04"):
        raise SkipFile("DOCX 文件损坏或不是 Word 文档：不是 zip 格式（内容与扩展名不符） (not a zip)")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise SkipFile(f"DOCX 文件损坏或不是 Word 文档 ({type(exc).__name__}: {exc})") from exc
    if len(members) > ZIP_MAX_MEMBERS:
        raise SkipFile(f"DOCX 压缩包内有 {len(members)} 个文件，超过上限 {ZIP_MAX_MEMBERS}，疑似恶意文件 (zip bomb)")
    total = sum(m.file_size for m in members)
    if total > settings.ingest_max_unzipped_mb * MB:
        raise SkipFile(
            f"DOCX 解压后共 {total / MB:.0f} MB，超过上限 {settings.ingest_max_unzipped_mb:g} MB"
            f"（INGEST_MAX_UNZIPPED_MB），疑似 zip 炸弹 (zip bomb)"
        )
    for member in members:
        ratio = member.file_size / max(member.compress_size, 1)
        if member.file_size > ZIP_RATIO_MIN_SIZE and ratio > settings.ingest_max_zip_ratio:
            raise SkipFile(
                f"DOCX 中 {member.filename} 的压缩比为 {ratio:.0f}:1，超过上限 "
                f"{settings.ingest_max_zip_ratio:g}:1（INGEST_MAX_ZIP_RATIO），疑似 zip 炸弹 "
                f"(zip bomb)"
            )
    xml = sum(m.file_size for m in members if m.filename.lower().endswith((".xml", ".rels")))
    if xml > settings.ingest_max_docx_xml_mb * MB:
        raise SkipFile(
            f"DOCX 中的 XML 解压后共 {xml / MB:.0f} MB，超过上限 "
            f"{settings.ingest_max_docx_xml_mb:g} MB（INGEST_MAX_DOCX_XML_MB），正文过大，已跳过 "
            f"(document XML too large)"
        )
    if not any(m.filename == "word/document.xml" for m in members):
        raise SkipFile("DOCX 文件损坏或不是 Word 文档：缺少 word/document.xml (not a Word document)")


def load_snapshot(name: str, data: bytes):
    """Parse exactly the bytes that were hashed: a private copy, so a file rewritten meanwhile cannot mix in."""
    with tempfile.TemporaryDirectory(prefix="clincite-ingest-") as folder:
        snapshot = Path(folder) / name
        snapshot.write_bytes(data)
        return load_document(snapshot)


def check_text_size(text: str, settings: Settings) -> None:
    """Refuse before chunking when even perfectly packed chunks could not stay within the chunk limit."""
    _refuse_letters(len(text) - sum(text.count(c) for c in WHITESPACE), settings)


def _refuse_letters(letters: int, settings: Settings) -> None:
    limit = settings.ingest_max_chunks_per_document
    if letters > limit * settings.chunk_max_chars:
        needed = letters // settings.chunk_max_chars
        raise SkipFile(
            f"正文至少 {letters} 字，至少需要 {needed} 个片段，超过上限 {limit}"
            f"（INGEST_MAX_CHUNKS_PER_DOCUMENT），文件过大，已跳过 (too many chunks)"
        )


def _require_regular(mode: int) -> None:
    if stat.S_ISREG(mode):
        return
    kinds = [
        (stat.S_ISDIR, "文件夹"),
        (stat.S_ISFIFO, "命名管道 (FIFO)"),
        (stat.S_ISSOCK, "套接字 (socket)"),
        (stat.S_ISCHR, "字符设备"),
        (stat.S_ISBLK, "块设备"),
    ]
    kind = next((label for test, label in kinds if test(mode)), "特殊文件")
    raise SkipFile(f"不是普通文件（{kind}），未读取 (not a regular file)")


def _too_big(size: int, limit_mb: float) -> str:
    return f"文件大小 {size / MB:.1f} MB，超过上限 {limit_mb:g} MB（INGEST_MAX_FILE_MB） (file too large)"


def symlink_reason(path: Path, roots: list[Path]) -> str:
    """Symlinks met while walking a folder are never followed: outside, they could expose any file on the machine
    (`/etc/passwd`); inside, their target is ingested under its own name anyway."""
    target = path.resolve()
    if not target.exists():
        return "符号链接指向的文件不存在，未跟随 (broken symlink)"
    if any(target == root or root in target.parents for root in roots):
        return f"符号链接，未跟随：目标 {display_name(str(target))} 已在导入范围内，按其自身名称导入 (symlink)"
    return f"符号链接指向所给文件夹之外（{display_name(str(target))}），未跟随 (symlink outside the folders given)"
