"""Every relative link and anchor in the project's Markdown resolves.

The README is short and sends readers to one page per topic under docs/; a page that moves or a
heading that is renamed would leave a link pointing nowhere. For README.md, docs/*.md and every
other Markdown file in the repository (reports, benchmark results, provenance notes), each link
`[text](target)`, image `![alt](target)` and reference definition `[label]: target` that is not a
URL must name a file or folder of the repository, relative to the linking file, and a `#anchor`
into a Markdown file (or into the same file) must be the GitHub anchor of one of its headings.
Code blocks and code spans are not Markdown, so links inside them are not checked.

A target must also be in git or about to be (tracked, or untracked but not ignored): a link to a
DVC output or a build product that a fresh clone does not have is reported as missing.
"""

from __future__ import annotations

import re
import subprocess
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[1]

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_CODE_SPAN = re.compile(r"(`+)(?!`)((?:(?!\n[ \t]*\n).)+?)(?<!`)\1(?!`)", re.S)  # not across paragraphs
_COMMENT = re.compile(r"<!--.*?-->", re.S)
# [text](target) or [text](target "title"); the text may hold `[x]` and wrap across lines
_INLINE = re.compile(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*(<[^>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)"
                     r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
_DEFINITION = re.compile(r"^ {0,3}\[([^\]]+)\]:[ \t]*(<[^>\n]*>|\S+)", re.M)
_HTML_ANCHOR = re.compile(r"<a\s[^>]*\b(?:name|id)\s*=\s*[\"']([^\"']+)[\"']", re.I)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
# Unicode categories GitHub strips from a heading's text when it makes the anchor (github-slugger,
# whose fixtures are GitHub's own rendering): punctuation except connectors (`_`) and `-`, symbols,
# other numbers (², ½), controls, formats, private use, unassigned, separators except ` `.
_STRIPPED = {"No", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So",
             "Cc", "Cf", "Co", "Cn", "Zs", "Zl", "Zp"}


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading of this (rendered) text, before de-duplication:
    lower case; letters (any script), marks, digits, `_`, `-` kept; each space becomes `-`;
    everything else dropped."""
    kept = [c for c in heading.lower()
            if c in " -" or unicodedata.category(c) not in _STRIPPED]
    return "".join(kept).replace(" ", "-")


def _heading_text(markdown: str) -> str:
    """What a heading's inline Markdown renders to, as far as the anchor depends on it."""
    text = _CODE_SPAN.sub(lambda m: m.group(2).strip(), markdown)
    text = re.sub(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([^)]*\)", r"\1", text)  # links, images
    text = re.sub(r"<[^>]+>", "", text)                                        # inline HTML
    text = re.sub(r"(?<![\w])_(.+?)_(?![\w])", r"\1", text)                    # _emphasis_
    return text.strip()


def _blank(match: re.Match[str]) -> str:
    """The same number of lines, without the text (so line numbers stay right)."""
    return re.sub(r"[^\n]", " ", match.group(0))


def _prose(text: str) -> list[str]:
    """The file's lines with fenced code blocks emptied (line numbers kept)."""
    lines, fence = text.split("\n"), None
    for i, line in enumerate(lines):
        opening = _FENCE.match(line)
        if fence is None and opening:
            fence = opening.group(1)
            lines[i] = ""
        elif fence is not None:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence) \
                    and not line.strip()[len(opening.group(1)):].strip():
                fence = None
            lines[i] = ""
    return lines


def anchors(text: str) -> set[str]:
    """Every anchor GitHub would give this Markdown text: one per heading, repeats numbered
    `-1`, `-2`, ... in document order, plus explicit `<a name=...>` / `id=...` anchors."""
    lines = _prose(_COMMENT.sub(_blank, text))
    headings = []
    for i, line in enumerate(lines):
        atx = _ATX.match(line)
        if atx:
            headings.append(atx.group(2) or "")
        elif (_SETEXT.match(line) and i > 0 and lines[i - 1].strip()
              and not lines[i - 1].lstrip().startswith(("|", "-", "*", "+", ">", "#"))
              and not _SETEXT.match(lines[i - 1])):
            headings.append(lines[i - 1].strip())
    seen: dict[str, int] = {}
    found = set(_HTML_ANCHOR.findall(text))
    for heading in headings:
        slug = base = github_slug(_heading_text(heading))
        while slug in seen:        # github-slugger: bump the base's counter until the slug is new
            seen[base] += 1
            slug = f"{base}-{seen[base]}"
        seen[slug] = 0
        found.add(slug)
    return found


@dataclass(frozen=True)
class Link:
    line: int
    target: str


def links(text: str) -> list[Link]:
    """The targets of every inline link, image and reference definition outside code."""
    prose = _COMMENT.sub(_blank, "\n".join(_prose(text)))
    prose = _CODE_SPAN.sub(_blank, prose)
    found = []
    for pattern, group in ((_INLINE, 2), (_DEFINITION, 2)):
        for match in pattern.finditer(prose):
            target = match.group(group).strip()
            if target.startswith("<") and target.endswith(">"):
                target = target[1:-1]
            found.append(Link(prose.count("\n", 0, match.start(group)) + 1, target))
    return sorted(found, key=lambda link: link.line)


def repository_files(root: Path) -> set[str] | None:
    """Tracked and not-ignored untracked files, relative to root; None outside a git checkout."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                                cwd=root, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return {name for name in listed.decode().split("\0") if name}


def broken_links(path: Path, root: Path, files: set[str] | None = None) -> list[str]:
    """Why each broken relative link in the Markdown file `path` is broken (empty: none is).
    `files`: the repository's files (relative to root) a target must be among; None = any
    existing file."""
    text = path.read_text(encoding="utf-8")
    folders = None if files is None else {p.as_posix() for f in files for p in Path(f).parents}
    problems, cache = [], {}
    where = path.relative_to(root)
    for link in links(text):
        if not link.target or _SCHEME.match(link.target) or link.target.startswith("//"):
            continue
        raw_path, _, fragment = link.target.partition("#")
        raw_path = unquote(raw_path.split("?", 1)[0])
        if raw_path:
            target = (root / raw_path.lstrip("/")) if raw_path.startswith("/") else (path.parent / raw_path)
            target = Path(*_normalise(target, root))
            try:
                relative = target.relative_to(root)
            except ValueError:
                problems.append(f"{where}:{link.line}: {link.target} points outside the repository")
                continue
            name = relative.as_posix()
            exists = target.exists() if files is None else (
                name in files or name in folders or name == ".")
            if not exists:
                problems.append(f"{where}:{link.line}: {link.target}: no such file in the repository "
                                f"({name})")
                continue
        else:
            target = path
        if fragment and target.suffix.lower() == ".md" and target.is_file():
            if target not in cache:
                cache[target] = anchors(target.read_text(encoding="utf-8"))
            if unquote(fragment) not in cache[target]:
                problems.append(f"{where}:{link.line}: {link.target}: {target.relative_to(root)} has no "
                                f"heading with the anchor #{unquote(fragment)}")
    return problems


def _normalise(target: Path, root: Path) -> list[str]:
    """target's parts with `.` and `..` resolved lexically (symlinks are not followed)."""
    parts: list[str] = []
    for part in target.parts:
        if part == "..":
            if parts:
                parts.pop()
        elif part != ".":
            parts.append(part)
    return parts


def _markdown_files() -> list[str]:
    files = repository_files(ROOT)
    if files is None:
        return sorted(p.relative_to(ROOT).as_posix() for p in [ROOT / "README.md", *ROOT.glob("docs/*.md"),
                                                                 *ROOT.glob("reports/**/*.md")])
    return sorted(f for f in files if f.lower().endswith(".md") and (ROOT / f).is_file())


MARKDOWN = _markdown_files()


def test_the_readme_and_every_docs_page_are_checked():
    assert "README.md" in MARKDOWN
    assert {f for f in MARKDOWN if f.startswith("docs/")} == {
        p.relative_to(ROOT).as_posix() for p in ROOT.glob("docs/*.md")}


@pytest.mark.parametrize("name", MARKDOWN)
def test_every_relative_link_and_anchor_resolves(name):
    problems = broken_links(ROOT / name, ROOT, repository_files(ROOT))
    assert not problems, "broken links:\n" + "\n".join(problems)



def test_the_readme_is_short_and_links_every_docs_page():
    """What a newcomer reads first: a front door of at most 100 lines (results live in
    reports/README.md), a Quick start with exactly the two commands, a link to the results page
    and to every topic page under docs/."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 100
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", quick, re.S).group(1)
    assert [line.split("#")[0].strip() for line in block.splitlines()] == ["make repro", "make test"]
    linked = {unquote(link.target.partition("#")[0]) for link in links(readme)}
    assert {p.relative_to(ROOT).as_posix() for p in ROOT.glob("docs/*.md")} <= linked
    assert "reports/README.md" in linked
    for section in ("Layout", "Extending it", "Documentation"):
        assert f"\n## {section}\n" in readme

# --- the checker itself ---------------------------------------------------------------------------

@pytest.mark.parametrize("heading, slug", [
    ("Quick start", "quick-start"),
    ("Human evaluation (Table 4)", "human-evaluation-table-4"),
    ("Other output layers: contextual temperature and continuous output",
     "other-output-layers-contextual-temperature-and-continuous-output"),
    ("Same numbers on any machine", "same-numbers-on-any-machine"),
    ("heading with an _ underscore", "heading-with-an-_-underscore"),
    ("heading with a - dash", "heading-with-a---dash"),
    ("exchange.bind_headers(exchange, routing [, bindCallback])",
     "exchangebind_headersexchange-routing--bindcallback"),
    ("en–dash", "endash"),
    ("apostrophe’s should be trimmed", "apostrophes-should-be-trimmed"),
    ("Привет non-latin 你好", "привет-non-latin-你好"),
    ("Über Café", "über-café"),
    ("Context² vs Context", "context-vs-context"),      # ² is Other_Number: GitHub drops it
    ("I ♥ unicode", "i--unicode"),
])
def test_github_slug(heading, slug):
    assert github_slug(heading) == slug


def test_anchors_follow_github_rendering():
    text = "\n".join([
        "# Title", "## Shared helpers — `pipeline/infra/io.py`", "## A [link](x.md) and *emphasis*",
        "## Repeat", "## Repeat", "### Repeat", "## Repeat 1",
        "```bash", "# a shell comment, not a heading", "```",
        "Setext heading", "--------------", "", "<a name=\"custom\"></a>",
    ])
    assert anchors(text) == {"title", "shared-helpers--pipelineinfraiopy", "a-link-and-emphasis",
                             "repeat", "repeat-1", "repeat-2", "repeat-1-1", "setext-heading", "custom"}


def test_links_skip_code_and_read_wrapped_text():
    text = ("See [the\n  page](b.md#part) and ![img](p.png \"t\").\n"
            "`[not](a-link.md)` and\n```\n[nor](this.md)\n```\n[ref]: c.md\n"
            "[web](https://example.org/x) [mail](mailto:a@b.c)\n")
    assert links(text) == [Link(2, "b.md#part"), Link(2, "p.png"), Link(7, "c.md"),
                           Link(8, "https://example.org/x"), Link(8, "mailto:a@b.c")]


def test_the_checker_finds_a_broken_link_and_a_broken_anchor(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "topic.md").write_text("# Topic\n\n## Part one\n\ntext\n")
    (tmp_path / "README.md").write_text(
        "# Project\n\n## Where to go next\n\n"
        "- [ok](docs/topic.md) [ok](docs/topic.md#part-one) [ok](#where-to-go-next) [ok](docs/)\n"
        "- [gone](docs/missing.md)\n"
        "- [bad anchor](docs/topic.md#part-two)\n"
        "- [bad local anchor](#nowhere)\n"
        "- [outside](../elsewhere.md)\n"
        "- [web](https://example.org/missing.md)\n")
    problems = broken_links(tmp_path / "README.md", tmp_path)
    assert len(problems) == 4, problems
    assert "README.md:6: docs/missing.md: no such file" in problems[0]
    assert "README.md:7: docs/topic.md#part-two: docs/topic.md has no heading with the anchor #part-two" \
        in problems[1]
    assert "README.md:8: #nowhere: README.md has no heading with the anchor #nowhere" in problems[2]
    assert "README.md:9: ../elsewhere.md points outside the repository" in problems[3]
    # against the repository's file list: a file that exists but is not in git (ignored) is missing
    assert broken_links(tmp_path / "docs" / "topic.md", tmp_path, files={"README.md"}) == []
    (tmp_path / "docs" / "topic.md").write_text("# Topic\n\n[readme](../README.md) [built](../site/x.html)\n")
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "x.html").write_text("")
    problems = broken_links(tmp_path / "docs" / "topic.md", tmp_path, files={"README.md", "docs/topic.md"})
    assert problems == ["docs/topic.md:3: ../site/x.html: no such file in the repository (site/x.html)"]
