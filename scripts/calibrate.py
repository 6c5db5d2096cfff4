"""Measure every verdict test's calibration by simulation (`make calibrate`).

    python scripts/calibrate.py                  # full size: reports/calibration.json + docs block
    python scripts/calibrate.py --sims 200 --quick --out /tmp/c.json --docs /tmp/verdicts.md
    python scripts/calibrate.py --only paired --merge   # new rows into the committed file

Runs the simulations of :mod:`pipeline.stats.calibration` and :mod:`pipeline.forecast.calibration`
(false-positive rate, coverage of the 95 % interval, power at planted effects), plus the trend
claims on the embedded sample with its dates permuted, writes ``--out`` (per test and size) and
replaces the block between the calibration markers of ``--docs`` with the table (appending a
section with the markers where they are absent). ``--sims`` is the number of simulations per
truth of the cheap tests; the costly ones (trend corpora, 6,000-document comparisons, the sample)
run a stated share of it (``SHARES``); every entry records its own ``n_sims``.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pipeline.forecast import calibration as fcal  # noqa: E402
from pipeline.stats import calibration as scal  # noqa: E402

START, END = "<!-- calibration:start -->", "<!-- calibration:end -->"
SECTION = "## Calibration (simulated)"
SAMPLE = REPO / "data" / "sample" / "anthology-sample.bib.gz"
STOPWORDS = REPO / "data" / "reference" / "stopwords.txt"
# Run-to-run sd of log test PPL: 0.05 is the sample's (3 seeds of one variant span ~10 % test
# PPL: Baseline 424-467), 0.01 and 0.03 tighter runs (a bigger corpus, a pretrained LM).
RUN_SDS = (0.05, 0.03, 0.01)
SAMPLE_YEARS = ("2017", "2018", "2019", "2020", "2021")
SAMPLE_VOCAB = 4096          # params.yaml tokenizer.vocab_size (scratch BPE of the default run)
MIN_WORDS = 20               # sample abstracts shorter than this (empty ones) are left out
# Paired by seed: (seeds, abstracts, own run sd, the seed's shared sd, planted gains). Runs that
# share nothing (the sample); the sample's spread shared by both sides (shared-base training);
# the full export's: Baselines of five seeds span 169-202 test PPL (log sd ~0.07) while a variant
# and its control differ by < 0.2 % within each seed. The last element, where not None, is the run
# × abstract interaction's sd (RATE_MODEL's 0.03 otherwise): at 0.1 and a run sd of 0.0005 the
# interaction is most of the per-seed differences' spread, the case where counting it twice
# inflates the standard error most.
PAIRED = ((3, scal.SAMPLE_TEST_DOCS, 0.05, 0.0, (0.02, 0.05, 0.10), None),
          (3, scal.SAMPLE_TEST_DOCS, 0.01, 0.05, (0.02, 0.05, 0.10), None),
          (3, scal.FULL_TEST_DOCS, 0.002, 0.07, (0.005, 0.01, 0.02), None),
          (5, scal.FULL_TEST_DOCS, 0.002, 0.07, (0.005, 0.01, 0.02), None),
          (5, scal.FULL_TEST_DOCS, 0.0005, 0.07, (0.005, 0.01, 0.02), 0.1))
# Paired by seed, the full export's sizes, abstracts in venue clusters (scal.venue_groups: ~120
# volumes of export-like sizes) with each side offset by a venue sd (nats/token) on a venue's
# abstracts: 0.02 and 0.05 put the ICC of the per-abstract differences near the export's
# measured 0.02-0.21 (docs/verdicts.md). Tested with the venues as the unit.
CLUSTERED = ((5, scal.FULL_TEST_DOCS, 0.002, 0.07, (0.005, 0.01, 0.02), 0.02),
             (5, scal.FULL_TEST_DOCS, 0.002, 0.07, (0.005, 0.01, 0.02), 0.05))
# The pooled forecast-skill test: the export's 16 origins (2008-2023), AR(1) loss differentials
# up to the φ the test allows for, at the report's horizons.
SKILL_ORIGINS, SKILL_PHIS, SKILL_HORIZONS = 16, (0.0, 0.2, 0.4, 0.6), (1, 2)
# Share of --sims each costly simulation runs (seconds per simulation on one core: ~0.12 for a
# 250-document trend corpus, ~0.33 for 1,200, ~0.14 for a permuted sample or 6,000 documents).
# Cheap rows run more than --sims where a rate near its bound needs a smaller Monte-Carlo error
# to pass on its interval (a row passes on the upper end of its FPR's interval, the lower end of
# its coverage's: at 1,000 simulations an exact test's coverage is 0.95 − 0.014), and the smallest
# of several coverages estimated from 1,000 simulations each lies ~0.01 below the truth.
SHARES = {"model": 3.0, "semantic": 5.0, "skill": 4.0, "forecast 259": 3.0,
          "paired 259": 6.0, "paired 6000": 4.0, "clustered": 1.0, "forecast 6000": 2.0,
          "trend 250": 3.0, "trend 250 planted": 0.25, "trend 1200": 1.0, "trend 1200 planted": 0.2,
          "sample": 1.0}
QUICK_SHARES = {"model": 1.0, "semantic": 1.0, "skill": 1.0, "forecast 259": 1.0,
                "paired 259": 1.0, "paired 6000": 0.15, "clustered": 0.1, "forecast 6000": 0.15,
                "trend 250": 0.4, "trend 250 planted": 0.2}


def _n(sims: int, share: float) -> int:
    return max(20, int(round(sims * share)))


def permuted_sample(n_sims: int) -> list[scal.Calibration]:
    """The trend claims of 2021 on the sample's 2017-2021 abstracts with the dates permuted
    (the halves kept, and re-drawn)."""
    import numpy as np

    from pipeline.corpus.anthology import parse_file
    from pipeline.evaluation.content import content_token_mask, load_stopwords
    from pipeline.features.tokenizer import train_scratch_tokenizer
    from pipeline.forecast.documents import tokenize_documents

    papers = parse_file(SAMPLE).papers
    keep = papers["year"].astype(str).isin(SAMPLE_YEARS) \
        & (papers["abstract"].str.split().str.len() >= MIN_WORDS)
    papers = papers[keep].reset_index(drop=True)
    years = papers["year"].astype(str).to_numpy()
    train = papers.loc[np.isin(years, SAMPLE_YEARS[:3]), "abstract"].tolist()
    tok = train_scratch_tokenizer(train, SAMPLE_VOCAB)
    docs = tokenize_documents(tok, "all", papers["key"].tolist(), papers["abstract"].tolist())
    content = content_token_mask(tok, load_stopwords(STOPWORDS))
    out = [*fcal.calibrate_permuted(docs, years, n_sims, content, SAMPLE_YEARS),
           *fcal.calibrate_permuted(docs, years, n_sims, content, SAMPLE_YEARS, rekey=True,
                                    label="sample, permuted dates and halves")]
    for c in out:
        c.settings.update(source=str(SAMPLE.relative_to(REPO)), tokenizer=f"scratch BPE, "
                          f"{SAMPLE_VOCAB} (trained on {SAMPLE_YEARS[0]}-{SAMPLE_YEARS[2]})",
                          min_words=MIN_WORDS, content="content_token_mask (paper's stopwords)")
    return out


def plan(sims: int, quick: bool) -> list[tuple[str, Callable[[], list[scal.Calibration]]]]:
    """The simulations to run: (label, function returning calibrations)."""
    jobs: list[tuple[str, Callable[[], list[scal.Calibration]]]] = []
    shares = QUICK_SHARES if quick else SHARES
    for runs in (3, 5, 10):
        for sd in RUN_SDS:
            jobs.append((f"model {runs} runs sd {sd}", lambda r=runs, s=sd:
                         [scal.calibrate_model_comparison(r, s, _n(sims, shares["model"]))]))
    for runs, docs, sd, shared, gains, crossed in PAIRED:
        n = _n(sims, shares["paired 259" if docs == scal.SAMPLE_TEST_DOCS else "paired 6000"])
        jobs.append((f"paired {runs} seeds {docs} sd {sd} seed sd {shared}"
                     + ("" if crossed is None else f" run × abstract sd {crossed}"),
                     lambda r=runs, d=docs, s=sd, h=shared, g=gains, k=n, c=crossed: [
                         scal.calibrate_model_comparison(r, s, k, d, g, shared_sd=h,
                                                         run_doc_sd=c)]))
    for runs, docs, sd, shared, gains, venue_sd in CLUSTERED:
        jobs.append((f"clustered {runs} seeds {docs} venue sd {venue_sd}",
                     lambda r=runs, d=docs, s=sd, h=shared, g=gains, v=venue_sd: [
                         scal.calibrate_model_comparison(r, s, _n(sims, shares["clustered"]), d,
                                                         g, shared_sd=h, venue_sd=v)]))
    for items in (1, 10, 20):
        jobs.append((f"cm {items}", lambda i=items: [scal.calibrate_cm(i, sims)]))
    for items in (2, 10, 20, 100):
        jobs.append((f"cm-anchor {items}", lambda i=items: [scal.calibrate_cm(i, sims, True)]))
    for words in (20, 40, 400):
        jobs.append((f"semantic {words}", lambda w=words: [
            scal.calibrate_semantic_rho(w, _n(sims, shares["semantic"]))]))
    for horizon in SKILL_HORIZONS:
        for phi in SKILL_PHIS:
            label = f"skill {SKILL_ORIGINS} φ {phi}" + (f" h {horizon}" if horizon > 1 else "")
            jobs.append((label, lambda f=phi, h=horizon: [scal.calibrate_diebold_mariano(
                SKILL_ORIGINS, f, _n(sims, shares["skill"]), h)]))
    jobs.append(("forecast 259", lambda: [fcal.calibrate_forecast_comparison(
        scal.SAMPLE_TEST_DOCS, _n(sims, shares["forecast 259"]))]))
    jobs.append(("forecast 6000", lambda: [fcal.calibrate_forecast_comparison(
        scal.FULL_TEST_DOCS, _n(sims, shares["forecast 6000"]))]))
    jobs.append(("trend 250", lambda: fcal.calibrate_trend(
        250, _n(sims, shares["trend 250"]), _n(sims, shares["trend 250 planted"]))))
    if not quick:
        jobs.append(("trend 1200", lambda: fcal.calibrate_trend(
            1200, _n(sims, shares["trend 1200"]), _n(sims, shares["trend 1200 planted"]))))
        jobs.append(("sample", lambda: permuted_sample(_n(sims, shares["sample"]))))
    return jobs


def run(sims: int, quick: bool, log: Callable[[str], None] = print,
        only: tuple[str, ...] = ()) -> dict[str, object]:
    """Every simulation of :func:`plan` (``only``: those whose label starts with one of these);
    the JSON document."""
    tests: dict[str, dict[str, object]] = {}
    runtimes: dict[str, float] = {}
    start = time.perf_counter()
    for label, job in plan(sims, quick):
        if only and not label.startswith(only):
            continue
        t0 = time.perf_counter()
        for c in job():
            tests.setdefault(c.test, {})[c.size] = c.as_record()
        runtimes[label] = round(time.perf_counter() - t0, 1)
        log(f"{label}: {runtimes[label]} s")
    return {
        "format_version": 1,
        "command": f"python scripts/calibrate.py --sims {sims}" + (" --quick" if quick else "")
                   + "".join(f" --only '{o}'" for o in only),
        "sims": sims, "quick": quick,
        "bounds": {"fpr_max": scal.FPR_MAX, "coverage_min": scal.COVERAGE_MIN,
                   "fpr_goal": scal.FPR_GOAL, "coverage_goal": scal.COVERAGE_GOAL,
                   "alpha": scal.ALPHA, "mc_z": scal.MC_Z},
        "all_pass": all_pass(tests),
        "tests": tests,
        "runs_for_mde": runs_for_mde(),
        "runtime_s": {"total": round(time.perf_counter() - start, 1), **runtimes},
    }


def runs_for_mde() -> dict[str, object]:
    """Runs a side for a minimal detectable test-PPL change (80 % power, α = 0.05)."""
    table: dict[str, object] = {
        "model": "document part from the simulation's document model "
                 f"({scal.RATE_MODEL}); runs part run_sd² / r per side; Welch df",
    }
    for n in (scal.SAMPLE_TEST_DOCS, scal.FULL_TEST_DOCS):
        table[f"{n} documents"] = {
            f"run sd {sd:g}": {f"{100 * g:g} %": scal.runs_for_mde(g, sd, n)
                               for g in (0.02, 0.05, 0.10)} for sd in RUN_SDS}
    return table


def all_pass(tests: dict[str, dict[str, dict[str, object]]]) -> bool:
    """Every row held to the bounds passes (diagnostic rows have ``pass`` None)."""
    return all(r["pass"] is not False for sizes in tests.values() for r in sizes.values())


def _passed(r: dict[str, object]) -> str:
    if r.get("diagnostic"):
        return "not a null (below)"
    return "yes" if r["pass"] else "**no**"


def _share(x: float | None, se: float | None = None) -> str:
    if x is None:
        return "—"
    return f"{x:.3f}" + (f" ± {se:.3f}" if se is not None else "")


def _paragraph(text: str) -> list[str]:
    return [textwrap.fill(text, width=99, break_on_hyphens=False, break_long_words=False), ""]


def render(doc: dict[str, object]) -> str:
    """The Markdown block (between the markers) of a calibration document."""
    b = doc["bounds"]
    lines = [START, ""]
    lines += _paragraph(
        f"Generated by `{doc['command']}` (`make calibrate`"
        + "".join(f", then `{m}`" for m in doc.get("merged", []))
        + f"; {doc['runtime_s']['total']:.0f} s wall time"
        + (" in all" if doc.get("merged") else " in one process") + ") into "
        "`reports/calibration.json`; do not edit by hand. Each test is run on data simulated "
        "with a known truth, new data every simulation: **FPR** is the share of p < 0.05 under "
        "the null (± its Monte-Carlo SE), **verdicts** "
        "the share of `better`/`worse` that `judge` gives under the null (Holm within the claim's "
        "family: one claim, or the six trend claims of a period), **coverage** the share of 95 % "
        "intervals that contain the true effect (the smallest over the simulated truths; trend "
        "claims: under the null only, see the JSON's `coverage_note`), **power** the share of "
        "p < 0.05 at each planted effect (trend claims: the share of `better` verdicts with ten "
        "word pairs trading places, for the claim and for either of the forecaster's two claims). "
        f"A row passes when the upper end of its FPR's Monte-Carlo interval (FPR + "
        f"{b['mc_z']} SE; the verdicts' too) is ≤ {b['fpr_max']} and the lower end of its "
        f"coverage's is ≥ {b['coverage_min']} (goals {b['fpr_goal']} and {b['coverage_goal']}): "
        "a row that meets a bound only by the luck of its simulations does not pass.")
    lines += ["| test | size | sims | FPR | verdicts | coverage | power | pass |",
              "|---|---|---:|---:|---:|---:|---|---|"]
    for test, sizes in doc["tests"].items():
        for size, r in sizes.items():
            power = "; ".join(f"{k}: {v:.2f}" for k, v in r["power"].items()) or "—"
            lines.append(f"| {test} | {size} | {r['n_sims']} | {_share(r['fpr'], r['fpr_se'])} | "
                         f"{_share(r['fpr_verdict'])} | {_share(r['coverage'])} | {power} | "
                         f"{_passed(r)} |")
    lines += [""]
    diagnostics = sorted({r["diagnostic"] for sizes in doc["tests"].values()
                          for r in sizes.values() if r.get("diagnostic")})
    if diagnostics:
        lines += _paragraph("Rows marked *not a null* measure data known not to be an exact null "
                            "and are not held to the bounds: " + " ".join(diagnostics))
    means = [f"{size}: {r['extra']['mean_effect']:+.4f} ± {r['extra']['mean_effect_se']:.4f}"
             for test, sizes in doc["tests"].items() if test == fcal.TREND_TESTS["ρ"]
             for size, r in sizes.items()]
    if means:
        lines += _paragraph("Mean rank correlation of the trend null (± its Monte-Carlo SE): "
                            + "; ".join(means) + ".")
    ratios = [f"{size}: {r['extra']['se_ratio']:.3f}" for test, sizes in doc["tests"].items()
              for size, r in sizes.items() if "se_ratio" in r.get("extra", {})]
    if ratios:
        lines += _paragraph(
            "Reported standard error over the true one (the root mean square of the model "
            "comparisons' standard errors under the null over the sd of their effects; 1 when "
            "each variance is counted once, the run × abstract interaction included): " + "; ".join(ratios)
            + ".")
    venues = [f"{size}: FPR {r['extra']['fpr_independent']:.3f} taken as independent against "
              f"{r['fpr']:.3f} by venue (ICC {r['extra']['icc']:.3f}, design effect "
              f"{r['extra']['design_effect']:.1f})"
              for test, sizes in doc["tests"].items() for size, r in sizes.items()
              if "fpr_independent" in r.get("extra", {})]
    if venues:
        lines += _paragraph(
            "Abstracts in venue clusters (each side offset on a venue's abstracts; ~120 venues of "
            "export-like sizes), tested with the venues as the unit and, on the same data, with "
            "the abstracts taken as independent: " + "; ".join(venues) + ".")
    m, cm, corpus = scal.RATE_MODEL, scal.CM_MODEL, fcal.TopicCorpus()
    lines += _paragraph(
        f"Settings (the JSON's `settings` per row): model comparisons on the sample's "
        f"{scal.SAMPLE_TEST_DOCS} test abstracts (token counts log-normal, mean "
        f"{scal.TOKENS_MEAN:g}, sd {scal.TOKENS_SD:g}: the sample's abstracts under the default "
        f"4,096-token BPE), per-token difficulty sd {m['difficulty_sd']} nats, variant × abstract "
        f"sd {m['variant_doc_sd']}, run × abstract sd {m['run_doc_sd']}, power at 2/5/10 % lower "
        f"PPL; CM items Gamma (mean {cm['mean']}, sd {cm['item_sd']}), run sd {cm['run_sd']}; "
        f"forecast comparisons and trend corpora from `pipeline.forecast.synthetic.TopicCorpus` "
        f"({corpus.vocab:,} token ids, {corpus.topics} topics, {corpus.topic_share:.0%} of tokens "
        f"from the document's topic, {corpus.repeat:.0%} repeats); the trend claims through "
        f"`backtest_period` with stationary baselines fitted on the first three of five periods; "
        f"*sample, permuted dates*: the embedded sample's {SAMPLE_YEARS[0]}-{SAMPLE_YEARS[-1]} "
        f"abstracts with their years permuted, the claims of {SAMPLE_YEARS[-1]}, with the "
        "documents' own keys (the same key-hash halves in every permutation, as a permuted-dates "
        "check that keeps the old ids would have: not an exact null, `calibrate_permuted`) or with "
        "new keys in every permutation (*and halves*: an exact null, as the project's checks "
        f"do); the pooled forecast-skill test on {SKILL_ORIGINS} AR(1) loss differentials "
        f"(marginal sd 1, φ {', '.join(f'{p:g}' for p in SKILL_PHIS)}; at horizon 2 each the sum "
        "of two overlapping steps), power at mean shifts of 0.5 and 1 marginal sd.")
    lines += _paragraph(
        "Runs a variant needs on each side for a minimal detectable test-PPL change at 80 % "
        "power, α = 0.05 (`pipeline.stats.calibration.runs_for_mde`: `pipeline.stats.power.t_mde` "
        "with the engine's variance, its document part from the document model above; at least "
        "3; — : no number of runs reaches it, the abstracts' part alone is larger):")
    lines += ["| test abstracts | run sd | 2 % | 5 % | 10 % |", "|---|---|---:|---:|---:|"]
    for key, by_sd in doc["runs_for_mde"].items():
        if not isinstance(by_sd, dict):
            continue
        for sd, row in by_sd.items():
            cells = " | ".join("—" if v is None else str(v) for v in row.values())
            lines.append(f"| {key} | {sd.removeprefix('run sd ')} | {cells} |")
    lines += ["", END]
    return "\n".join(lines)


def update_docs(path: Path, block: str) -> None:
    """Replace the block between the markers of ``path`` (or append a section with it)."""
    text = path.read_text(encoding="utf-8")
    if START in text and END in text:
        head, rest = text.split(START, 1)
        text = head + block + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + f"\n\n{SECTION}\n\n{block}\n"
    path.write_text(text, encoding="utf-8")


def merge(whole: dict[str, object], part: dict[str, object]) -> dict[str, object]:
    """``whole`` with the rows and run times of ``part`` (a ``--only`` run at the same size)."""
    if (whole["sims"], whole["quick"]) != (part["sims"], part["quick"]):
        raise SystemExit(f"error: --merge of a run with --sims {part['sims']} quick={part['quick']}"
                         f" into one with --sims {whole['sims']} quick={whole['quick']}: "
                         "rerun with the file's own size")
    tests = {test: dict(sizes) for test, sizes in whole["tests"].items()}
    for test, sizes in part["tests"].items():
        tests.setdefault(test, {}).update(sizes)
    for sizes in tests.values():          # a kept row is judged by today's rule too
        for r in sizes.values():
            r.setdefault("diagnostic", "")
            if not r["diagnostic"]:
                r["pass"] = scal.passes(r["fpr"], r["fpr_verdict"], r["coverage"], r["n_sims"])
    times = {k: v for doc in (whole, part) for k, v in doc["runtime_s"].items() if k != "total"}
    return {**whole, "tests": tests, "bounds": part["bounds"], "runs_for_mde": part["runs_for_mde"],
            "all_pass": all_pass(tests),
            "merged": [*whole.get("merged", []), f"{part['command']} --merge"],
            "runtime_s": {"total": round(sum(times.values()), 1), **times}}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sims", type=int, default=1000, help="simulations per truth (cheap tests)")
    p.add_argument("--quick", action="store_true",
                   help="the test size: no 1,200-document trend corpus, no sample")
    p.add_argument("--out", type=Path, default=REPO / "reports" / "calibration.json")
    p.add_argument("--docs", type=Path, default=REPO / "docs" / "verdicts.md")
    p.add_argument("--only", action="append", default=[],
                   help="run only the simulations whose label starts with this (repeatable; "
                        "e.g. 'skill'); --docs is then left alone: a partial table must not "
                        "replace the full one")
    p.add_argument("--merge", action="store_true",
                   help="with --only: put the rows it runs into the existing --out (same --sims "
                        "and --quick; every other row kept as it is) and re-render --docs from "
                        "the whole; the seeds are fixed, so a row is the same numbers as in a "
                        "full run")
    args = p.parse_args(argv)
    if args.merge and not args.only:
        p.error("--merge needs --only (a full run replaces the whole file)")
    doc = run(args.sims, args.quick, lambda s: print(s, file=sys.stderr, flush=True),
              tuple(args.only))
    if args.merge:
        doc = merge(json.loads(args.out.read_text(encoding="utf-8")), doc)
    args.out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    if not args.only or args.merge:
        update_docs(args.docs, render(doc))
    failing = [f"{t} / {s}" for t, sizes in doc["tests"].items() for s, r in sizes.items()
               if r["pass"] is False]
    print(f"wrote {args.out} and {args.docs}; " + (f"FAILING: {failing}" if failing
                                                     else "every test within its bounds"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
