"""The results report of every run (stage ``report``): Table 3 and the verdicts, staleness, the
history-frequency buckets and Table 2's examples, from the score folders
(:mod:`pipeline.reports.scored_runs` reads them, :mod:`pipeline.reports.results` renders them),
and the files it writes."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from pipeline.corpus.periods import span
from pipeline.evaluation.content import load_stopwords
from pipeline.evaluation.staleness import last_corpus_date, staleness_frame, staleness_markdown
from pipeline.infra.errors import UserError
from pipeline.infra.io import atomic_path, read_json, write_csv, write_json
from pipeline.models.registry import display_name
from pipeline.reports.cm_anchors_report import AnchorInputs
from pipeline.reports.model_verdicts import report_verdicts
from pipeline.reports.results import (bucket_frame, bucket_plot_frame, details_json, headline,
                                      plot_rows, render, unigram_reference)
from pipeline.reports.scored_runs import RunSeeds, load_runs, summarize
from pipeline.reports.signal_share import share_markdown, shares, yardstick
from pipeline.stats.verdict import Verdict, to_records


@dataclass(frozen=True)
class ReportFiles:
    """Where the report goes: the Markdown, one metrics JSON per variant in ``metrics_dir``,
    the details JSON and the CSVs for DVC plots (staleness and buckets with a PNG beside)."""

    out: str
    metrics_dir: str
    details: str
    plots: str
    staleness: str
    buckets: str


@dataclass(frozen=True)
class Report:
    """Everything the stage writes: the Markdown, the per-variant summary (metrics, plot rows),
    the staleness and bucket tables (CSVs and figures), the figures' paths, the verdicts and the
    venue clustering of the PPL comparisons."""

    text: str
    summary: dict[str, dict]
    staleness: pd.DataFrame
    buckets: pd.DataFrame
    pngs: dict[str, str]
    verdicts: list[Verdict]
    clustering: list[dict[str, object]]


def build_report(scores: str, variants: Sequence[str], seeds: RunSeeds, baseline: str,
                 examples: int, frequencies: str, window: int, train_periods: Sequence[str],
                 corpus_counts: str | None, anchors: tuple[str, str, str, str, str] | None,
                 files: ReportFiles, signal: str | None = None,
                 groups: Mapping[str, str] | None = None) -> Report:
    """The report of ``variants`` (each with its ``seeds``) against ``baseline``; ``anchors``: the train
    split, dev, test, abstracts and stopwords files of the CM anchors section (None: none);
    ``signal``: the signal stage's JSON, for each model's share of the signal (None: no such
    section); ``groups``: each abstract's group, whose abstracts the verdicts resample together
    (None: every abstract independent)."""
    runs = load_runs(scores, variants, seeds)
    summary = summarize(runs, variants, seeds, baseline)
    names = {v: display_name(v) for v in variants}
    stale = staleness_frame(summary, names)
    buckets = bucket_frame(runs, variants, seeds, frequencies, window, baseline)
    first, last = train_periods
    try:
        train = span(first, last)
    except ValueError as err:
        raise UserError(f"--train-periods {first} {last}: {err}", path="split.train_first") from None
    unigram = unigram_reference(runs, frequencies, train)
    pngs = {k: str(Path(path).with_suffix(".png")) for k, path in
            (("staleness", files.staleness), ("buckets", files.buckets))}
    report_dir = Path(files.out).resolve().parent
    figures = {k: os.path.relpath(Path(v).resolve(), report_dir) for k, v in pngs.items()}
    anchor_inputs = None if anchors is None else AnchorInputs(
        *anchors[:4], load_stopwords(anchors[4]))
    verdicts, sections, clustering = report_verdicts(runs, variants, seeds, baseline,
                                                     anchor_inputs, groups)
    text = render(runs, summary, variants, seeds, examples,
                  buckets=buckets, window=window, figures=figures,
                  staleness=staleness_markdown(stale, last_corpus_date(corpus_counts)),
                  unigram=unigram, sections=sections)
    if signal is not None:
        stick = yardstick(read_json(signal), summary[baseline]["test"]["period"])
        text = text.rstrip("\n") + "\n\n" + share_markdown(
            shares(summary, variants, baseline, stick), stick, names, baseline)
    return Report(text, summary, stale, buckets, pngs, verdicts, clustering)


def write_report(report: Report, files: ReportFiles, baseline: str) -> None:
    """The Markdown, one metrics file per variant, their details, and the CSVs for DVC plots."""
    with atomic_path(files.out) as tmp:
        tmp.write_text(report.text, encoding="utf-8")
    with atomic_path(files.metrics_dir) as tmp:
        tmp.mkdir()
        for variant, entry in report.summary.items():
            write_json(headline(entry, variant), Path(tmp) / f"{variant}.json")
    write_json({**details_json(report.summary, baseline), "venue_clusters": report.clustering,
                "verdicts": to_records(report.verdicts)}, files.details)
    write_csv(plot_rows(report.summary), files.plots)
    write_csv(report.staleness, files.staleness)
    write_csv(bucket_plot_frame(report.buckets), files.buckets)
