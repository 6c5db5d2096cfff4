"""End to end on the WHOLE generated graph, at tiny settings: `dvc repro` reruns exactly what a
change affects (issue 8 §2).

A throw-away copy of the project (tests/dvc_project.py) runs every stage of the graph generated
for tiny params — download to the reports, one variant of each feature family (Baseline reads no
features, Frequency the frequencies, Context² also the embeddings) — on a small real export cut
from the embedded sample, with a 1-layer model, 1 epoch, a 1-year window and one short generated
abstract. Then:
* a second `dvc repro` runs nothing;
* runtime settings (FUTURELM_THREADS, runtime.yaml) rerun nothing;
* changing `embeddings.layer` reruns only the embeddings, the contextual variant's train, score
  and forecast stages, and the two reports (which stages ran is read from DVC's own log).
"""

from __future__ import annotations

import gzip
import re
import shutil
from pathlib import Path

import pytest

from pipeline.corpus.anthology import parse_file
from tests.dvc_project import (
    git,
    make_project,
    run_dvc,
    stages_run,
    stages_that_would_run,
    write_params,
)

pytestmark = pytest.mark.slow

PER_YEAR = 14
# train 2018-2019, dev 2020, test 2021, m = 1, forecast 2022: features of 2017-2021
TINY = {
    "data": {"source": "data/tiny.bib.gz"},
    "split": {"train_first": 2018, "train_last": 2019, "dev": 2020, "test": 2021},
    "features": {"window": 1},
    "experiment": {"variants": ["baseline", "frequency", "context2"], "seeds": [0]},
    "forecast": {"n_generate": 1, "batch_size": 16},
    "tokenizer": {"vocab_size": 400},
    "lm": {"n_layer": 1, "n_head": 2, "n_embd": 16, "n_positions": 64},
    "embeddings": {"batch_size": 8, "max_length": 64, "stride": 16, "device": "cpu"},
    "train": {"epochs": 1, "batch_size": 8, "max_length": 64, "warmup_steps": 1},
    "variants": {v: {"lstm_hidden": 8} for v in ("frequency", "context", "context2",
                                                 "temporal-temperature")},
    "score": {"n_generate": 1, "max_new_tokens": 6, "num_beams": 2, "batch_size": 16},
    "report": {"examples": 1},
}
RUNTIME = {"FUTURELM_THREADS": "1", "FUTURELM_DEVICE": "cpu", "OMP_NUM_THREADS": "1"}


def tiny_export(sample: Path, out: Path) -> None:
    """The first PER_YEAR long abstracts of each year of the sample, as an export file."""
    papers = parse_file(sample).papers
    long = papers[papers["abstract"].str.split().str.len() > 40]
    keys = set(long.groupby("year").head(PER_YEAR)["key"])
    text = gzip.decompress(sample.read_bytes()).decode()
    entries = re.split(r"\n(?=@)", text)
    kept = [e for e in entries
            if (m := re.match(r"@\w+\{([^,]+),", e)) and m.group(1) in keys]
    assert len(kept) == len(keys)
    out.write_bytes(gzip.compress(("\n".join(kept) + "\n").encode(), mtime=0))


@pytest.fixture(scope="module")
def project(tmp_path_factory, sample_bib) -> Path:
    proj = make_project(tmp_path_factory.mktemp("e2e-graph"), TINY)
    tiny_export(sample_bib, proj / "data" / "tiny.bib.gz")
    git(proj, "add", "-A")
    git(proj, "commit", "-q", "-m", "tiny export")
    first = stages_run(run_dvc(proj, "repro", env=RUNTIME, preload=True))
    assert {"graph", "report", "forecast_report", "embeddings@2017", "train-context2-s0"} <= set(first)
    git(proj, "add", "-A")
    git(proj, "commit", "-q", "-m", "repro")
    return proj


@pytest.fixture
def own(project: Path, tmp_path: Path) -> Path:
    """This test's own copy of the built project (repo, DVC cache, outputs) to change freely."""
    copy = tmp_path / "proj"
    shutil.copytree(project, copy, symlinks=True)
    return copy


def test_a_second_repro_runs_nothing(project: Path) -> None:
    assert (project / "reports" / "results.md").is_file()
    assert stages_that_would_run(project) == []
    assert stages_run(run_dvc(project, "repro", env=RUNTIME)) == []


def test_runtime_settings_rerun_nothing(own: Path) -> None:
    (own / "runtime.yaml").write_text("device: cpu\nworkers: 1\n")
    assert stages_that_would_run(own) == []
    other = {**RUNTIME, "FUTURELM_WORKERS": "1"}
    assert stages_run(run_dvc(own, "repro", env=other)) == []


def test_embeddings_layer_reruns_only_what_reads_embeddings(own: Path) -> None:
    years = [f"embeddings@{y}" for y in range(2017, 2022)]
    write_params(own, {"embeddings": {"layer": -2}})
    # changed now: only these (the benchmark encodes with the same layer)
    assert stages_that_would_run(own) == sorted([*years, "semantic_benchmark"])
    ran = stages_run(run_dvc(own, "repro", env=RUNTIME, preload=True))
    assert ran == sorted([*years, "train-context2-s0", "score-context2-s0",
                          "forecast-context2-s0", "report", "longtail", "forecast_report",
                          "semantic_change", "semantic_benchmark", "verdicts"])
    assert stages_that_would_run(own) == []
