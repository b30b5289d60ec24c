"""The README and docs/: CI runs the README's own test command, the first screen starts a newcomer, every
link and picture is there, and no figure of the research notes was lost when they moved to docs/."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, *DOCS]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"```.*?```", re.S)

INSTALL = "python3.11 -m venv .venv && . .venv/bin/activate && pip install -e . && python main.py"
TESTS = 'python3.11 -m venv .venv && . .venv/bin/activate && pip install -e ".[dev,ray,sb3]" && python -m pytest -n 2 -q'


def code_lines(text: str) -> list[str]:
    """The lines inside the page's fenced code blocks."""
    return [ln.strip() for block in FENCE.findall(text) for ln in block.splitlines()[1:-1]]


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, re.M)}


def test_ci_runs_exactly_the_readmes_test_command() -> None:
    readme = code_lines(README.read_text())
    assert TESTS in readme and INSTALL in readme
    ci = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert TESTS in ci


def test_the_first_screen_gets_a_newcomer_to_a_game_and_a_training_run() -> None:
    first = "\n".join(README.read_text().splitlines()[:40])
    assert INSTALL in first  # installs and opens the window on the Play tab
    assert "python main.py play --text" in first
    assert "python main.py train --agent ntuple --minutes 2" in first
    assert "**Start**" in first and "Play tab" in first
    assert "sudo" not in README.read_text()  # a container or a minimal system may have no sudo


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_link_and_picture_is_there(page: Path) -> None:
    text = FENCE.sub("", page.read_text())
    targets = LINK.findall(text)
    assert targets or page.name == "interfaces.md"
    for target in targets:
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        where = (page.parent / path).resolve() if path else page
        assert where.exists(), f"{page.name}: {target} does not exist"
        if anchor and where.suffix == ".md":
            assert anchor in anchors(where), f"{page.name}: no heading #{anchor} in {where.name}"


def test_the_research_notes_moved_to_docs_whole() -> None:
    """The figures and studies the README used to hold are in docs/, each with the command behind it."""
    results = (ROOT / "docs" / "results.md").read_text()
    studies = (ROOT / "docs" / "ntuple-studies.md").read_text()
    guide = (ROOT / "docs" / "guide.md").read_text()
    for picture in ("learning-curves-ntuple-2h.png",):
        assert f"]({picture})" in results
    for picture in (
        "checkpoint-curve-ntuple-2h.png",
        "checkpoint-curve-stages.png",
        "checkpoint-curve-one-stage-2h.png",
        "checkpoint-curve-restart.png",
    ):
        assert f"]({picture})" in studies
    # a few figures with their commands, one from each part
    assert (
        "**248,711**" in results
        and "eval --checkpoint CK --fast --seed 1000000 --games 1000 --fast-threads 2" in results
    )
    assert "python main.py bench gui --seconds 5 --rounds 1" in results
    assert "112,331" in studies and "python scripts/ab_cpp_ntuple.py" in studies
    assert "**79,103**" in studies
    assert "python main.py bench sweep" in guide and "ray start --head --port=6379" in guide
    # every screenshot the tabs are described with
    for picture in re.findall(r"\]\((screenshot-[\w-]+\.png)\)", guide):
        assert (ROOT / "docs" / picture).exists()


def test_docs_name_no_file_that_is_gone() -> None:
    """Paths to the code in the docs (``engine/store/...``, ``studio/progress.py``) exist."""
    for page in PAGES:
        for path in set(
            re.findall(r"`((?:engine|agents|studio|scripts|docs|resources)/[\w/.-]+)`", page.read_text())
        ):
            assert (ROOT / path).exists(), f"{page.name}: {path} does not exist"
