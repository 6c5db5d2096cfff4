"""Each abstract's group: the corpus column whose abstracts share topics and style.

The export names each paper's proceedings volume (``venue``, from the BibTeX ``booktitle`` or
``journal``): the main conference, its Findings, each workshop. The verdicts resample a group's
abstracts together (:mod:`pipeline.stats.clusters`). A corpus without the column, or an abstract
without a value, leaves its abstracts ungrouped: each is then its own group, which is the test
of independent abstracts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow.parquet as pq

from pipeline.infra.errors import UserError

NONE = "none"   # report.cluster_by: every abstract independent
VENUE = "venue"   # the parsed corpus's venue column, which a table of another source may lack


def abstract_groups(abstracts: str, column: str) -> dict[str, str]:
    """``{key: group}`` from the filtered corpus ``abstracts`` (a Parquet file with ``key``),
    leaving out abstracts whose ``column`` is empty; ``column`` :data:`NONE`, or :data:`VENUE`
    where the table has no such column: no groups. Any other column must exist."""
    if column == NONE:
        return {}
    names = pq.read_schema(abstracts).names
    if column == VENUE and column not in names:
        return {}
    if column not in names:
        raise UserError(f"{abstracts} has no column {column!r} to group the abstracts by",
                        path="report.cluster_by",
                        fix=f"use one of {', '.join(n for n in names if n != 'key')}, or none "
                            "(every abstract independent)")
    table = pq.read_table(abstracts, columns=["key", column]).to_pydict()
    return {str(k): str(g) for k, g in zip(table["key"], table[column])
            if g is not None and str(g).strip()}


def group_labels(keys: Sequence[str] | np.ndarray, groups: Mapping[str, str]) -> np.ndarray | None:
    """Each of ``keys``' group (an ungrouped abstract: its own key, a group of one); None when
    no abstract has a group (the test of independent abstracts)."""
    if not groups or not any(str(k) in groups for k in keys):
        return None
    return np.array([f"group:{groups[str(k)]}" if str(k) in groups else f"key:{k}"
                     for k in keys], dtype=object)
