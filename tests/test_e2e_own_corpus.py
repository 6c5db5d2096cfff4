"""A user's own corpus, end to end, at half-year and quarter periods.

The corpus is real and not ACL: 500 Debian changelog entries, 50 per half-year 2017H1-2021H2,
as gzipped JSON Lines with its own column names (``entry_id``, ``released`` an ISO date-time,
``package``, ``changes``) and 8 deliberately bad rows (tests/fixtures/debian_changelogs.jsonl.gz,
built by scripts/make_changelog_corpus.py, provenance in tests/fixtures/SOURCE.md).

* **Half-years.** A throw-away DVC project (tests/dvc_project.py) with ``data.columns`` mapping
  those names, the language filter and the ACL rules off, ``split.period: half``, train
  2018H1-2020H1, dev 2020H2, test 2021H1, window 2, a tiny from-scratch model and four variants
  (Baseline, Frequency, Temporal-Temperature, Continuous-vMF) runs the generated graph
  (``python -m stages.graph``, as ``make graph``) and ``dvc repro`` end to end. Checked: stages
  and per-period feature files are named by half-year labels, every bad row is in a rejects
  table with its reason, the counts plot is in time order, scores, a forecast and the reports
  name the half-years, and the continuous model's PPL is labelled in the report. On this
  corpus too: a Temporal-Attention row in Table 3, and a user's targets file with
  a graded ``truth`` column gets the semantic-change report with every method's Spearman and
  Pearson against it. And DVC reruns exactly what a change affects (this is the
  whole generated graph at tiny settings): a second `dvc repro` runs nothing, runtime settings
  (runtime.yaml, FUTURELM_* variables) rerun nothing, and changing `embeddings.layer` changes
  only what encodes with it: no embedding stage exists (no variant reads embeddings and, given a
  targets file, the semantic-change report encodes the targets' sentences itself), so only the
  two semantic stages (which stages are changed is read from DVC's status).
* **Quarters.** The same corpus at quarters has no empty quarter, but a thin one: the Debian 10
  freeze leaves 2019Q2 with 6 entries. The run passes the split stage (the point where an empty
  period would stop it, before any training) with a warning naming 2019Q2, and trains the
  Frequency variant on per-quarter histories. A copy of the corpus without 2019Q2's rows stops
  at the split stage, before the tokenizer and any train stage, naming 2019Q2 and suggesting
  ``split.period: half``.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import time
from pathlib import Path

import pandas as pd
import pytest

from pipeline.corpus.periods import ordinal
from tests.dvc_project import (git, make_project, run_dvc, stages_run,
                                stages_that_would_run, write_params)

pytestmark = pytest.mark.slow

FIXTURE = Path(__file__).parent / "fixtures" / "debian_changelogs.jsonl.gz"
SOURCE = "data/changelogs.jsonl.gz"   # where the project keeps its copy (data.source)
COLUMNS = {"id": "entry_id", "date": "released", "title": "package", "text": "changes"}

TINY_MODEL = {
    "experiment": {"variants": ["baseline", "frequency"], "seeds": [0]},
    "tokenizer": {"vocab_size": 400},
    "lm": {"n_layer": 1, "n_head": 2, "n_embd": 16, "n_positions": 64},
    "train": {"epochs": 1, "batch_size": 8, "max_length": 64, "warmup_steps": 1},
    "variants": {v: {"lstm_hidden": 8} for v in ("frequency", "context", "context2",
                                                 "temporal-temperature")},
    "score": {"n_generate": 1, "max_new_tokens": 6, "num_beams": 2, "batch_size": 16},
    "forecast": {"n_generate": 1, "batch_size": 16},
    "report": {"examples": 1},
    "frequencies": {"plot_words": ["upstream", "release", "python3"]},
}
CORPUS = {
    "data": {"source": SOURCE, "columns": COLUMNS},
    # Changelogs are English by construction; langdetect calls 2 of the 500 French or Italian,
    # so the language filter would only drop real text: off, as the ACL rules (shared tasks).
    "filter": {"language": None, "acl_rules": False},
}
HALF = {
    **CORPUS,
    # + output layers: a head that reads a half-year history, and a continuous model
    # whose train stage reads the Baseline's model folder (its target vectors)
    # + temporal attention as a future LM, and semantic change with a graded truth
    "experiment": {"variants": ["baseline", "frequency", "temporal-temperature",
                                "continuous-vmf", "temporal-attention"], "seeds": [0]},
    # The truth check is plumbing (every method scores the targets seen in both groups), not a
    # finding, and the encoder's passes over the targets' sentences (whole changelog entries, up
    # to embeddings.max_length tokens) were ~60 % of this run: a few usages of a target a group,
    # in short windows, are scored by every method as the defaults' hundreds are (the same n in
    # the truth table), at a fifth of the cost. The temporal MLMs take a few small steps.
    "semantic_change": {"targets": "data/targets.csv", "top": 5, "max_usages": 5},
    "embeddings": {"max_length": 64, "batch_size": 8},
    # a BPE big enough that most target words are one LM token (the contextual method's unit)
    "tokenizer": {"vocab_size": 1500},
    "semantic_benchmark": {"temporal_steps": 4, "temporal_batch_size": 8,
                           "temporal_max_length": 64, "sgns_epochs": 1, "apd_usages": 5},
    "split": {"period": "half", "train_first": "2018H1", "train_last": "2020H1",
              "dev": "2020H2", "test": "2021H1", "min_documents": 20},
    "features": {"window": 2},
    "score": {**TINY_MODEL["score"], "periods": ["2020H2", "2021H1", "2021H2"]},
    # null: the half-year after the latest of split.test and score.periods, 2022H1
    "forecast": {**TINY_MODEL["forecast"], "period": None, "backtest_periods": ["2021H1"]},
}
QUARTER = {
    **CORPUS,
    "split": {"period": "quarter", "train_first": "2018Q1", "train_last": "2020Q2",
              "dev": "2020Q3", "test": "2021Q1", "min_documents": 10},
    "features": {"window": 2},
    "score": {**TINY_MODEL["score"], "periods": ["2020Q3", "2021Q1"]},
    "forecast": {**TINY_MODEL["forecast"], "period": "2021Q2", "backtest_periods": ["2021Q1"]},
}
RUNTIME = {"FUTURELM_DEVICE": "cpu", "OMP_NUM_THREADS": "1"}
# A user's targets file with a graded `truth` column (the same semantic-change
# report for another corpus). Frequent changelog words; the truth values are arbitrary
# (this checks the plumbing, not a finding), "notaword" is never seen and must be reported.
TARGET_WORDS = ["debian", "upstream", "closes", "version", "fix", "new", "update", "build", "add",
                "control", "bump", "release", "use", "standards", "patch", "remove", "notaword"]
TARGETS = "word,truth\n" + "".join(f"{w},{(7 * i % 17) / 17:.3f}\n"
                                    for i, w in enumerate(TARGET_WORDS))

# The bad rows scripts/make_changelog_corpus.py appends after the 500 real ones (its docstring),
# in file order, with a regex the recorded reason must match.
BAD = [
    ("not-json", r"not valid JSON"),
    ("no-id", r"missing id \(column 'entry_id'\)"),
    ("no-date", r"missing date \(column 'released'\)"),
    ("month-13", r"date '2019-13-02T10:00:00\+00:00' does not parse: month 13"),
    ("free-text-date", r"date 'sometime in spring 2019' does not parse"),
    ("empty-text", r"missing text \(column 'changes'\)"),
    ("duplicate-id", r"duplicate id \(first at line 1\)"),
]


def read_fixture(path: Path = FIXTURE) -> tuple[list[dict], list[str]]:
    """(the rows that are JSON objects, every raw line) of a JSON Lines .gz file."""
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    rows = []
    for line in lines:
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            pass
    return rows, lines


def label_of(released: str, kind: str) -> str:
    year, month = int(released[:4]), int(released[5:7])
    return f"{year}H{1 + (month > 6)}" if kind == "half" else f"{year}Q{(month - 1) // 3 + 1}"


def good_rows() -> list[dict]:
    """The 500 real entries (the bad rows all carry package 'futurelm-fixture')."""
    rows, _ = read_fixture()
    return [r for r in rows if r["package"] != "futurelm-fixture"]


def build(tmp_path: Path, params: dict, corpus: Path = FIXTURE) -> Path:
    """A committed tmp DVC project with ``params`` and ``corpus`` at SOURCE; `make graph` run
    (by make_project: the graph does not read the data)."""
    proj = make_project(tmp_path, {**TINY_MODEL, **params})
    (proj / SOURCE).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(corpus, proj / SOURCE)
    if params.get("semantic_change", {}).get("targets"):
        (proj / params["semantic_change"]["targets"]).write_text(TARGETS)
    git(proj, "add", "-A")
    git(proj, "commit", "-q", "-m", "own corpus")
    return proj


def dvc_stages(proj: Path) -> list[str]:
    """Every stage of the project's graph, foreach stages expanded (``frequencies@2020H2``)."""
    return run_dvc(proj, "stage", "list", "--name-only").stdout.split()


