"""The stages before any model: the graph check, the corpus, the splits, the tokenizer and the
per-period features (``foreach`` over exactly the period labels :class:`pipeline.graph.plan.Plan`
derives from the structural params, so a stage is named ``frequencies@2020H2``)."""

from __future__ import annotations

from typing import Any

from pipeline.corpus.periods import shift, span
from pipeline.graph.code_deps import Code
from pipeline.graph.files import (
    ABSTRACTS,
    CORPUS_COUNTS,
    CORPUS_METRICS,
    DEV,
    DOWNLOAD_INFO,
    PAPERS,
    PERIOD_COUNTS,
    PERIOD_REJECTS,
    RAW,
    STAMP,
    TEST,
    TOKENIZER,
    TRAIN,
    feature_files,
)
from pipeline.graph.plan import STRUCTURE, Plan

# embeddings.* flags, each passed as --<key> ${embeddings.<key>} and declared as a param.
EMBEDDING_KEYS = ["encoder", "layer", "batch_size", "max_length", "stride", "dtype", "device",
                  "adapt_epochs"]


def _flags(section: str, keys: list[str]) -> str:
    return " ".join(f"--{k.replace('_', '-')} ${{{section}.{k}}}" for k in keys)


def data_stages(plan: Plan, code: Code) -> dict[str, Any]:
    return {
        "graph": {
            "cmd": f"python -m stages.graph --check --stamp {STAMP}",
            # it reads every source file to compute the other stages' code deps
            "deps": ["pipeline", "stages"],
            "params": STRUCTURE,
            "outs": [STAMP],
        },
        "download": {
            # ${data.columns} unpacks to --id X --date Y --title Z --text W (DVC dict syntax)
            "cmd": "python -m stages.download --source ${data.source} ${data.columns} "
                   f"--out {RAW} --info {DOWNLOAD_INFO}",
            "deps": [*code("download"), STAMP],
            "params": ["data.source", "data.columns"],
            # persist: DVC would delete the previous export before the command runs; kept, a
            # failed download (atomic write) leaves the last good copy in place.
            "outs": [{RAW: {"persist": True}}, {DOWNLOAD_INFO: {"cache": False}}],
        },
        "parse": {
            "cmd": f"python -m stages.parse --raw {RAW} ${{data.columns}} "
                   f"--papers {PAPERS} --rejects data/corpus/parse_rejects.parquet",
            "deps": [*code("parse"), RAW],
            "params": ["data.columns"],
            "outs": [PAPERS, "data/corpus/parse_rejects.parquet"],
        },
        "filter": {
            "cmd": f"python -m stages.filter --papers {PAPERS} "
                   f"--kept {ABSTRACTS} --dropped data/corpus/filtered_out.parquet "
                   f"--metrics {CORPUS_METRICS} --counts {CORPUS_COUNTS} "
                   "--language ${filter.language} --acl-rules ${filter.acl_rules} "
                   "--seed ${filter.seed} --min-words ${filter.min_words}",
            "deps": [*code("filter"), PAPERS],
            "params": ["filter.language", "filter.seed", "filter.min_words", "filter.acl_rules"],
            "outs": [ABSTRACTS, "data/corpus/filtered_out.parquet",
                     {CORPUS_COUNTS: {"cache": False}}],
            "metrics": [{CORPUS_METRICS: {"cache": False}}],
        },
        "split": {
            "cmd": f"python -m stages.split --abstracts {ABSTRACTS} --out-dir data/splits "
                   "--period ${split.period} "
                   "--train-first ${split.train_first} --train-last ${split.train_last} "
                   "--dev ${split.dev} --test ${split.test} "
                   "--min-documents ${split.min_documents} --window ${features.window} "
                   + _needs(plan) + f"--rejects {PERIOD_REJECTS} --counts-plot {PERIOD_COUNTS}",
            "deps": [*code("split"), ABSTRACTS],
            "params": ["split", "features.window"],
            "outs": [TRAIN, DEV, TEST, PERIOD_REJECTS],
            # rows in time order; labels of one kind also sort alphabetically in time (zero-
            # padded: 2020-09 < 2020-10, 2020H2 < 2021H1), which is how vega-lite orders the bars
            "plots": [{PERIOD_COUNTS: {
                "cache": False, "x": "abstracts", "y": "period", "template": "bar_horizontal"}}],
        },
        "tokenizer": {
            "cmd": "python -m stages.tokenizer --base ${lm.base} "
                   f"--vocab-size ${{tokenizer.vocab_size}} --train {TRAIN} --out {TOKENIZER}",
            "deps": [*code("tokenizer"), TRAIN],
            "params": ["lm.base", "tokenizer.vocab_size"],
            "outs": [TOKENIZER],
        },
    }


def _needs(plan: Plan) -> str:
    """``--needs`` with the periods the split stage does not read itself but later stages read
    the documents of (scored, forecast and report periods and their histories), or nothing."""
    own = span(shift(plan.train_periods[0], -plan.window), plan.test)  # the split's own check
    extra = [p for p in plan.text_periods if p not in own]
    return f"--needs {' '.join(extra)} " if extra else ""


def feature_stages(plan: Plan, code: Code) -> dict[str, Any]:
    """Frequencies of every period some stage reads, their plot, and the embeddings only when a
    variant reads them (no ``embeddings`` stage otherwise)."""
    freq_periods, emb_periods = plan.periods("frequencies"), plan.periods("embeddings")
    freq_files = feature_files(["frequencies"], freq_periods)
    stages: dict[str, Any] = {
        "frequencies": {"foreach": freq_periods, "do": {
            "cmd": "python -m stages.frequencies --period ${item} "
                   f"--abstracts {ABSTRACTS} --tokenizer {TOKENIZER} "
                   "--out data/features/frequencies/${item}.parquet",
            "deps": [*code("frequencies"), ABSTRACTS, TOKENIZER],
            "outs": ["data/features/frequencies/${item}.parquet"],
        }},
        "frequency_plot": {
            "cmd": "python -m stages.frequency_plot --frequencies " + " ".join(freq_files)
                   + f" --tokenizer {TOKENIZER} ${{frequencies}} --out plots/word_frequencies.csv"
                   " --png plots/word_frequencies.png",
            "deps": [*code("frequency_plot"), *freq_files, TOKENIZER],
            "params": ["frequencies.plot_words"],
            # by_word (.dvc/plots/by_word.json): one line per word of the long CSV
            "plots": [{"plots/word_frequencies.csv": {
                          "cache": False, "x": "period", "y": "log_freq", "template": "by_word"}},
                      {"plots/word_frequencies.png": {"cache": False}}],
        },
    }
    if emb_periods:
        stages["embeddings"] = {"foreach": emb_periods, "do": {
            "cmd": "python -m stages.embeddings --period ${item} "
                   f"--abstracts {ABSTRACTS} --tokenizer {TOKENIZER} "
                   + _flags("embeddings", EMBEDDING_KEYS)
                   + " --out data/features/embeddings/${item}.safetensors",
            "deps": [*code("embeddings"), ABSTRACTS, TOKENIZER],
            "params": [f"embeddings.{k}" for k in EMBEDDING_KEYS],
            "outs": ["data/features/embeddings/${item}.safetensors"],
        }}
    return stages
