"""A generated corpus of files that try to hurt ingest: bombs, lies, special files, bad names, symlinks, duplicates.

    python tests/nasty_corpus.py /tmp/nasty [--sample sample_kb] [--big-mb 0]   # writes it, prints the manifest

Nothing here is committed as a binary: every file is made by this script. `build()` returns the manifest — for each
entry the name ingest reports (its path relative to the folder, or the path given) and what must happen to it:
"added", or "skipped" with a fragment of the reason. The limits the manifest assumes are `NASTY_LIMITS` (pass them
as environment variables to `ingest.py`), small so that the corpus stays small.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import socket
import struct
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

NASTY_LIMITS = {
    "INGEST_MAX_FILE_MB": "5",
    "INGEST_MAX_UNZIPPED_MB": "50",
    "INGEST_MAX_DOCX_XML_MB": "2",
    "INGEST_MAX_ZIP_RATIO": "100",
    "INGEST_MAX_CHUNKS_PER_DOCUMENT": "200",
    "INGEST_MAX_HEADING_CHARS": "200",
}

PARAGRAPH = (
    "低浓度阿托品滴眼液用于延缓儿童近视进展，常用浓度为百分之零点零一。"
    "用药期间应每三至六个月复查屈光度与眼轴长度，观察畏光、近距离视物模糊等不良反应。"
)


@dataclass
class Expect:
    status: str  # "added" | "skipped"
    reason: str = ""  # a fragment the skip reason must contain ("" = any reason)
    why: str = ""  # what the case is about


def guideline(title: str, paragraphs: int = 3, seed: str = "") -> str:
    body = "\n\n".join(f"{seed}{PARAGRAPH}第{i + 1}段。" for i in range(paragraphs))
    return f"# {title}\n\n## 用法与随访\n\n{body}\n"


def make_docx(target: Path | io.BytesIO, heading: str = "近视随访手册", text: str = PARAGRAPH) -> None:
    import docx

    document = docx.Document()
    document.add_heading(heading, level=1)
    document.add_paragraph(text)
    document.save(str(target) if isinstance(target, Path) else target)


def make_pdf(path: Path, lines: list[str], password: str | None = None) -> None:
    from reportlab.lib.pdfencrypt import StandardEncryption
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont
    from reportlab.pdfgen import canvas

    pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
    encrypt = StandardEncryption(password, canPrint=0) if password else None
    c = canvas.Canvas(str(path), encrypt=encrypt)
    c.setFont("STSong-Light", 12)
    for i, line in enumerate(lines):
        c.drawString(72, 750 - 20 * i, line)
    c.save()


def zip_bytes(members: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def lie_about_size(data: bytes, declared: int) -> bytes:
    """Rewrite every central-directory entry's uncompressed size: a zip that claims to unpack to `declared` bytes."""
    out = bytearray(data)
    at = out.find(b"PK\x01\x02")
    while at >= 0:
        out[at + 24 : at + 28] = struct.pack("<I", declared)
        at = out.find(b"PK\x01\x02", at + 4)
    return bytes(out)


