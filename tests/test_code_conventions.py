"""Two conventions of the code, checked on the real tree and shown to fail on a planted line.

* **No history in code or docs.** Why a line exists lives in ``git log``; the code and the docs
  say the fact or the rule itself. So ``pipeline/``, ``stages/``, ``scripts/``,
  ``benchmarks/*.py``, ``docs/*.md`` and ``README.md`` hold no ticket reference ("issue 12",
  "issue #12", "issues 18 §2", "issue-33") and no pointer into the engineering guide ("GUIDE §12").
  Dated records (``benchmarks/results/``, ``reports/``) are history by design and not checked.
* **One spelling of the Baseline's name.** Code names the Baseline variant
  ``pipeline.models.registry.BASELINE``; the literal ``"baseline"`` appears only where that name
  is defined or is data: the registry, the training regimes, and the params schema's defaults
  (``pipeline/infra`` sits below ``pipeline/models`` and cannot import it). A dict key spelled
  ``"baseline"`` is a field name of a written file (results.json's ``{"baseline": ...}``), not
  the variant, and is allowed.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

HISTORY = re.compile(r"\bissues?[\s-]*#?\d|\bGUIDE\s*§", re.IGNORECASE)
BASELINE = "baseline"
BASELINE_HOMES = frozenset({"pipeline/models/registry.py", "pipeline/graph/regimes.py",
                            "pipeline/infra/schema/params.py"})


def checked_files(root: Path) -> list[Path]:
    """The files the no-history rule covers under ``root``: every text file of the code
    folders (caches aside), the benchmark scripts, the docs pages and the README."""
    files = [p for folder in ("pipeline", "stages", "scripts") if (root / folder).is_dir()
             for p in (root / folder).rglob("*")
             if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"]
    files += sorted((root / "benchmarks").glob("*.py")) + sorted((root / "docs").glob("*.md"))
    files += [root / "README.md"] if (root / "README.md").is_file() else []
    return sorted(files)


def history_references(files: list[Path], root: Path) -> list[str]:
    """``path:line: text`` for every line of ``files`` that cites a ticket or a GUIDE section."""
    found = []
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            if HISTORY.search(line):
                found.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    return found


def baseline_literals(root: Path) -> list[str]:
    """``path:line`` for every ``"baseline"`` string constant in ``pipeline/`` and ``stages/``
    outside :data:`BASELINE_HOMES`, dict keys (file field names) aside."""
    found = []
    for path in sorted([*(root / "pipeline").rglob("*.py"), *(root / "stages").rglob("*.py")]):
        rel = path.relative_to(root).as_posix()
        if rel in BASELINE_HOMES:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
        keys = {id(k) for node in ast.walk(tree) if isinstance(node, ast.Dict)
                for k in node.keys if k is not None}
        found += [f"{rel}:{node.lineno}" for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and node.value == BASELINE
                  and id(node) not in keys]
    return found


def test_code_and_docs_cite_no_issue_and_no_guide_section() -> None:
    files = checked_files(REPO)
    assert len(files) > 100 and REPO / "README.md" in files       # the rule sees the tree
    assert history_references(files, REPO) == [], "state the fact instead; history is git log"


def test_a_planted_reference_is_found_and_prose_about_issues_is_not(tmp_path: Path) -> None:
    (tmp_path / "pipeline").mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "pipeline" / "m.py").write_text(
        '"""Frozen-base cache (issue 20 §1)."""\n'
        "# we address the issue of explainability; two issues remain\n"
        "X = 1  # see Issue #7\n")
    (tmp_path / "docs" / "page.md").write_text(
        "A corpus without trends (GUIDE §12).\nThe guide's section twelve.\n"
        "Fixed by issue-33; issues 18 §2 too.\n")
    (tmp_path / "README.md").write_text("# futurelm\n")
    files = checked_files(tmp_path)
    assert [f.relative_to(tmp_path).as_posix() for f in files] == [
        "README.md", "docs/page.md", "pipeline/m.py"]
    assert history_references(files, tmp_path) == [
        "docs/page.md:1: A corpus without trends (GUIDE §12).",
        "docs/page.md:3: Fixed by issue-33; issues 18 §2 too.",
        "pipeline/m.py:1: \"\"\"Frozen-base cache (issue 20 §1).\"\"\"",
        "pipeline/m.py:3: X = 1  # see Issue #7"]


def test_the_baseline_literal_lives_only_in_its_homes() -> None:
    assert all((REPO / home).is_file() for home in BASELINE_HOMES)
    assert baseline_literals(REPO) == [], "name the variant registry.BASELINE"


def test_a_planted_baseline_literal_is_found_and_a_field_name_is_not(tmp_path: Path) -> None:
    for folder in ("pipeline/models", "pipeline/reports", "stages"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "pipeline/models/registry.py").write_text('BASELINE = "baseline"\n')
    (tmp_path / "pipeline/reports/out.py").write_text(
        '"""The baseline row."""\n'
        'row = {"baseline": 1.0}\n'
        "if name == 'baseline':\n"
        "    pass\n")
    (tmp_path / "stages/train.py").write_text('VARIANTS = ["frequency", "baseline"]\n')
    assert baseline_literals(tmp_path) == ["pipeline/reports/out.py:3", "stages/train.py:1"]