Half = tuple[Path, list[str], float, str]   # project, stages run, seconds, dvc repro's log


def run_half_years(tmp_path: Path) -> Half:
    """The half-year project after `make graph && dvc repro`."""
    proj = build(tmp_path, HALF)
    start = time.monotonic()
    proc = run_dvc(proj, "repro", env=RUNTIME, preload=True)
    return proj, stages_run(proc), time.monotonic() - start, proc.stdout + proc.stderr


# -- half-years -------------------------------------------------------------------------------

def check_half_year_graph_is_named_by_labels(half: Half) -> None:
    proj, ran, seconds, log = half
    print(f"dvc repro: {len(ran)} stages in {seconds:.0f} s: {ran}")
    names = dvc_stages(proj)
    assert "frequencies@2020H2" in names
    per_period = [n for n in names if "@" in n and not re.search(r"@s\d+$", n)]   # not runs
    assert per_period and all(re.fullmatch(r"\w+@\d{4}H[12]", n) for n in per_period), per_period
    assert sorted(ran) == sorted(names)   # every stage of the graph ran, in one `dvc repro`
    for stage in ("graph", "download", "parse", "filter", "split", "tokenizer",
                  "train-baseline@s0", "train-frequency@s0", "score-baseline@s0",
                  "score-frequency@s0", "forecast-frequency@s0", "report", "forecast_report"):
        assert stage in ran, (stage, ran)


