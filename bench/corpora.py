"""Rebuild the third-party evaluation libraries described in bench/corpora.md from plain git clones.

The documents themselves are not committed (their licences do not allow it); this script extracts them from a
clone of each source repository, checked out at the pinned commit, into a folder ready for `python ingest.py FOLDER`:

    git clone https://github.com/goldengrape/goldengrape.github.io /tmp/goldengrape
    git -C /tmp/goldengrape checkout 389dc3c195c1863f9a06d9d958ef0137d32197db
    python bench/corpora.py goldengrape /tmp/goldengrape corpora/goldengrape

Libraries (name: source repository):
    goldengrape   goldengrape/goldengrape.github.io     Chinese ophthalmology blog posts, Markdown, byte for byte
    myzd          cash2one/myzd.com                     Chinese medical web articles, PHP templates -> .html
    parentguide   0b00101111/parentguidebook-eyecare    Chinese child eye-care articles, Markdown (held out)
    pdfguides     wuzhanbo1007/pain-follow-up-agent     Chinese clinical guidelines / expert consensus, PDF
    docxarticles  goldengrape/goldengrape.github.io     three blog posts and one myzd page (a table) as DOCX;
                  + cash2one/myzd.com (--myzd CLONE)     needs python-docx

Standard library only, except `docxarticles`, which imports python-docx.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

PINNED = {
    "goldengrape": ("goldengrape/goldengrape.github.io", "389dc3c195c1863f9a06d9d958ef0137d32197db"),
    "myzd": ("cash2one/myzd.com", "dae3dc831811f2b43e018863ed4adc1690a2e91d"),
    "parentguide": ("0b00101111/parentguidebook-eyecare", "d32ef6f67188689d93fba519ded18240448c4b33"),
    "pdfguides": ("wuzhanbo1007/pain-follow-up-agent", "3865954e054c97fd35d83458ce5395eae9fc1eb6"),
    "docxarticles": ("goldengrape/goldengrape.github.io", "389dc3c195c1863f9a06d9d958ef0137d32197db"),
}

HAN = re.compile(r"[\u4e00-\u9fff]")


def han_count(text: str) -> int:
    return len(HAN.findall(text))


# --------------------------------------------------------------------------------------------------------------
# goldengrape: posts/ophthalmology/<slug>/index.md, kept byte for byte (Nikola metadata comment included)
# --------------------------------------------------------------------------------------------------------------

MIN_HAN_POST = 100  # a post with fewer Chinese characters is English or code, not a Chinese article


def extract_goldengrape(clone: Path, out: Path) -> list[str]:
    written = []
    for post in sorted((clone / "posts" / "ophthalmology").rglob("index.md")):
        raw = post.read_bytes()
        if han_count(raw.decode("utf-8")) < MIN_HAN_POST:
            print(f"skip (not a Chinese article): {post.relative_to(clone)}", file=sys.stderr)
            continue
        name = post.parent.name.replace(" ", "") + ".md"  # slug folders may carry stray spaces
        (out / name).write_bytes(raw)
        written.append(name)
    return written


# --------------------------------------------------------------------------------------------------------------
# myzd: themes/<theme>/views/article/pages/<id>.php -> <id>.html (PHP stripped, HTML body as written)
# --------------------------------------------------------------------------------------------------------------

PHP_BLOCK = re.compile(r"<\?php.*?(\?>|\Z)", re.S)
MIN_HAN_PAGE = 80  # below this a page is a shell: a title, a "watch the video" link or a picture caption


class _TextOnly(HTMLParser):
    """Visible text of an HTML fragment (style and script skipped); only used to compare and filter pages."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("style", "script"):
            self._skip += 1

    def handle_endtag(self, tag):
        if tag in ("style", "script") and self._skip:
            self._skip -= 1

    def handle_data(self, data):
        if not self._skip:
            self.parts.append(data)


def visible_text(html: str) -> str:
    parser = _TextOnly()
    parser.feed(html)
    parser.close()
    return "".join(parser.parts)


def theme_number(path: Path) -> int:
    # themes/v5/views/... -> 5
    return int(re.sub(r"\D", "", path.parts[-5]) or 0)


