"""Options that several stages' declarations (:mod:`pipeline.interfaces`) share, with one help
text."""

from __future__ import annotations

from pipeline.infra.interface import Input, Params, Value
from pipeline.infra.schema.params import (ChangeMethodsConfig, ContextualConfig, ExperimentConfig,
                                   NumericsConfig)

PERIOD_HELP = "a label such as 2020, 2020H2, 2020Q3, 2020-07"
ABSTRACTS = Input("--abstracts", "corpus Parquet with columns 'date' and 'abstract' "
                                 "(data/corpus/abstracts.parquet)")
TOKENIZER = Input("--tokenizer", "LM tokenizer folder (data/tokenizer)")
# ${experiment}: DVC writes --variants ... --seeds ...; the report stages read every run
EXPERIMENT = Params(ExperimentConfig, "experiment", "runs (params experiment.*)",
                    unpack=True, whole=True)
# The runtime options of a torch stage, never passed by the graph: --kernels is appended to every
# torch stage's command (pipeline.graph.build.with_numerics); --device and --threads are where and
# how it runs (stages/_lib/args.runtime_from reads them).
NUMERICS = Params(NumericsConfig, "numerics", "CPU kernels (params numerics.*; "
                  "pipeline/infra/numerics.py)", graph=False)
DEVICE = Value("--device", "auto (CUDA when present), cpu, cuda, cuda:N (default: runtime.yaml or "
               "FUTURELM_DEVICE)", default=None, graph=False)
THREADS = Value("--threads", "torch CPU threads (default: the recorded 2, "
                "pipeline/infra/numerics.py; other values give other bytes: for tests)",
                type=int, default=None, graph=False)
# Not `--nproc`: torchrun's own parser would take it for an abbreviation of its options.
PROCESSES = Value("--processes", "processes to run, one per GPU, started with torchrun (runtime "
                  "setting; default: runtime.yaml `nproc` / FUTURELM_NPROC); ignored under "
                  "torchrun", type=int, default=None, dest_name="nproc", graph=False)
RUNTIME = (NUMERICS, DEVICE, THREADS)
# The learned semantic-change methods' settings: params of semantic_benchmark, read by both
# semantic stages (one set).
LEARNED = Params(ChangeMethodsConfig, "semantic_benchmark",
                 "learned methods (params semantic_benchmark.temporal_*, .sgns_*)")
# The usage-vector methods' settings (contextual, apd, apd-corrected): params of
# semantic_benchmark, read by both semantic stages (one set).
CONTEXTUAL = Params(ContextualConfig, "semantic_benchmark",
                    "usage-vector methods (params semantic_benchmark.contextual_layers, .apd_*)")


def period(what: str) -> Value:
    """``--period``, the one period a per-period stage reads (``${item}`` in its ``foreach``)."""
    return Value("--period", f"the period to {what}: {PERIOD_HELP}")


def group_periods(section: str) -> tuple[Value, Value]:
    """``--first`` and ``--last``: the two groups' periods (``<section>.first``/``.last``),
    resolved by the graph into the command."""
    return tuple(Value(f"--{g}", f"the {g} group's periods ({section}.{g}, resolved)",
                       many=True) for g in ("first", "last"))