def check_half_year_features_per_period(half: Half) -> None:
    proj, ran, _, _ = half
    folder = proj / "data" / "features" / "frequencies"
    files = sorted(p.stem for p in folder.glob("*.parquet"))
    # history of 2018H1 (2017H1, 2017H2) .. that of the forecast 2022H1 (2021H1, 2021H2)
    wanted = [f"{y}H{h}" for y in range(2017, 2022) for h in (1, 2)]
    assert files == sorted(wanted)
    assert {f"frequencies@{p}" for p in wanted} <= set(ran)
    for label in ("2017H1", "2020H2"):
        table = pd.read_parquet(folder / f"{label}.parquet")
        assert len(table) > 0


def check_every_bad_row_is_rejected_with_its_reason(half: Half) -> None:
    proj, _, _, log = half
    rejects = pd.read_parquet(proj / "data" / "corpus" / "parse_rejects.parquet")
    print(rejects[["key", "line", "reason"]].to_string())
    rows, lines = read_fixture()
    first = good_rows()[0]["entry_id"]
    # one reject per bad row, at its line (1-based; the bad rows follow the 500 real ones)
    assert rejects["line"].tolist() == list(range(501, 501 + len(BAD)))
    for (name, pattern), (_, reject) in zip(BAD, rejects.iterrows()):
        assert re.search(pattern, reject["reason"]), (name, reject["reason"])
        assert reject["raw"] and reject["raw"] in lines[reject["line"] - 1], name
    keys = [k if isinstance(k, str) else None for k in rejects["key"]]
    assert keys == [None, None, "bad/no-date", "bad/month-13", "bad/free-text-date",
                    "bad/empty-text", first]
    # the stage printed the counts per reason
    assert re.search(r"rejected 2: date does not parse", log), log
    # the duplicate's first occurrence (a real 2017H1 entry) is kept
    papers = pd.read_parquet(proj / "data" / "corpus" / "papers.parquet")
    assert (papers["key"] == first).sum() == 1
    assert len(papers) == 501
    assert papers.loc[papers["key"].str.startswith("bad/"), "key"].tolist() == ["bad/bare-year"]
    # the bare year is a valid date, coarser than a half-year: the split stage rejects it
    periods = pd.read_parquet(proj / "data" / "corpus" / "period_rejects.parquet")
    assert periods["key"].tolist() == ["bad/bare-year"]
    assert periods["reason"].tolist() == ["date coarser than split.period: half"]


