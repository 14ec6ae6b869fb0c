"""The README and docs/ link only to files and headings that exist, and the index lists every page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.real_servers import REPO

DOCS = REPO / "docs"
PAGES = sorted([REPO / "README.md", *DOCS.glob("*.md")])

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
INDENTED_CODE = re.compile(r"^(?: {4}|\t).*$", re.MULTILINE)
INLINE_CODE = re.compile(r"(`+).+?\1", re.DOTALL)
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # http:, https:, mailto:, ...


def _prose(markdown: str) -> str:
    """The text outside code: fenced blocks, indented blocks and code spans hold no links."""
    without_fences = FENCE.sub("", markdown)
    return INLINE_CODE.sub("", INDENTED_CODE.sub("", without_fences))


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = INLINE_CODE.sub(lambda match: match.group(0).strip("`"), heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a linked heading anchors on its text
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every anchor the page's headings make, with GitHub's -1, -2 for repeats."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for heading in HEADING.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
        slug = _slug(heading)
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def relative_links(page: Path) -> list[str]:
    """The page's links that point into this repository."""
    targets = LINK.findall(_prose(page.read_text(encoding="utf-8")))
    return [target for target in targets if not EXTERNAL.match(target)]


def broken_links(page: Path) -> list[str]:
    """Each relative link of the page whose file, or heading, does not exist."""
    broken: list[str] = []
    for target in relative_links(page):
        path_part, _, anchor = target.partition("#")
        destination = (page.parent / path_part).resolve() if path_part else page
        if not destination.exists():
            broken.append(f"{target}: no such file")
        elif anchor and destination.suffix == ".md" and anchor not in anchors(destination):
            broken.append(f"{target}: {destination.name} has no heading with that anchor")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=[page.relative_to(REPO).as_posix() for page in PAGES])
def test_every_relative_link_reaches_an_existing_file_and_heading(page: Path) -> None:
    assert broken_links(page) == []


def test_a_link_to_a_missing_file_or_heading_is_reported(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other\n\n## Known `heading`: yes\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md#known-heading-yes) [gone](missing.md) [bad](other.md#unknown) [self](#page)\n"
        "`[code](missing.md)`\n\n    [indented](missing.md)\n\n```\n[fenced](missing.md)\n```\n"
        "[web](https://example.com/missing.md)\n\n# Page\n",
        encoding="utf-8",
    )
    assert broken_links(page) == [
        "missing.md: no such file",
        "other.md#unknown: other.md has no heading with that anchor",
    ]


def test_the_index_lists_every_page_in_docs() -> None:
    listed = {target.partition("#")[0] for target in relative_links(DOCS / "index.md")}
    pages = {page.name for page in DOCS.glob("*.md")} - {"index.md"}
    assert pages - listed == set()


def test_the_readme_links_to_the_docs_index() -> None:
    assert "docs/index.md" in relative_links(REPO / "README.md")
