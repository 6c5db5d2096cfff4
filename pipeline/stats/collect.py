"""``reports/verdicts.json``: every report's verdict records in one file.

Each report stage judges its own claims (Holm within its families) and writes the records under
the key ``"verdicts"`` of its JSON output; :func:`collect` gathers them, checks that every record
has the schema's fields and that no two records share an ``id``, and orders them by report and
family. Schema: ``docs/verdicts.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pipeline.stats.verdict import FAMILIES, VERDICTS, Verdict, from_record

FORMAT_VERSION = 3
REQUIRED = ("id", "report", "family", "a", "b", "metric", "effect", "ci", "p", "p_adjusted",
            "unit", "n", "seeds", "verdict", "reason", "test", "mde")


def collect(sources: Mapping[str, Mapping[str, object]]) -> dict[str, object]:
    """``{"format_version", "counts", "verdicts"}`` from ``{source path: its JSON}``."""
    records: list[dict[str, object]] = []
    seen: dict[str, str] = {}
    for path, document in sources.items():
        for record in document.get("verdicts", []):                       # type: ignore[union-attr]
            missing = [k for k in REQUIRED if k not in record]
            if missing:
                raise ValueError(f"{path}: a verdict record lacks {missing}: {record}")
            if record["family"] not in FAMILIES or record["verdict"] not in VERDICTS:
                raise ValueError(f"{path}: unknown family or verdict in {record}")
            if record["id"] in seen:
                raise ValueError(f"{path}: verdict id {record['id']!r} also in {seen[record['id']]}")
            seen[str(record["id"])] = path
            # a record judged before the family-wise interval existed has none (format 2)
            records.append({**record, "ci_family": record.get("ci_family", [None, None])})
    order = {f: i for i, f in enumerate(FAMILIES)}
    records.sort(key=lambda r: (str(r["report"]), order[str(r["family"])]))
    counts: dict[str, dict[str, int]] = {}
    for r in records:
        family = counts.setdefault(str(r["family"]), {v: 0 for v in VERDICTS})
        family[str(r["verdict"])] += 1
    return {"format_version": FORMAT_VERSION, "counts": counts, "verdicts": records}


def verdicts_of(document: Mapping[str, object]) -> list[Verdict]:
    """The :class:`Verdict` objects of a collected file (or of one report's JSON)."""
    return [from_record(r)  # type: ignore[arg-type]
            for r in document.get("verdicts", [])]                        # type: ignore[union-attr]


def summary_lines(document: Mapping[str, object], families: Sequence[str] = FAMILIES) -> list[str]:
    """One Markdown line per family: how many claims, and how many of each verdict."""
    counts = document["counts"]                                           # type: ignore[index]
    return [f"- `{f}`: " + ", ".join(f"{n} {v}" for v, n in counts[f].items())   # type: ignore[index]
            for f in families if f in counts]                             # type: ignore[operator]