def check_counts_plot_in_time_order(half: Half) -> None:
    proj, _, _, _ = half
    counts = pd.read_csv(proj / "plots" / "abstracts_per_period.csv", dtype={"period": str})
    labels = counts["period"].tolist()
    assert labels == [f"{y}H{h}" for y in range(2017, 2022) for h in (1, 2)]
    assert [ordinal(p) for p in labels] == sorted(ordinal(p) for p in labels)
    kept = pd.read_parquet(proj / "data" / "corpus" / "abstracts.parquet")
    assert counts["abstracts"].sum() == len(kept) - 1 == 500   # all but the bare year
    # 50 per half-year in the fixture, each passing the default filters
    assert counts["abstracts"].tolist() == [50] * 10
    roles = dict(zip(counts["period"], counts["split"]))
    assert roles["2017H1"] == "history" and roles["2018H1"] == "train"
    assert roles["2020H2"] == "dev" and roles["2021H1"] == "test"


def check_scores_forecast_and_report_name_the_half_years(half: Half) -> None:
    proj, _, _, _ = half
    for variant in ("baseline", "frequency"):
        scores = proj / "data" / "scores" / f"{variant}-s0"
        metrics = json.loads((scores / "metrics.json").read_text())
        assert (metrics["dev_period"], metrics["test_period"]) == ("2020H2", "2021H1")
        assert list(metrics["periods"]) == ["2020H2", "2021H1", "2021H2"]
        assert metrics["test"]["n_abstracts"] == 50 and metrics["test"]["ppl"] > 1
        for label in metrics["periods"]:
            assert (scores / f"tokens_{label}.parquet").is_file()
        forecast = json.loads((proj / "data" / "forecast" / f"{variant}-s0" / "forecast.json")
                              .read_text())
        assert forecast["forecast_period"] == "2022H1"
        assert forecast["backtest_periods"] == ["2021H1"]
        assert (proj / "data" / "forecast" / f"{variant}-s0" / "generations_2022H1.parquet"
                ).is_file()
    results = (proj / "reports" / "results.md").read_text()
    assert "| Model | Dev 2020H2 PPL |" in results and "Test 2021H1 PPL" in results
    # the output layers: a continuous model's PPL is labelled, never tested against Baseline
    assert re.search(r"\| Continuous-vMF \| [\d.e+]+ † \|", results), results
    # the verdicts name every variant against the Baseline (one seed: none is tested)
    assert "## Verdicts" in results
    assert "Temporal-Temperature against Baseline-all is **untested**" in results
    continuous = json.loads((proj / "data" / "models" / "continuous-vmf-s0" / "config.json")
                            .read_text())
    assert continuous["bias"]["target_dim"] == TINY_MODEL["lm"]["n_embd"]
    assert "| PPL | 2020H2 | 2021H1" in results            # staleness, in time order
    assert "test half-year (2021H1" in results
    assert not re.search(r"\b(dev|test) year\b", results)
    staleness = pd.read_csv(proj / "plots" / "staleness.csv", dtype={"period": str})
    for _, part in staleness.groupby("model"):
        assert part["period"].tolist() == ["2020H2", "2021H1", "2021H2"]
    words = pd.read_csv(proj / "plots" / "word_frequencies.csv", dtype={"period": str})
    for _, part in words.groupby("word"):
        assert [ordinal(p) for p in part["period"]] == sorted(ordinal(p) for p in part["period"])
    forecast_md = (proj / "reports" / "forecast.md").read_text()
    assert forecast_md.startswith("# Forecasting 2022H1")
    assert "### 2021H1" in forecast_md                     # the backtest
    assert json.loads((proj / "reports" / "forecast.json").read_text())["forecast_period"] \
        == "2022H1"


