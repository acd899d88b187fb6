"""Every relative link of the documents resolves: the file or folder it names exists, and its
``#anchor``, if any, is a heading of the Markdown file it points to, as GitHub derives anchors.
And the README stays a page a newcomer reads in a few minutes (under 10,000 bytes), its first
policy the example file it names.

Links inside fenced code blocks and inline code are not links; links with a scheme (``https:``,
``mailto:``) point outside the repository and are not checked.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple
from urllib.parse import unquote

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]

DOCUMENTS = sorted(
    {
        ROOT / "README.md",
        ROOT / "bench" / "README.md",
        ROOT / "examples" / "README.md",
        *(ROOT / "docs").glob("*.md"),
    }
)

README_LIMIT = 10_000

FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"(`+).*?\1")
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^()\s>]*(?:\([^()\s]*\))?)>?")
REFERENCE_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


class Link(NamedTuple):
    document: Path
    line: int
    target: str

    def __str__(self) -> str:
        return f"{self.document.relative_to(ROOT)}:{self.line}: {self.target}"


def prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) of the lines outside fenced code blocks, inline code blanked out."""
    fenced = False
    for number, line in enumerate(text.splitlines(), start=1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)


def links(document: Path) -> Iterator[Link]:
    for number, line in prose_lines(document.read_text()):
        for inline in INLINE_LINK.finditer(line):
            yield Link(document, number, inline.group(1))
        if reference := REFERENCE_LINK.match(line):
            yield Link(document, number, reference.group(1))


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: Markdown emphasis and code marks and a link's target
    dropped, lowercased, every character but letters, digits, ``_``, ``-`` and spaces dropped,
    each space a ``-``."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(document: Path) -> set[str]:
    """The anchors of a document's headings; a repeated one gets ``-1``, ``-2``... as on GitHub."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    fenced = False
    for line in document.read_text().splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced or not (match := HEADING.match(line)):
            continue
        anchor = github_anchor(match.group(2))
        count = seen.get(anchor, 0)
        seen[anchor] = count + 1
        found.add(anchor if count == 0 else f"{anchor}-{count}")
    return found


def relative_links() -> list[Link]:
    return [
        link
        for document in DOCUMENTS
        for link in links(document)
        if link.target and not SCHEME.match(link.target)
    ]


RELATIVE_LINKS = relative_links()


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("Kubernetes versions", "kubernetes-versions"),
        ("Trying `deploy/` on the local control plane", "trying-deploy-on-the-local-control-plane"),
        ("One `make bench` on Kubernetes 1.37.2", "one-make-bench-on-kubernetes-1372"),
        ("Faults: `make chaos`", "faults-make-chaos"),
        ("Claims (the storage phase)", "claims-the-storage-phase"),
        ("Without a cluster: `validate`, `simulate`", "without-a-cluster-validate-simulate"),
        ("policy-scheduler: architecture", "policy-scheduler-architecture"),
        ("The state — cache and queue", "the-state--cache-and-queue"),
        ("Why *our own* informers", "why-our-own-informers"),
        ("See [the API](docs/policy-api.md)", "see-the-api"),
        ("snake_case stays", "snake_case-stays"),
    ],
)
def test_github_anchor(heading: str, anchor: str) -> None:
    assert github_anchor(heading) == anchor


@pytest.mark.parametrize(
    ("markdown", "targets"),
    [
        ("see [the API](docs/policy-api.md).", ["docs/policy-api.md"]),
        ("[a](x.md#b) and [c](#d)", ["x.md#b", "#d"]),
        ("[`make bench`](bench/README.md)", ["bench/README.md"]),
        ('[t](docs/a.md "a title")', ["docs/a.md"]),
        ("![chart](results/burst.svg)", ["results/burst.svg"]),
        ("[ref]: docs/operations.md#health", ["docs/operations.md#health"]),
        ("`[not](a-link.md)` in code", []),
        ("```\n[not](a-link.md)\n```", []),
    ],
)
def test_links_are_found(tmp_path: Path, markdown: str, targets: list[str]) -> None:
    document = tmp_path / "doc.md"
    document.write_text(markdown + "\n")
    assert [link.target for link in links(document)] == targets


def test_the_documents_have_links() -> None:
    assert {link.document for link in RELATIVE_LINKS} >= {
        ROOT / "README.md",
        ROOT / "docs" / "contributing.md",
    }


@pytest.mark.parametrize("link", RELATIVE_LINKS, ids=str)
def test_link_resolves(link: Link) -> None:
    path, _, anchor = unquote(link.target).partition("#")
    target = (link.document.parent / path).resolve() if path else link.document
    assert target.exists(), f"{link}: no such file or folder"
    assert target.is_relative_to(ROOT), f"{link}: outside the repository"
    if anchor:
        assert target.suffix == ".md", f"{link}: an anchor into a file that is not Markdown"
        assert anchor in anchors(target), f"{link}: no heading of {target.name} has this anchor"


def test_the_readme_is_short() -> None:
    size = len((ROOT / "README.md").read_bytes())
    assert size < README_LIMIT, f"README.md is {size} bytes; move reference material to docs/"


def test_the_readmes_first_policy_is_the_example_it_names() -> None:
    readme = (ROOT / "README.md").read_text()
    shown = re.findall(r"^```yaml\n(.*?)^```$", readme, re.M | re.S)
    assert len(shown) == 1, "the README shows one policy"
    example = ROOT / "examples" / "policies" / "zone.yaml"
    assert yaml.safe_load(shown[0]) == yaml.safe_load(example.read_text())
