"""DVC's own views of the results, readable: ``dvc metrics show`` fits a 200-column
terminal, every plot the generated graph declares renders the intended series from the CSV its
stage writes, ``make plots`` makes a page that loads no script from the network, and ``make dag``
collapses the per-period and per-run stage families.

The metrics and plot files are written by the same functions the stages call, in a throw-away
git + DVC repo whose dvc.yaml declares exactly the metrics and plots of ``build(params.yaml)``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from dvc_project import dvc_env
from pipeline.corpus.language import corpus_headline
from pipeline.corpus.splits import SplitPeriods, document_periods, period_counts
from pipeline.evaluation.buckets import BUCKETS, EMERGING
from pipeline.evaluation.staleness import staleness_frame
from pipeline.graph.build import build
from pipeline.graph.dag import dag_markdown, family, mermaid
from pipeline.graph.plan import Plan
from pipeline.models.registry import display_name
from pipeline.reports.longtail_report import metrics_json as longtail_metrics
from pipeline.reports.longtail_report import plot_frame as longtail_plot_frame
from pipeline.reports.results import bucket_plot_frame, headline, plot_rows
from pipeline.semantic.benchmark import scores_frame as benchmark_frame
from pipeline.semantic.scores import change_metrics as semantic_metrics

REPO = Path(__file__).resolve().parents[1]
PARAMS = yaml.safe_load((REPO / "params.yaml").read_text())
STAGES = build(PARAMS)["stages"]
VARIANTS = list(dict.fromkeys(v for v, _ in Plan(PARAMS).runs))
WORDS = list(PARAMS["frequencies"]["plot_words"])
YEARS = list(range(PARAMS["split"]["train_first"] - PARAMS["features"]["window"],
                   PARAMS["split"]["test"] + 1))


def declared(kind: str) -> dict[str, dict]:
    """Every ``metrics`` or ``plots`` entry of the generated graph: path -> its options."""
    found: dict[str, dict] = {}
    for stage in STAGES.values():
        for entry in stage.get("do", stage).get(kind, []):
            found.update(entry)
    return found


def csv_plots() -> dict[str, dict]:
    """The declared plots read from a CSV (PNGs are images; data/curves/ are dvclive's)."""
    return {p: o for p, o in declared("plots").items() if p.endswith(".csv")}


def summary() -> dict[str, dict]:
    """A report summary with long, realistic floats (what used to make lines ~9,000 wide)."""
    out = {}
    for i, v in enumerate(VARIANTS):
        split = {s: {"period": str(y), "ppl": 413.1564967427601 + i, "cpl": 2290.4728657147457 + i,
                     "cm": 0.06904691056955127, "ppl_std": 1.2345678901234567,
                     "ppl_p": 7.269710785464626e-74, "ppl_better": 2, "ppl_worse": 257}
                 for s, y in (("dev", PARAMS["split"]["dev"]),
                              ("test", PARAMS["split"]["test"]))}
        periods = {str(y): {"ppl": 400.0 + i + y % 10, "cpl": 2000.0 + i, "cm": 0.05}
                   for y in (PARAMS["split"]["dev"], PARAMS["split"]["test"])}
        out[v] = {"seeds": [0, 1, 2], **split, "periods": periods}
    return out


def buckets_frame() -> pd.DataFrame:
    rows = [{"model": display_name(v), "period": str(y), "bucket": b, "n": 10, "mean_nll": 11.0 - k,
             "nll_vs_baseline": 0.1, "recall10": 0.2}
            for y in (PARAMS["split"]["dev"], PARAMS["split"]["test"])
            for v in VARIANTS for k, b in enumerate((*BUCKETS, EMERGING))]
    return pd.DataFrame(rows)


def longtail_frame() -> pd.DataFrame:
    """reports/longtail's long table as pipeline.reports.longtail_report builds it, long floats."""
    rows = [{"model": m, "split": split, "period": "2021", "bin": b, "n": 100, "n_types": 10,
             "acc@1": 0.07312353714313497, "acc@10": 0.32142857142857145, "T1": 15.5 + k,
             "T10": 59.0, "seeds": 3}
            for m in (*VARIANTS, "freq", "ugrm") for split in ("test", "dev")
            for k, b in enumerate(("high", "mid", "low", "all"))]
    return pd.DataFrame(rows)


def words_frame() -> pd.DataFrame:
    """plots/word_frequencies.csv as stages/frequency_plot.py writes it (long: period, word, ...)."""
    rows = [{"period": str(y), "word": w, "log_freq": -10.0 + k + (y - YEARS[0]) / 10,
             "match": f"tokens ' {w}'"} for y in YEARS for k, w in enumerate(WORDS)]
    return pd.DataFrame(rows).sort_values(["word", "period"], kind="stable")


def write_views(root: Path) -> None:
    """Every declared metrics file and plot CSV, from the functions the stages call."""
    s = summary()
    (root / "metrics" / "variants").mkdir(parents=True)
    for v, entry in s.items():
        (root / "metrics" / "variants" / f"{v}.json").write_text(json.dumps(headline(entry, v)))
    counts = {"papers": 1949, "kept": 1592, "dropped": {"language": 152, "shared_task": 204},
              "per_year": {str(y): {"kept": 250, "dropped": {"language": 9}} for y in YEARS}}
    (root / "metrics" / "corpus.json").write_text(json.dumps(corpus_headline(counts)))
    (root / "metrics" / "longtail").mkdir()
    for model, entry in longtail_metrics(longtail_frame()).items():
        (root / "metrics" / "longtail" / f"{model}.json").write_text(json.dumps(entry))
    words = [f"word{i}" for i in range(64)]             # the default run's 64 targets
    semantic = pd.DataFrame({"method": ["contextual"] * 64 + ["frequency"] * 64,
                             "word": words * 2,
                             "score": [i / 7 % 1 for i in range(64)] + [i / 64 for i in range(64)]})
    (root / "metrics" / "semantic_change.json").write_text(
        json.dumps(semantic_metrics(semantic, {})))
    sp = PARAMS["split"]
    split_periods = SplitPeriods.from_params(sp["period"], sp["train_first"], sp["train_last"],
                                             sp["dev"], sp["test"], PARAMS["features"]["window"])
    abstracts = pd.DataFrame({"date": [str(y) for y in YEARS for _ in range(3 + y % 4)]})
    frames = {
        "plots/results.csv": plot_rows(s),
        "plots/staleness.csv": staleness_frame(s, {v: display_name(v) for v in VARIANTS}),
        "plots/buckets.csv": bucket_plot_frame(buckets_frame()),
        "plots/word_frequencies.csv": words_frame(),
        "plots/longtail.csv": longtail_plot_frame(longtail_frame()),
        "plots/semantic_benchmark.csv": benchmark_frame(
            pd.DataFrame({"word": ["psw000", "psw001", "psw002"], "truth": [0.6, 0.3, 0.0],
                          "kind": ["changed", "changed", "control"]}),
            {"contextual": np.array([0.02, 0.01, 0.005]), "frequency": np.array([0.1, 0.4, 0.2])}),
        "plots/abstracts_per_period.csv": period_counts(document_periods(abstracts, "year"),
                                                        split_periods),
    }
    missing = set(csv_plots()) - set(frames)
    assert not missing, f"a declared plot this test does not write: {missing}"
    (root / "plots").mkdir()
    for path, frame in frames.items():
        frame.to_csv(root / path, index=False, float_format="%.6g")


def dvc(root: Path, *args: str, columns: int = 200) -> str:
    proc = subprocess.run([sys.executable, "-m", "dvc", *args], cwd=root, capture_output=True,
                          text=True, env=dvc_env({"COLUMNS": str(columns)}), timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def views(tmp_path_factory) -> Path:
    """A git + DVC repo declaring the graph's metrics and CSV plots, their files written."""
    root = tmp_path_factory.mktemp("views")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True, env=dvc_env())
    dvc(root, "init", "-q")
    shutil.copytree(REPO / ".dvc" / "plots", root / ".dvc" / "plots", dirs_exist_ok=True)
    stage = {"cmd": "true", "metrics": [{p: o} for p, o in declared("metrics").items()],
             "plots": [{p: o} for p, o in csv_plots().items()]}
    (root / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"views": stage}}, sort_keys=False))
    write_views(root)
    return root