def extract_myzd(clone: Path, out: Path) -> list[str]:
    # 1. one page per id: the same id in several themes is the same article; keep the newest theme's copy
    by_id: dict[str, Path] = {}
    for page in sorted(clone.glob("themes/*/views/article/pages/*.php")):
        page_id = page.stem
        if page_id not in by_id or theme_number(page) > theme_number(by_id[page_id]):
            by_id[page_id] = page
    # 2. strip PHP, drop shells, drop pages whose visible text repeats an earlier id (e.g. 3023bd01 = 3022bd01)
    seen: dict[str, str] = {}
    written = []
    for page_id in sorted(by_id, key=natural_key):
        html = PHP_BLOCK.sub("", by_id[page_id].read_text(encoding="utf-8-sig")).lstrip()
        text = visible_text(html)
        if han_count(text) < MIN_HAN_PAGE:
            print(f"skip (empty or shell page): {page_id}", file=sys.stderr)
            continue
        key = hashlib.sha1(re.sub(r"\s+", "", text).encode()).hexdigest()
        if key in seen:
            print(f"skip (same text as {seen[key]}): {page_id}", file=sys.stderr)
            continue
        seen[key] = page_id
        name = page_id + ".html"
        (out / name).write_text(html, encoding="utf-8")
        written.append(name)
    return written


def natural_key(name: str):
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


# --------------------------------------------------------------------------------------------------------------
# parentguide: src/content/articles/zh/*.md, byte for byte (YAML front matter included)
# --------------------------------------------------------------------------------------------------------------


def extract_parentguide(clone: Path, out: Path) -> list[str]:
    written = []
    for article in sorted((clone / "src" / "content" / "articles" / "zh").glob("*.md")):
        (out / article.name).write_bytes(article.read_bytes())
        written.append(article.name)
    return written


# --------------------------------------------------------------------------------------------------------------
# pdfguides: the Chinese guideline / consensus PDFs of knowledge_base/raw whose text layer pdfplumber can read.
# Left out: English papers, an empty file, and four Chinese PDFs that pdfplumber opens with zero pages
# (pypdf reads them; see bench/corpora.md).
# --------------------------------------------------------------------------------------------------------------

PDF_FILES = {
    # path in the repository: sha256 of the file at the pinned commit
    "knowledge_base/raw/guidelines/中国神经病理性疼痛诊疗指南2024版.pdf": "fe7ba94688bbaafa1a92b89217cb09e38fce0551223c1a62e36936c7ad0722cb",
    "knowledge_base/raw/guidelines/神经病理性疼痛评估与管理中国指南2024版.pdf": "339a01fa09a68af92e8adb33d91bbb758a6eb2ccc633ea8c498dd5a12620dd52",
    "knowledge_base/raw/consensus/带状疱疹后神经痛中西医结合诊疗专家共识2026版.pdf": "4f9650fc74eb024bf53bc7974406e684e494a4d91ea711bebeae30c1d88274fb",
    "knowledge_base/raw/consensus/带状疱疹后神经痛诊疗中国专家共识2016.pdf": "7c654ac2d29008ecf5c68fdb7f078218fe61644801e7701fa8fc2b558c69a941",
    "knowledge_base/raw/guidelines/患者自控镇痛治疗癌痛专家共识2023.pdf": "7de6214b6ecf4202488789cb1e6a523951e199e05ac56aa695bd141fee8dab11",
    "knowledge_base/raw/guidelines/癌性疼痛中西医结合诊疗指南_中华中医药学会公示稿.pdf": "866224d6ec9224a5be30defdd0b079f9ed3c8e19aa6a4b23c1acc0271f4c7474",
    "knowledge_base/raw/consensus/癌症相关性疼痛.pdf": "ad47cc2cf2284feadbaf854b9a1bfaa45b8ed1eacaef5d5a1e080cf20c47df55",
    "knowledge_base/raw/consensus/癌痛全程管理中国专家共识2025.pdf": "e274f3c56f4a091c06862155ed6264da6c6d55e44c51c5853f29369135d72e54",
    "knowledge_base/raw/guidelines/癌痛规范化治疗中成药合理使用专家共识.pdf": "21892ba55f4f0288fcedff6ed5d3c0182233b43c85566c2379f65d82443c786d",
    "knowledge_base/raw/guidelines/纤维肌痛诊疗中国心身-风湿专家共识2023.pdf": "a75554d9c55e80b671bf66a66a4889af2d9dfae96a0ed3d315312c5780ce1ae9",
    "knowledge_base/raw/guidelines/阿片类药物不良反应综合防治专家共识2024版.pdf": "a77b108ca8f8b7c9615a2b93eb3baf5bea2b3b84c7638ddff83e8ead6604f46e",
    "knowledge_base/raw/guidelines/骨关节炎临床药物治疗专家共识.pdf": "7571bae443a89f452e7dfcfd340bc62dd98969559b018ef735f12a0022e0c552",
}