def check_temporal_attention_and_semantic_change_with_truth(half: Half) -> None:
    """Temporal attention and semantic change on another corpus: a Temporal-Attention row in the
    main table, and the semantic-change report of the user's targets scored against their graded
    truth by every method (Spearman and Pearson), with the synthetic benchmark's section."""
    proj, _, _, _ = half
    results = (proj / "reports" / "results.md").read_text()
    assert re.search(r"^\| Temporal-Attention \| [\d.]+ \|", results, re.M), results
    report = (proj / "reports" / "semantic_change.md").read_text()
    print(report)
    assert report.startswith("# Semantic change 2018H1 → 2021H1")
    truth = report.split("## Against the graded truth", 1)[1].split("\n## ", 1)[0]
    for method in ("contextual", "apd", "apd-corrected", "temporal-attention", "time-token",
                   "sgns", "frequency"):
        row = re.search(rf"^\| {method} \| (\d+) \| [-\d.]+ \[[-\d.]+, [-\d.]+\] \| [<\de. -]+ \| "
                        rf"[-\d.]+ \[", truth, re.M)
        assert row and int(row[1]) >= 8, (method, truth)
    assert "Spearman" in report and "Pearson" in report and "notaword" in report
    assert "benchmark" in report.lower()
    scores = pd.read_parquet(proj / "data" / "semantic_change" / "scores.parquet")
    assert {"temporal-attention", "time-token", "sgns"} <= set(scores["method"])
    metrics = json.loads((proj / "metrics" / "semantic_change.json").read_text())
    assert "spearman" in json.dumps(metrics)


def check_a_second_repro_runs_nothing(half: Half) -> None:
    proj, _, _, _ = half
    assert stages_run(run_dvc(proj, "repro", env=RUNTIME)) == []


@pytest.fixture(scope="module")
def half(tmp_path_factory) -> Half:
    """The half-year project reproduced once per module (`make test` keeps a module on one
    worker: --dist loadscope); a test that changes it works on a copy (``own``)."""
    return run_half_years(tmp_path_factory.mktemp("half"))


@pytest.fixture
def own(half: Half, tmp_path: Path) -> Path:
    """This test's own copy of the reproduced half-year project (repo, DVC cache, outputs)."""
    git(half[0], "add", "-A")
    git(half[0], "commit", "-q", "--allow-empty", "-m", "repro")
    copy = tmp_path / "proj"
    shutil.copytree(half[0], copy, symlinks=True)
    return copy


def test_half_years_end_to_end(half: Half) -> None:
    """One `dvc repro` (~1.5 min on 2 cores) and every check on its outputs."""
    check_half_year_graph_is_named_by_labels(half)
    check_half_year_features_per_period(half)
    check_every_bad_row_is_rejected_with_its_reason(half)
    check_counts_plot_in_time_order(half)
    check_scores_forecast_and_report_name_the_half_years(half)
    check_temporal_attention_and_semantic_change_with_truth(half)
    check_a_second_repro_runs_nothing(half)


def test_runtime_settings_rerun_nothing(own: Path) -> None:
    (own / "runtime.yaml").write_text("device: cpu\nworkers: 1\n")
    assert stages_that_would_run(own) == []
    other = {**RUNTIME, "FUTURELM_WORKERS": "1", "FUTURELM_THREADS": "1"}
    assert stages_run(run_dvc(own, "repro", env=other)) == []


def test_embeddings_layer_changes_only_the_semantic_stages(own: Path) -> None:
    """With a targets file the contextual semantic-change method encodes the targets' sentences
    with the embeddings stage's encoder and layer, and no variant reads embeddings: no embedding
    stage exists, and a new layer changes the two semantic stages (the synthetic benchmark
    encodes with the same layer) and nothing else."""
    write_params(own, {"embeddings": {"layer": -2}})
    assert stages_that_would_run(own) == ["semantic_benchmark", "semantic_change"]
    assert not (own / "data" / "features" / "embeddings").exists()