def test_only_headline_numbers_are_metrics():
    assert set(declared("metrics")) == {"metrics/corpus.json", "metrics/variants",
                                        "metrics/longtail", "metrics/semantic_change.json"}
    entry = summary()[VARIANTS[0]]
    # the numbers Table 3 prints: PPL/CPL to 2 decimals, CM to 4
    assert headline(entry) == {s: {m: round(entry[s][m], 4 if m == "cm" else 2)
                                   for m in ("ppl", "cpl", "cm")} for s in ("dev", "test")}


@pytest.mark.slow
def test_metrics_show_fits_a_200_column_terminal(views):
    text = dvc(views, "metrics", "show")
    lines = text.splitlines()
    width = max(map(len, lines))
    assert width <= 200, f"`dvc metrics show` is {width} columns wide:\n{text}"
    for v in VARIANTS:
        assert any(f"metrics/variants/{v}.json" in line for line in lines), text
    assert "test.ppl" in text and "dev.cm" in text and "kept" in text
    assert "test.T10" in text and "metrics/longtail/ugrm.json" in text
    assert "agreement" in text and "metrics/semantic_change.json" in text


def rendered(views: Path) -> dict[str, dict]:
    """``dvc plots show --json``: plot path -> its vega-lite spec, data filled in."""
    data = json.loads(dvc(views, "plots", "show", "--json"))["data"]
    return {path: specs[0]["content"] for path, specs in data.items()}