def extract_pdfguides(clone: Path, out: Path) -> list[str]:
    written = []
    for rel, digest in PDF_FILES.items():
        data = (clone / rel).read_bytes()
        if not data.startswith(b"%PDF"):
            raise SystemExit(f"{rel} is not a PDF (a Git LFS pointer? run `git lfs pull` first)")
        if digest and hashlib.sha256(data).hexdigest() != digest:
            raise SystemExit(f"{rel} differs from the pinned version")
        name = Path(rel).name
        (out / name).write_bytes(data)
        written.append(name)
    return written


# --------------------------------------------------------------------------------------------------------------
# docxarticles: three goldengrape posts rendered as Word documents, so the DOCX loader sees real prose.
# Headings, bullet and numbered lists, block quotes and **bold** runs are kept; images, HTML comments and the
# TEASER marker are dropped; the Nikola title becomes the document title.
# --------------------------------------------------------------------------------------------------------------

DOCX_POSTS = ["Eye_care_for_children", "vr-ar-exp-tldr", "refractive_index_of_cornea"]
DOCX_PAGES = ["82kp02"]  # myzd page with two Word-exported tables (MACIS score, 20-year survival)


def extract_docxarticles(clone: Path, out: Path, myzd_clone: Path | None = None) -> list[str]:
    try:
        import docx  # python-docx
    except ImportError:
        raise SystemExit("docxarticles needs python-docx: pip install python-docx") from None
    written = []
    posts = {p.parent.name.replace(" ", ""): p for p in (clone / "posts" / "ophthalmology").rglob("index.md")}
    for slug in DOCX_POSTS:
        document = markdown_to_docx(posts[slug].read_text(encoding="utf-8"), docx.Document())
        document.core_properties.author = "goldengrape"
        written.append(save_docx(document, out / (slug + ".docx")))
    if myzd_clone is None:
        print("no --myzd clone given: the table page is left out", file=sys.stderr)
        return written
    for page_id in DOCX_PAGES:
        page = max(myzd_clone.glob(f"themes/*/views/article/pages/{page_id}.php"), key=theme_number)
        html = PHP_BLOCK.sub("", page.read_text(encoding="utf-8-sig"))
        written.append(save_docx(html_to_docx(html, docx.Document()), out / (page_id + ".docx")))
    return written


def save_docx(document, path: Path) -> str:
    document.save(str(path))
    fix_docx_timestamps(path)
    return path.name


def markdown_to_docx(md: str, document):
    meta = re.match(r"\s*<!--(.*?)-->", md, re.S)
    if meta:
        title = re.search(r"^\.\. title:(.*)$", meta.group(1), re.M)
        if title and title.group(1).strip():
            document.add_heading(title.group(1).strip(), level=0)
            document.core_properties.title = title.group(1).strip()
        md = md[meta.end() :]
    md = re.sub(r"<!--.*?-->", "", md, flags=re.S)  # TEASER_END and commented-out drafts
    paragraph_lines: list[str] = []

    def flush():
        if paragraph_lines:
            add_runs(document.add_paragraph(), " ".join(paragraph_lines))
            paragraph_lines.clear()

    for line in md.splitlines():
        stripped = line.strip()
        if not stripped or re.fullmatch(r"-{3,}|\*{3,}", stripped) or stripped.startswith("!["):
            flush()
            continue
        heading = re.match(r"^(#{1,6})\s*(.+?)\s*#*$", stripped)
        bullet = re.match(r"^(\s*)[*+-]\s+(.*)$", line)
        numbered = re.match(r"^\s*\d+[.)]\s+(.*)$", line)
        if heading:
            flush()
            document.add_heading(strip_inline(heading.group(2)), level=min(len(heading.group(1)), 4))
        elif bullet:
            flush()
            style = "List Bullet 2" if len(bullet.group(1)) >= 2 else "List Bullet"
            add_runs(document.add_paragraph(style=style), bullet.group(2))
        elif numbered:
            flush()
            add_runs(document.add_paragraph(style="List Number"), numbered.group(1))
        elif stripped.startswith(">"):
            flush()
            add_runs(document.add_paragraph(style="Quote"), stripped.lstrip("> "))
        else:
            paragraph_lines.append(stripped)
    flush()
    return document


def strip_inline(text: str) -> str:
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # [label](url) -> label
    return text.replace("__", "").replace("**", "")


