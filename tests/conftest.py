"""Shared fixtures. Tests never reach the network: the Hugging Face hub is forced offline."""

from __future__ import annotations

import os
from pathlib import Path

# Before anything imports torch: the same CPU kernels as every stage (pipeline/infra/numerics.py).
from pipeline.infra.numerics import configure_torch, pin_kernels

pin_kernels()

import pytest  # noqa: E402
import torch  # noqa: E402
from ci_skips import CiSkips  # noqa: E402

# `make test` runs two xdist workers on two cores: one torch thread each avoids oversubscription,
# which made some tests ~10x slower. Deterministic algorithms as in every stage.
configure_torch(1)

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


def pytest_configure(config: pytest.Config) -> None:
    # In CI (CI=true) a skip not on tests/ci_skips.py's allow-list fails the run.
    config.pluginmanager.register(CiSkips(), "futurelm-ci-skips")