def test_every_declared_plot_renders_its_series(views):
    specs = rendered(views)
    plots = csv_plots()
    assert set(specs) == set(plots), "DVC dropped a plot (a declared x or y not in its CSV?)"
    for path, options in plots.items():
        enc, rows = specs[path]["encoding"], specs[path]["data"]["values"]
        assert enc["x"]["field"] == options["x"] and enc["y"]["field"] == options["y"], path
        assert rows and all(options["x"] in r and options["y"] in r for r in rows), path
        if options.get("template", "").startswith("bar_horizontal"):   # x: number, y: category
            assert enc["x"]["type"] == "quantitative" and enc["y"]["type"] == "nominal", path
            assert all(re.fullmatch(r"-?[\d.e+-]+", r[options["x"]]) for r in rows), path


def series(spec: dict) -> dict[str, list[dict]]:
    """The rendered lines: rows grouped by the colour field, and by strokeDash unless it is the
    revision (one line per colour and dash)."""
    enc = spec["encoding"]
    keys = [enc["color"]["field"]] + ([enc["strokeDash"]["field"]]
                                      if enc.get("strokeDash", {}).get("field") != "rev" else [])
    out: dict[str, list[dict]] = {}
    for row in spec["data"]["values"]:
        out.setdefault(" / ".join(row[k] for k in keys), []).append(row)
    return out


def x_order(spec: dict) -> list[str]:
    """The x axis as vega-lite draws an ordinal axis: its distinct values sorted ascending."""
    field = spec["encoding"]["x"]["field"]
    assert spec["encoding"]["x"]["type"] == "ordinal"
    return sorted({r[field] for r in spec["data"]["values"]})