def add_runs(paragraph, text: str) -> None:
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    for i, part in enumerate(re.split(r"\*\*|__", text)):
        if part:
            paragraph.add_run(part).bold = i % 2 == 1


class _Blocks(HTMLParser):
    """An HTML fragment as a list of ("p", text) and ("table", rows of cell texts), in document order."""

    BREAKS = frozenset({"br", "p", "div", "li", "h1", "h2", "h3", "h4", "h5", "h6", "center"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[tuple] = []
        self._text: list[str] = []
        self._rows: list[list[str]] | None = None
        self._cell: list[str] | None = None
        self._skip = 0

    def _flush(self) -> None:
        text = re.sub(r"\s+", " ", "".join(self._text)).strip()
        self._text = []
        if not text:
            return
        if self._cell is not None:
            self._cell.append(text)
        else:
            self.blocks.append(("p", text))

    def handle_starttag(self, tag, attrs):
        if tag in ("style", "script"):
            self._skip += 1
        elif tag in self.BREAKS:
            self._flush()
        elif tag == "table":
            self._flush()
            self._rows = []
        elif tag == "tr" and self._rows is not None:
            self._rows.append([])
        elif tag in ("td", "th") and self._rows is not None:
            self._flush()
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("style", "script") and self._skip:
            self._skip -= 1
        elif tag in self.BREAKS:
            self._flush()
        elif tag in ("td", "th") and self._cell is not None:
            self._flush()
            if self._rows:
                self._rows[-1].append("\n".join(self._cell))
            self._cell = None
        elif tag == "table" and self._rows is not None:
            self._flush()
            self.blocks.append(("table", [row for row in self._rows if row]))
            self._rows = None

    def handle_data(self, data):
        if not self._skip:
            self._text.append(data.replace("\xa0", " "))


def html_to_docx(html: str, document):
    parser = _Blocks()
    parser.feed(html)
    parser.close()
    parser._flush()
    first = True
    for kind, content in parser.blocks:
        if kind == "p" and first:
            document.add_heading(content, level=0)  # the page title
            document.core_properties.title = content
        elif kind == "p":
            document.add_paragraph(content)
        else:
            columns = max(len(row) for row in content)
            table = document.add_table(rows=len(content), cols=columns)
            table.style = "Table Grid"
            for r, row in enumerate(content):
                for c, text in enumerate(row):
                    table.cell(r, c).text = text
        first = False
    return document


def fix_docx_timestamps(path: Path) -> None:
    """python-docx stamps the save time into docProps/core.xml; pin it so rebuilt files are identical."""
    import zipfile

    with zipfile.ZipFile(path) as zin:
        items = [(info, zin.read(info.filename)) for info in zin.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zout:
        for info, data in items:
            if info.filename == "docProps/core.xml":
                data = re.sub(rb"(<dcterms:(created|modified)[^>]*>)[^<]*", rb"\g<1>2020-01-01T00:00:00Z", data)
            info.date_time = (2020, 1, 1, 0, 0, 0)
            zout.writestr(info, data)


# --------------------------------------------------------------------------------------------------------------

EXTRACTORS = {
    "goldengrape": extract_goldengrape,
    "myzd": extract_myzd,
    "parentguide": extract_parentguide,
    "pdfguides": extract_pdfguides,
    "docxarticles": extract_docxarticles,
}


def check_commit(library: str, clone: Path) -> None:
    repo, commit = PINNED[library]
    try:
        head = subprocess.run(
            ["git", "-C", str(clone), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        print(f"warning: {clone} is not a git clone; expected {repo} at {commit}", file=sys.stderr)
        return
    if head != commit:
        print(
            f"warning: {clone} is at {head[:12]}, the library is pinned to {commit[:12]} "
            f"(git -C {clone} checkout {commit})",
            file=sys.stderr,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("library", choices=sorted(EXTRACTORS))
    parser.add_argument("clone", type=Path, help="work tree of the source repository at the pinned commit")
    parser.add_argument("out", type=Path, help="folder to write the library into (created if missing)")
    parser.add_argument("--myzd", type=Path, help="docxarticles only: clone of cash2one/myzd.com for the table page")
    args = parser.parse_args()
    check_commit(args.library, args.clone)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.library == "docxarticles":
        if args.myzd:
            check_commit("myzd", args.myzd)
        written = extract_docxarticles(args.clone, args.out, args.myzd)
    else:
        written = EXTRACTORS[args.library](args.clone, args.out)
    print(f"{args.library}: {len(written)} files written to {args.out}")


if __name__ == "__main__":
    main()
