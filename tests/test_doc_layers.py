"""The layer map in docs/design.md is the import contract in pyproject.toml, not a copy of it.

import-linter enforces the `layers` contract (`[[tool.importlinter.contracts]]`, top to bottom,
`a | b` = independent siblings); docs/design.md's "Layers" section draws the same layers for a
reader. A map that drifts from the contract (a layer left out, two layers swapped, a sibling
group split) misleads exactly the reader deciding where new code goes, so this test reads both:
the map's lines that start with `pipeline/` (`pipeline/<layer>` or `pipeline/<a> | pipeline/<b>`,
then what the layer holds after two spaces or on the following indented lines) must name the
contract's layers in the contract's order, with the same sibling groups. Every package under
`pipeline/` must be on the map, and docs/layout.md links to the map instead of keeping a copy.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def contract_layers(pyproject: str) -> list[frozenset[str]]:
    """The `layers` contract's layers of the `pipeline` container, top first; each a set of
    siblings."""
    contracts = tomllib.loads(pyproject)["tool"]["importlinter"]["contracts"]
    (layers,) = [c["layers"] for c in contracts
                 if c["type"] == "layers" and c.get("containers") == ["pipeline"]]
    return [frozenset(name.strip() for name in layer.split("|")) for layer in layers]


def map_layers(design: str) -> list[frozenset[str]]:
    """The layers drawn in the first code block of design.md's "## Layers" section, top first."""
    section = design.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"^```[^\n]*\n(.*?)^```", section, re.S | re.M).group(1)
    layers = []
    for line in block.splitlines():
        if not line.startswith("pipeline/"):
            continue        # stages/, and the indented lines saying what a layer group holds
        names = re.split(r"\s{2,}", line, maxsplit=1)[0]
        layers.append(frozenset(part.strip().removeprefix("pipeline/")
                                for part in names.split("|")))
    return layers


def test_the_contract_is_parsed():
    layers = contract_layers((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert frozenset({"graph", "reports"}) in layers and frozenset({"infra"}) in layers


def test_the_design_map_is_the_import_contract():
    contract = contract_layers((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    drawn = map_layers((ROOT / "docs" / "design.md").read_text(encoding="utf-8"))
    show = lambda layers: [" | ".join(sorted(layer)) for layer in layers]  # noqa: E731
    assert show(drawn) == show(contract), (
        "docs/design.md's layer map differs from pyproject.toml's layers contract:\n"
        f"  map:      {show(drawn)}\n  contract: {show(contract)}")


def test_every_pipeline_package_is_on_the_map():
    drawn = set().union(*map_layers((ROOT / "docs" / "design.md").read_text(encoding="utf-8")))
    packages = {p.parent.name for p in (ROOT / "pipeline").glob("*/__init__.py")}
    assert packages == drawn, f"on the map but no package: {sorted(drawn - packages)}; " \
                              f"a package not on the map: {sorted(packages - drawn)}"


def test_layout_links_the_map_instead_of_copying_it():
    layout = (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")
    assert "design.md#layers" in layout
    assert not re.search(r"^pipeline/(graph|infra)\b", layout, re.M)


def test_the_parser_reads_sibling_groups_and_skips_descriptions():
    design = "\n".join([
        "# d", "", "## Layers", "", "```", "stages/*.py  CLIs",
        "pipeline/a | pipeline/b", "                 a: x", "pipeline/c    c things | not a layer",
        "```", "", "## Next", "```", "pipeline/z", "```"])
    assert map_layers(design) == [frozenset({"a", "b"}), frozenset({"c"})]


def test_the_design_page_reads_in_one_sitting():
    """design.md describes the house (layers, seams, regimes, declarations); the formats and
    contracts live in reference pages, so the page stays short enough to read at once."""
    lines = (ROOT / "docs" / "design.md").read_text().splitlines()
    assert len(lines) <= 250, f"docs/design.md has {len(lines)} lines; move reference material out"