# -- quarters ---------------------------------------------------------------------------------

def quarter_counts() -> pd.Series:
    labels = [label_of(r["released"], "quarter") for r in good_rows()]
    return pd.Series(labels).value_counts()


def test_the_fixture_has_no_empty_quarter_but_a_thin_one() -> None:
    counts = quarter_counts()
    quarters = [f"{y}Q{q}" for y in range(2017, 2022) for q in range(1, 5)]
    assert [q for q in quarters if q not in counts.index] == []
    assert counts.idxmin() == "2019Q2" and counts.min() < 10


def test_quarters_run_with_a_thin_quarter_warning(tmp_path: Path) -> None:
    """Past the split (where an empty quarter would stop the run) and through training of the
    Frequency variant on per-quarter histories; the rest of the graph is what the half-year run
    covers (the whole quarter graph, 30 stages, ran in 164 s on 2 cores: docs/own-corpus.md)."""
    proj = build(tmp_path, QUARTER)
    names = dvc_stages(proj)
    assert "frequencies@2019Q2" in names and "train-frequency@s0" in names
    proc = run_dvc(proj, "repro", "train-frequency@s0", env=RUNTIME, preload=True)
    log = proc.stdout + proc.stderr
    # the histories of the training quarters and of the dev quarter 2020Q3: 2017Q3-2020Q2
    history = [f"{y}Q{q}" for y in range(2017, 2021) for q in range(1, 5)][2:-2]
    assert stages_run(proc) == sorted(["graph", "download", "parse", "filter", "split",
                                       "tokenizer", "train-frequency@s0",
                                       *(f"frequencies@{q}" for q in history)])
    assert re.search(r"warning: .*fewer than split.min_documents = 10 .*: 2019Q2 \(6\)", log), log
    periods = pd.read_parquet(proj / "data" / "corpus" / "period_rejects.parquet")
    assert periods["reason"].tolist() == ["date coarser than split.period: quarter"]
    counts = pd.read_csv(proj / "plots" / "abstracts_per_period.csv", dtype={"period": str})
    assert counts["period"].tolist() == [f"{y}Q{q}" for y in range(2017, 2022)
                                         for q in range(1, 5)]
    assert dict(zip(counts["period"], counts["abstracts"])) == quarter_counts().to_dict()
    trained = json.loads((proj / "data" / "models" / "frequency-s0" / "train_metrics.json")
                         .read_text())
    assert trained["train_periods"] == history[2:]        # 2018Q1-2020Q2, 2019Q2 included
    assert trained["dev_periods"] == ["2020Q3"]


def test_an_empty_quarter_stops_before_training_naming_it(tmp_path: Path) -> None:
    _, lines = read_fixture()
    kept = [line for line in lines
            if not (line.startswith("{") and _released_in(line, "2019Q2"))]
    assert len(lines) - len(kept) == quarter_counts()["2019Q2"]
    corpus = tmp_path / "no-2019Q2.jsonl.gz"
    corpus.write_bytes(gzip.compress(("\n".join(kept) + "\n").encode(), mtime=0))
    proj = build(tmp_path, QUARTER, corpus=corpus)
    proc = run_dvc(proj, "repro", check=False, env=RUNTIME)
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0
    ran = stages_run(proc)
    assert "split" in ran and not [s for s in ran if s.startswith(("train", "tokenizer"))], ran
    assert "Traceback" not in log
    assert "error (stages.split): 1 quarter the run reads has no documents: 2019Q2 (train)" in log
    assert "fix:   use a coarser period, split.period: half" in log
    assert not (proj / "data" / "models").exists()


def _released_in(line: str, quarter: str) -> bool:
    try:
        row = json.loads(line)
    except json.JSONDecodeError:
        return False
    released = row.get("released")
    return (row.get("package") != "futurelm-fixture" and isinstance(released, str)
            and label_of(released, "quarter") == quarter)