def test_the_plots_show_what_they_mean(views):
    specs = rendered(views)
    # Table 3's bar chart: one bar per variant, its length the test PPL
    bars = specs["plots/results.csv"]["data"]["values"]
    assert [r["variant"] for r in bars] == [display_name(v) for v in VARIANTS]
    # Figure 1b: one line per word, each over every year
    words = series(specs["plots/word_frequencies.csv"])
    assert sorted(words) == sorted(WORDS)
    assert all(len(rows) == len(YEARS) for rows in words.values())
    # buckets: a line per model and year, x in frequency order (not "11-100" before "2-10")
    buckets = specs["plots/buckets.csv"]
    assert [label.split(": ", 1)[1] for label in x_order(buckets)] == [*BUCKETS, EMERGING]
    assert len(series(buckets)) == 2 * len(VARIANTS)
    # staleness: a line per model, years in numeric order
    stale = specs["plots/staleness.csv"]
    assert len(series(stale)) == len(VARIANTS)
    assert x_order(stale) == sorted(x_order(stale), key=int)
    # long tail: a line per model (and the two baselines) over the bins in frequency order
    longtail = specs["plots/longtail.csv"]
    assert [label.split(": ", 1)[1] for label in x_order(longtail)] == ["high", "mid", "low"]
    assert len(series(longtail)) == len(VARIANTS) + 2
    # semantic benchmark: every method's score against the truth, points coloured by kind
    bench = specs["plots/semantic_benchmark.csv"]
    assert bench["encoding"]["x"]["type"] == bench["encoding"]["y"]["type"] == "quantitative"
    assert bench["encoding"]["color"]["field"] == "kind"
    assert sorted((r["method"], r["word"]) for r in bench["data"]["values"]) == [
        (m, w) for m in ("contextual", "frequency") for w in ("psw000", "psw001", "psw002")]
    # Figure 3: one bar per period
    per_period = specs["plots/abstracts_per_period.csv"]["data"]["values"]
    assert sorted(int(r["period"]) for r in per_period) == YEARS


@pytest.mark.slow
def test_plots_page_renders_offline(views, tmp_path):
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed: scripts/build_plots_template.sh fetches vega, "
                    "vega-lite and vega-embed with `npm pack`")
    template = tmp_path / "template.html"
    subprocess.run(["bash", str(REPO / "scripts" / "build_plots_template.sh"), str(template),
                    str(REPO / ".futurelm" / "npm")], check=True, timeout=300)
    page = template.read_text()
    assert "{plot_divs}" in page and "{scripts}" not in page   # no CDN tags from dvc-render
    for name in ("vega", "vega-lite", "vega-embed"):
        assert f"<!-- {name}@" in page
    dvc(views, "plots", "show", "--html-template", str(template), "-o", str(tmp_path / "out"))
    html = (tmp_path / "out" / "index.html").read_text()
    assert not re.search(r"<script[^>]*\bsrc\s*=\s*[\"']?(https?:)?//", html, re.I)
    assert html.count("vegaEmbed(") >= len(csv_plots())


def test_dag_collapses_the_stage_families():
    text = mermaid(STAGES)
    nodes = re.findall(r'^\s+(\w+)\["([^"]*)"\]$', text, re.M)
    labels = dict(nodes)
    assert len(nodes) == len({family(name) for name in STAGES})
    assert not any("-s0" in label for label in labels.values())
    runs = len(Plan(PARAMS).runs)
    assert labels["n_train"] == f"train-&lt;variant&gt;@s&lt;seed&gt; ({runs} runs)"
    assert labels["n_frequencies"].startswith("frequencies@period")
    edges = set(re.findall(r"^\s+(\w+) --> (\w+)$", text, re.M))
    for edge in [("graph", "download"), ("filter", "report"), ("tokenizer", "frequencies"),
                 ("frequencies", "train"), ("train", "score"), ("score", "report"),
                 ("train", "forecast"), ("forecast", "forecast_report")]:
        assert tuple(f"n_{n}" for n in edge) in edges, edge
    assert ("n_report", "n_score") not in edges


def test_committed_dag_matches_dvc_yaml():
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    assert (REPO / "docs" / "dag.md").read_text() == dag_markdown(stages), \
        "docs/dag.md is stale: run `make dag`"


def test_a_lone_seed_family_stage_is_labelled_by_its_name():
    """One frozen base's cache serves every seed: the node is that stage, not "1 stages"."""
    lone = {"base_cache": {"cmd": "python -m stages.base_cache", "outs": ["data/cache/base"]}}
    per_seed = {f"base_cache-s{s}": {"cmd": "python -m stages.base_cache",
                                     "outs": [f"data/cache/baseline-s{s}"]} for s in (0, 1)}
    assert dict(re.findall(r'(\w+)\["([^"]*)"\]', mermaid(lone))) == {"n_base_cache": "base_cache"}
    assert "(2 stages)" in mermaid(per_seed)