def build(
    root: Path, sample: Path | None = None, forge_name: str | None = None, big_mb: float = 0
) -> dict[str, Expect]:
    """Write the corpus under `root`; returns {reported name: Expect}. `root` must be empty or missing."""
    root.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Expect] = {}

    def write(name: str, data: bytes | str, expect: Expect) -> Path:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        manifest[name] = expect
        return path

    # --- good documents in every format (they must be added) ---
    write("good/随访指南.md", guideline("随访指南"), Expect("added", why="plain Markdown"))
    write(
        "good/户外活动.txt",
        ("户外活动每天两小时有助于预防近视。" * 20).encode("gb18030"),
        Expect("added", why="GB18030"),
    )
    write(
        "good/红光.html",
        "<html><body><h1>红光治疗</h1><p>" + PARAGRAPH * 3 + "</p></body></html>",
        Expect("added", why="HTML"),
    )
    (root / "good").mkdir(exist_ok=True)
    make_docx(root / "good/随访手册.docx")
    manifest["good/随访手册.docx"] = Expect("added", why="DOCX")
    make_pdf(root / "good/散瞳验光.pdf", ["散瞳验光是儿童屈光检查的金标准。", "睫状肌麻痹后测量更准确。"])
    manifest["good/散瞳验光.pdf"] = Expect("added", why="PDF")
    write(
        "good/crlf_bom.md",
        "\ufeff# 换行与BOM\r\n\r\n" + PARAGRAPH.replace("。", "。\r\n"),
        Expect("added", why="BOM and CRLF"),
    )
    write("good/控制字符.txt", "眼压\u200b升高\x07需\x1b复查。" * 30, Expect("added", why="control/zero-width chars"))
    write("good/" + "很长的文件名" * 13 + ".md", guideline("长文件名"), Expect("added", why="240-byte file name"))
    deep = "/".join(f"d{i}" for i in range(40))
    write(f"{deep}/深层.md", guideline("深层目录"), Expect("added", why="40 folders deep"))
    # Same file name in two folders: two documents (identity = path relative to the folder given).
    write("科室甲/指南.md", guideline("甲科室指南", seed="甲"), Expect("added", why="same name, folder A"))
    write("科室乙/指南.md", guideline("乙科室指南", seed="乙"), Expect("added", why="same name, folder B"))
    write(
        "long_heading.md",
        "# 标题\n\n## " + "很长的标题" * 10_000 + "\n\n" + PARAGRAPH + "\n",
        Expect("added", why="50,000-character heading line: indexed as text, heading path cut"),
    )

    # --- duplicates and identity theft ---
    write("good/随访指南_副本.md", guideline("随访指南"), Expect("skipped", "内容完全相同", "identical copy"))
    if sample is not None:
        first = sorted(sample.glob("*.md"))[0]
        write("copy_of_sample.md", first.read_bytes(), Expect("skipped", "内容完全相同", "copy of a KB document"))
    if forge_name:
        write(forge_name, "# 伪造\n\n伪造的内容。\n", Expect("skipped", "已有同名文档", "same identity, other file"))

    # --- empty, binary, undecodable, unsupported ---
    write("empty.md", b"", Expect("skipped", "空", "empty file"))
    write("blank.txt", " \n\t\n\u3000\n", Expect("skipped", "", "whitespace only"))
    write("image.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(200), Expect("skipped", "二进制", "PNG as .md"))
    write("binary.txt", bytes(range(256)) * 40, Expect("skipped", "", "every byte value, NULs included"))
    write("random.txt", random.Random(7).randbytes(4096), Expect("skipped", "", "random bytes"))
    write("headings_only.md", "".join(f"## 标题{i}\n\n" for i in range(2000)), Expect("skipped", "", "no body"))
    write(
        "script_only.html",
        "<html><script>" + "var x=1;" * 500 + "</script></html>",
        Expect("skipped", "", "no main text"),
    )
    write("slides.pptx", b"PK\x03\x04" + bytes(100), Expect("skipped", "不支持", "unsupported type"))
    write("README", "没有扩展名的文件", Expect("skipped", "不支持", "no extension"))
    write("cut_off.json", '{"name": "青光眼", "desc": "眼压升高', Expect("skipped", "JSON 格式错误", "JSON cut off"))
    write("nested.json", "[" * 100_000, Expect("skipped", "嵌套层数过深", "JSON nested past the parser's stack"))

    # --- lying or broken PDFs ---
    write("not_a_pdf.pdf", "这其实是文本，不是 PDF。", Expect("skipped", "%PDF", "text named .pdf"))
    write("truncated.pdf", b"%PDF-1.4\n1 0 obj <<< garbage", Expect("skipped", "", "truncated PDF"))
    make_pdf(root / "locked.pdf", ["加密内容"], password="secret")
    manifest["locked.pdf"] = Expect("skipped", "", "encrypted PDF")

    # --- zip bombs and broken .docx (checked before python-docx opens them) ---
    content_types = (
        b'<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>'
    )
    write(
        "bomb_ratio.docx",
        zip_bytes({"[Content_Types].xml": content_types, "word/document.xml": bytes(30 * 2**20)}),
        Expect("skipped", "压缩比", "30 MB of zeros in 30 KB"),
    )
    small = io.BytesIO()
    make_docx(small)
    write(
        "bomb_declared.docx",
        lie_about_size(small.getvalue(), 0xFFFFFFF0),
        Expect("skipped", "解压后", "declares 4 GB unpacked"),
    )
    write(
        "bomb_members.docx",
        zip_bytes({f"word/m{i}.xml": b"" for i in range(10_050)}, zipfile.ZIP_STORED),
        Expect("skipped", "个文件", "10,050 members"),
    )
    words = random.Random(3).choices(["眼轴", "近视", "阿托品", "随访", "角膜", "屈光", "患者", "治疗"], k=400_000)
    wordy = "<w:document><w:body><w:p><w:r><w:t>" + "".join(words) + "</w:t></w:r></w:p></w:body></w:document>"
    write(
        "xml_heavy.docx",
        zip_bytes({"[Content_Types].xml": content_types, "word/document.xml": wordy.encode()}),
        Expect("skipped", "XML", "3.5 MB of document XML (ratio ~5): over INGEST_MAX_DOCX_XML_MB"),
    )
    write("not_word.docx", zip_bytes({"hello.txt": b"hi"}), Expect("skipped", "document.xml", "zip, not Word"))
    write("not_a_zip.docx", "不是 zip", Expect("skipped", "DOCX", "text named .docx"))
    write("~$临时.docx", b"PK\x03\x04owner file", Expect("skipped", "临时", "Office owner file"))

    # --- over the limits ---
    with (root / "huge.txt").open("wb") as f:  # sparse: 6 MB on paper, nothing on disk; refused before reading
        f.truncate(6 * 2**20)
    manifest["huge.txt"] = Expect("skipped", "超过上限", "over INGEST_MAX_FILE_MB")
    write("too_long.txt", PARAGRAPH * 2000, Expect("skipped", "片段", "too many chunks (text size)"))
    write(
        "too_many_sections.md",
        "# 多节\n\n" + "".join(f"# 节{i}\n\n短句{i}。\n\n" for i in range(400)),
        Expect("skipped", "片段", "too many chunks (400 one-line sections)"),
    )

    # --- names, special files, symlinks ---
    bad_name = os.fsencode(root) + b"/bad_\xff\xfe_name.md"
    with open(bad_name, "wb") as f:
        f.write(guideline("坏文件名").encode("utf-8"))
    manifest["bad_\ufffd\ufffd_name.md"] = Expect("skipped", "UTF-8", "file name not UTF-8")
    os.mkfifo(root / "pipe.md")
    manifest["pipe.md"] = Expect("skipped", "FIFO", "named pipe (would block a reader)")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(root / "socket.md"))
    server.close()
    manifest["socket.md"] = Expect("skipped", "socket", "unix socket")
    os.symlink("/etc/passwd", root / "passwd.md")
    manifest["passwd.md"] = Expect("skipped", "之外", "symlink to /etc/passwd")
    os.symlink("/etc", root / "etc_link")
    manifest["etc_link/"] = Expect("skipped", "之外", "symlink to a folder outside")
    os.symlink(root / "good/随访指南.md", root / "inside_link.md")
    manifest["inside_link.md"] = Expect("skipped", "导入范围内", "symlink to a file inside")
    os.symlink(root / "missing.md", root / "dangling.md")
    manifest["dangling.md"] = Expect("skipped", "不存在", "dangling symlink")
    write(".hidden.md", guideline("隐藏"), Expect("skipped", "隐藏", "hidden file"))
    write(".git/config.md", guideline("git"), Expect("skipped", "隐藏", "hidden folder"))
    manifest.pop(".git/config.md")
    manifest[".git/"] = Expect("skipped", "隐藏", "hidden folder (not walked)")

    if big_mb:
        with (root / "big.txt").open("w", encoding="utf-8") as f:
            for _ in range(int(big_mb * 2**20 / len(PARAGRAPH.encode("utf-8")))):
                f.write(PARAGRAPH + "\n")
        manifest["big.txt"] = Expect("skipped", "", f"{big_mb:g} MB text")
    return manifest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--sample", type=Path, default=None)
    parser.add_argument("--big-mb", type=float, default=0)
    args = parser.parse_args()
    manifest = build(args.folder, args.sample, big_mb=args.big_mb)
    json.dump({k: vars(v) for k, v in manifest.items()}, sys.stdout, ensure_ascii=False, indent=1)
    print(f"\n{len(manifest)} cases in {args.folder}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
