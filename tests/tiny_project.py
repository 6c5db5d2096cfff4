"""The tiny BibTeX project the frozen-, adapted- and cached-base tests and the variant seam share:
a small real export cut from the embedded sample and params for a 1-layer model (not a test
module: only what those tests build their projects from)."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

from pipeline.corpus.anthology import parse_file

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
