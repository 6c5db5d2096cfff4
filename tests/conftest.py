"""Shared fixtures. Tests never reach the network: the Hugging Face hub is forced offline."""

from __future__ import annotations

import os
from pathlib import Path

# Two xdist workers share two cores, and every torch stage they start runs two OpenMP threads
# (pipeline/infra/numerics.THREADS): four threads on two cores. libgomp's idle threads spin
# (~300,000 iterations) between the tiny models' small ops, so each spinning thread took a core
# from the other worker: two tiny trainings side by side took 4.5x their time alone, 1.3x with
# passive waiting (benchmarks/results/test_suite.md). The wait policy changes no result (the same
# work split, the same bytes); set before torch loads libgomp, inherited by every subprocess.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# The same for numpy's OpenBLAS, whose idle threads spin too: one thread (OPENBLAS reads
# OMP_NUM_THREADS; torch's stages still set their recorded two with torch.set_num_threads). One
# value for every test also gives every test process one warm preload server instead of one per
# value (tests/dvc_project.warm_server keys them by import-time variables).
os.environ.setdefault("OMP_NUM_THREADS", "1")

# Before anything imports torch: the same CPU kernels as every stage (pipeline/infra/numerics.py).
from pipeline.infra.numerics import configure_torch, pin_kernels

pin_kernels()

import pytest  # noqa: E402
from ci_skips import CiSkips  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("DVC_NO_ANALYTICS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
SAMPLE_BIB = REPO / "data" / "sample" / "anthology-sample.bib.gz"
STOPWORDS = REPO / "data" / "reference" / "stopwords.txt"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def sample_bib() -> Path:
    return SAMPLE_BIB


def stage_help(capsys, main, *args: str) -> str:
    """What ``python -m stages.<name> *args --help`` prints (the stage's ``main``, in process):
    argparse's help, then exit status 0."""
    with pytest.raises(SystemExit) as exit_:
        main([*args, "--help"])
    assert exit_.value.code == 0
    return capsys.readouterr().out


def pytest_configure(config: pytest.Config) -> None:
    # In CI (CI=true) a skip not on tests/ci_skips.py's allow-list fails the run.
    config.pluginmanager.register(CiSkips(), "futurelm-ci-skips")
    # xdist's controller runs no test: it starts the workers without importing torch (~3 s
    # in which both cores would idle).
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        return
    # `make test` runs two xdist workers on two cores: one torch thread each avoids
    # oversubscription, which made some tests ~10x slower. Deterministic algorithms as in every
    # stage. Before collection, so before any test module imports torch.
    configure_torch(1)


# ---- scheduling: the longest modules first ----------------------------------------------------
# `make test` runs `pytest -n 2 --dist loadscope --no-loadscope-reorder`: each module is one unit
# of work on one worker (its module fixtures, e.g. a DVC repo reproduced once, built once), handed
# out in collection order. Collected in file-name order, the longest end-to-end modules would
# start last and leave one worker idle at the end; so the modules are ordered here by their
# measured seconds (benchmarks/results/test_suite.md, `--durations`), longest first, unlisted
# modules (all short) after them in file order. Only the order changes, never what runs.
MODULE_SECONDS: dict[str, float] = {
    # seconds per module in a `make test` run of a fresh clone (2026-12-05 12:46, commit 4b6b2a0,
    # idle 2-core Zen 3, junit times: benchmarks/results/test_suite.md; preload and forecast skill
    # from a run of 5268c6b, after their trims); modules under 15 s unlisted
    "test_e2e_permuted_dates.py": 137,
    "test_e2e_own_corpus.py": 105,
    "test_numerics.py": 82,
    "test_ddp_training.py": 71,
    "test_variant_seam.py": 71,
    "test_e2e_data.py": 59,
    "test_distributed_embeddings.py": 43,
    "test_graph.py": 41,
    "test_preload.py": 37,
    "test_forecast_skill.py": 36,
    "test_semantic_benchmark.py": 32,
    "test_calibration.py": 28,
    "test_cm_anchors.py": 28,
    "test_e2e_adapted_base.py": 27,
    "test_meteor.py": 25,
    "test_variant_staleness.py": 25,
    "test_resume.py": 23,
    "test_future_lm.py": 22,
    "test_language.py": 21,
    "test_e2e_forecast_variant.py": 20,
    "test_e2e_base_cache.py": 20,
    "test_temporal_mlm.py": 19,
    "test_e2e_frozen_base.py": 19,
    "test_forecast_null.py": 19,
    "test_e2e_features.py": 17,
    "test_graph_defaults.py": 16,
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    def weight(item: pytest.Item) -> float:
        return -MODULE_SECONDS.get(item.path.name, 0.0)

    items.sort(key=weight)   # stable: a module's tests keep their order and stay together
    # A worker holds back its last test until it has a next one, so xdist hands a worker whose
    # unit is one long test a second unit at once: with n workers, make units n+1..2n short
    # unlisted modules, not the next long ones, which would wait behind the longest tests.
    # collection runs in the workers, whose own config says numprocesses None: the count is in
    # xdist's worker input (absent without xdist)
    workers = int(getattr(config, "workerinput", {}).get("workercount", 0))
    modules = list(dict.fromkeys(item.path.name for item in items))
    short = [m for m in modules if m not in MODULE_SECONDS][:workers]
    if len(modules) > 2 * workers and short:
        order = [m for m in modules if m not in short]
        order[workers:workers] = short
        rank = {m: i for i, m in enumerate(order)}
        items.sort(key=lambda item: rank[item.path.name])
