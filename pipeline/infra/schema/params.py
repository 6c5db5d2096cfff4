"""The schema of ``params.yaml``: each section's settings as typed dataclasses with defaults.

Together with :mod:`pipeline.infra.schema.config` (training, scoring, decoding) this is the one
place where every param has a type, a default and a help text. A param key is the field's option
name without the dashes (``--min-words`` <-> ``filter.min_words``), which is also how the stage
graph passes it (``--min-words ${filter.min_words}``); the stages build their options from these
classes (``stages/_lib/options.py``), so ``--help`` shows the same default as the schema.

:data:`SECTIONS` says which classes hold each section's keys. ``params.yaml`` and
``profiles/*.yaml`` only state values; :func:`unknown_keys` finds any key they hold that no class
defines (``tests/test_params_schema.py`` runs it on every file), so a typo such as
``train.learning_rate`` is an error, not a silently ignored setting.

Each field's default is the default run's value, the one ``params.yaml`` is rendered from (``make
params``; :mod:`pipeline.graph.profiles`), so a stage's ``--help`` shows the value the default run
passes it; a profile (``profiles/paper.yaml``: the paper's settings) overlays them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from pipeline.infra.schema.config import (GenerationSettings, LMConfig, ModelConfig, ScoreConfig,
                                    TrainConfig)


def _help(text: str, **meta: Any) -> dict[str, Any]:
    return {"help": text, **meta}


@dataclass(frozen=True)
class ColumnsConfig:
    """params ``data.columns``: the corpus's own column (or JSON key) names of the four fields a
    document needs; ignored for BibTeX. DVC passes the mapping as ``--id X --date Y ...``."""

    id: str = field(default="id", metadata=_help("column holding the document's unique id"))
    date: str = field(default="date", metadata=_help(
        "column holding its date: YYYY, YYYY-MM, YYYY-MM-DD or an ISO date-time"))
    title: str | None = field(default="title", metadata=_help(
        "column holding its title; absent or null: no titles", none="None"))
    text: str = field(default="text", metadata=_help("column holding its text (the abstract)"))


@dataclass(frozen=True)
class DataConfig:
    """Where the corpus comes from (params ``data.*``)."""

    # the embedded sample (offline); the official export is profiles/paper.yaml's
    source: str = field(default="data/sample/anthology-sample.bib.gz", metadata=_help(
        "http(s) URL or local path of the corpus: BibTeX (the Anthology's "
        "anthology+abstracts.bib.gz), CSV, TSV, JSON Lines (each optionally gzipped) or Parquet"))
    columns: ColumnsConfig = field(default_factory=ColumnsConfig, metadata=_help(
        "the corpus's names of id, date, title and text (ColumnsConfig); ignored for BibTeX"))


@dataclass(frozen=True)
class FilterConfig:
    """The paper's corpus filters (params ``filter.*``)."""

    language: str | None = field(default="en", metadata=_help(
        "langdetect code of the language to keep; null in params.yaml (None on the command "
        "line, as DVC writes null) keeps every language", none="None"))
    seed: int = field(default=0, metadata=_help(
        "langdetect seed: the same input always keeps the same set"))
    min_words: int = field(default=10, metadata=_help(
        "keep abstracts with MORE than this many words (paper: 10)"))
    acl_rules: Literal["auto", "true", "false"] = field(default="auto", metadata=_help(
        "drop shared-task and SemEval papers (the paper's ACL Anthology rules); auto: on when "
        "the corpus is BibTeX, off for CSV, TSV, JSON Lines and Parquet"))
    # A control corpus, not a filter: the one place every later stage reads dates from is this
    # stage's output, so a permutation here reaches the splits and every feature alike.
    permute_first: int | None = field(default=None, metadata=_help(
        "a time-free control corpus: the kept documents of years permute_first..permute_last "
        "swap dates among themselves at random (pipeline/corpus/permuted_dates.py); null (None "
        "on the command line): the real dates", none="None"))
    permute_last: int | None = field(default=None, metadata=_help(
        "the last year whose documents' dates are permuted (with permute_first)", none="None"))
    permute_seed: int = field(default=0, metadata=_help("seed of that permutation"))


@dataclass(frozen=True)
class SplitConfig:
    """Period-based train/dev/test split (params ``split.*``). Each period is a label of kind
    ``period`` (``pipeline.corpus.periods``); the defaults are the sample's years, as YAML reads
    them (ints: ``param_label`` takes a year either way)."""

    train_first: str = field(default=2017, metadata=_help(
        "first training period (paper: 2003)"))
    train_last: str = field(default=2019, metadata=_help(
        "last training period (paper: 2019)"))
    dev: str = field(default=2020, metadata=_help(
        "the dev period (early stopping)"))
    test: str = field(default=2021, metadata=_help("the test period"))
    period: Literal["year", "half", "quarter", "month"] = field(default="year", metadata=_help(
        "what one period is: year (2020), half (2020H2), quarter (2020Q3) or month (2020-07)"))
    # 50: fifty ~100-token abstracts are ~5,000 LM tokens, about the size of the default vocabulary
    # (4,096), so below that a period's add-one-smoothed frequencies are mostly smoothing and its
    # PPL rests on a handful of texts. The sample's thinnest period the default run reads (2015,
    # history only) has 58, so the default run does not warn.
    min_documents: int = field(default=50, metadata=_help(
        "warn when a period the run reads has fewer documents than this"))


@dataclass(frozen=True)
class NumericsConfig:
    """Which CPU kernels every torch stage runs (params ``numerics.*``;
    :mod:`pipeline.infra.numerics`). It changes results, so it is a param."""

    kernels: Literal["portable", "native"] = field(default="portable", metadata=_help(
        "portable: the same bytes on the AMD CPUs measured (Zen 3, Zen 5), with or without "
        "AVX-512, not on a 2-core Intel Xeon measured (docs/numerics.md; MKL's vendor-neutral "
        "SGEMM: a training step costs ~1.7x native at 2 threads, "
        "benchmarks/results/numerics.md); native: MKL's fastest code path for this CPU, whose "
        "bytes differ between CPU vendors and generations"))


@dataclass(frozen=True)
class TokenizerConfig:
    """The LM tokenizer when the base LM is trained from scratch (params ``tokenizer.*``)."""

    vocab_size: int = field(default=4096, metadata=_help(
        "byte-level BPE vocabulary size, only used with lm.base: scratch"))


@dataclass(frozen=True)
class FrequenciesConfig:
    """The word-frequency plot (params ``frequencies.*``; the paper's Figure 1b)."""

    plot_words: tuple[str, ...] = field(default=("neural", "embedding", "bert", "transformer",
                                                 "pretraining"), metadata=_help(
        "words whose frequency over the years is plotted", nargs="+"))


@dataclass(frozen=True)
class EmbeddingsConfig:
    """Per-year pooled contextual embeddings (params ``embeddings.*``; paper §3.3)."""

    encoder: str = field(default="sentence-transformers/all-MiniLM-L6-v2", metadata=_help(
        "encoder hub id or local path (the default is packaged; paper: roberta-large)"))
    layer: int = field(default=-1, metadata=_help(
        "hidden layer to pool: -1 = last, 0 = embedding output, k = after layer k"))
    batch_size: int = field(default=32, metadata=_help("encoder windows per batch"))
    max_length: int = field(default=256, metadata=_help(
        "encoder window in tokens, special tokens included; longer abstracts are split into "
        "overlapping windows"))
    stride: int = field(default=32, metadata=_help("token overlap between consecutive windows"))
    dtype: str = field(default="auto", metadata=_help(
        "encoder compute dtype: auto (fp32 on CPU, bf16/fp16 on CUDA), fp32, fp16, bf16"))
    device: str = field(default="auto", metadata=_help(
        "auto (CUDA when present), cpu, cuda, cuda:1, ..."))
    adapt_epochs: int = field(default=0, metadata=_help(
        "epochs of MLM fine-tuning on each year before extraction (0 = off; needs an encoder "
        "with an MLM head)"))
    usage_cap: int | None = field(default=None, metadata=_help(
        "encode only sentences, as many as give every LM token this many usages in a period "
        "(taken in the order of a hash of their text while one holds a token with fewer; "
        "pipeline/features/usage_sample.py); null (None on the command line): every abstract "
        "whole, the paper's pooling", none="None"))


@dataclass(frozen=True)
class ExperimentConfig:
    """What is trained, scored and reported (params ``experiment.*``): variants x seeds."""

    # the headline comparison with the runs a verdict needs (docs/verdicts.md): Baseline,
    # Frequency and its time-free control, 3 seeds each (a measured run-to-run spread)
    variants: tuple[str, ...] = field(default=("baseline", "frequency", "frequency-static"),
                                      metadata=_help(
        "variants in table order (pipeline.models.registry); baseline-N = Baseline on the N "
        "latest training periods; continued-N = the trained Baseline continued on them"))
    seeds: tuple[int, ...] = field(default=(0, 1, 2), metadata=_help(
        "training seeds: every one for the Baseline and the two sides of each temporal-gain "
        "claim (a variant and its time-free control)"))
    other_seeds: tuple[int, ...] = field(default=(), metadata=_help(
        "the seeds of the other variants, some of experiment.seeds (a variant claim needs 3 "
        "runs a side, a temporal-gain claim more: pipeline.models.registry.seeds_by_variant); "
        "empty: experiment.seeds"))


@dataclass(frozen=True)
class TrainDesign:
    """How the variants of one seed relate (params ``train.base``, ``train.cache``,
    ``train.cache_storage``): shapes the stage graph."""

    base: Literal["joint", "shared", "frozen", "adapted"] = field(default="joint", metadata=_help(
        "joint: every variant fine-tunes the LM with its bias (paper); shared: Baseline is "
        "trained once, temporal variants start from it with the LM frozen; frozen: the "
        "pretrained lm.base is never trained (Baseline = it as it is), every variant trains "
        "only its module on top of it; adapted: each seed's Baseline is the pretrained lm.base "
        "with its top train.adapt_layers blocks fine-tuned on the training periods (from one "
        "trunk cache, stage trunk_cache), every other variant trains its module on it, frozen, "
        "and baseline-0 is the LM as it is (needs cache: true)"))
    cache: bool = field(default=False, metadata=_help(
        "compute the frozen LM's final hidden states once and train the variants whose module "
        "allows it (registry: Variant.cacheable) from them: base: shared, once per seed (stage "
        "base_cache-s<seed>, data/cache/baseline-s<seed>); base: frozen (required there), once "
        "for all (stage base_cache, data/cache/base, with the test period), which the score and "
        "forecast stages read too; base: adapted (required), once per seed from the trunk cache, "
        "with the test period"))
    adapt_layers: int = field(default=2, metadata=_help(
        "base: adapted: the top blocks (and the final norm) each seed's Baseline fine-tunes; "
        "the states entering them are cached once for every seed (stage trunk_cache)"))
    cache_storage: Literal["fp32", "bf16"] = field(default="fp32", metadata=_help(
        "dtype of the cached hidden states on disk: fp32 (exact) or bf16 (half the size; "
        "perplexity within 0.1 %)"))


@dataclass(frozen=True)
class ForecastConfig:
    """The next period's forecast and its backtests (params ``forecast.*``)."""

    # the year after the sample's test year; the backtests are its dev and test years
    period: str | None = field(default=2022, metadata=_help(
        "the period to forecast (read from its history and the documents of the period before); "
        "null: the period after the latest of split.test and score.periods", none="null"))
    backtest_periods: tuple[str, ...] = field(default=(2020, 2021), metadata=_help(
        "periods after the training periods whose text is known: forecast as if unknown, then "
        "scored"))
    batch_size: int = field(default=8, metadata=_help("reference contexts per forward pass"))
    seeds: tuple[int, ...] = field(default=(), metadata=_help(
        "the seeds whose runs forecast (seeds every variant runs); empty: all of those. A forecast "
        "costs several passes over the period before each forecast period, many times a score"))
    # the count of the forecast's GenerationSettings (its decoding is score.*'s)
    n_generate: int = field(default=5, metadata=_help(
        "abstracts generated per model and forecast period (paper: 100); abstract i uses seed i"))


@dataclass(frozen=True)
class ReportConfig:
    """The results report (params ``report.*``)."""

    examples: int = field(default=3, metadata=_help("generated examples per variant (Table 2)"))
    baseline: str = field(default="baseline", metadata=_help(
        "the variant every other one is tested against (paper: Baseline-all)"))
    cluster_by: str = field(default="venue", metadata=_help(
        "the corpus column that groups the abstracts (venue: each proceedings volume): the "
        "verdicts resample a group's abstracts together, as they share topics and style; none: "
        "every abstract independent"))


@dataclass(frozen=True)
class LongtailConfig:
    """Long-tail word prediction (params ``longtail.*``; paper 004's evaluation,
    :mod:`pipeline.evaluation.longtail`)."""

    high_min: int = field(default=100, metadata=_help(
        "a word is in the high-frequency bin when it occurred at least this often in the "
        "training periods"))
    mid_min: int = field(default=10, metadata=_help(
        "... in the mid-frequency bin at least this often (and less than high_min); below it: "
        "low (unseen words included). Paper 004 gives no edges"))
    seed: int = field(default=0, metadata=_help("seed of the ugrm baseline's unigram sampling"))


@dataclass(frozen=True)
class SignalConfig:
    """The signal's yardstick (params ``signal.*``, :mod:`pipeline.forecast.signal`)."""

    seed: int = field(default=0, metadata=_help(
        "seed of the permuted-dates check's permutation of the past periods' labels"))


@dataclass(frozen=True)
class ScoreGeneration:
    """Which scored periods get generated abstracts (params ``score.generate_dev``): structural,
    resolved by the stage graph into the score stages' ``--generate-periods``."""

    generate_dev: bool = field(default=True, metadata=_help(
        "false: abstracts are generated, and content METEOR and its anchors computed, for the "
        "test period only, not the dev one; on the whole export a period's generations and CM "
        "are ~25 s of every score stage"))


@dataclass(frozen=True)
class SemanticChangeGroups:
    """Whether the semantic-change stages run, and the periods and targets of their report
    (params ``semantic_change.run``, ``.first``, ``.last``, ``.targets``): structural, resolved by
    the stage graph into its stages and their commands."""

    run: bool = field(default=True, metadata=_help(
        "false: no semantic_change or semantic_benchmark stage (and no embeddings read only by "
        "them); a run about the language models alone is ~15 min shorter on the whole export"))
    first: str | None = field(default=None, metadata=_help(
        "the first group of periods: a label (2017) or an inclusive range (2015..2017); null: "
        "split.train_first", none="null"))
    last: str | None = field(default=None, metadata=_help(
        "the last group of periods, after the first; null: split.test", none="null"))
    targets: str | None = field(default=None, metadata=_help(
        "a targets file: .csv with `word` and an optional graded `truth` column, or one word "
        "per line; null: the most frequent words of both groups", none="null"))


@dataclass(frozen=True)
class SemanticChangeConfig:
    """Scoring and reporting of semantic change (params ``semantic_change.*``)."""

    n_targets: int = field(default=200, metadata=_help(
        "without a targets file: how many of the most frequent words to score"))
    min_count: int = field(default=20, metadata=_help(
        "without a targets file: a word must occur this often in each group"))
    top: int = field(default=15, metadata=_help("most changed words listed per method"))
    seed: int = field(default=0, metadata=_help(
        "seed of the correlations' bootstrap intervals and of the contextual method's usage "
        "sample"))
    max_usages: int | None = field(default=200, metadata=_help(
        "with a targets file: the contextual method encodes only the sentences holding a "
        "target, at most this many per target and period (a seeded sample); null in "
        "params.yaml (None on the command line, as DVC writes null): all. Without a targets "
        "file the method reads the embeddings stage's vectors and this is unused",
        none="None"))


@dataclass(frozen=True)
class SemanticBenchmarkConfig:
    """The pseudo-word benchmark of semantic change (params ``semantic_benchmark.*``; its periods
    are ``semantic_change.first`` / ``.last``, its encoder ``embeddings.encoder`` and ``.layer``)."""

    n_targets: int = field(default=10, metadata=_help(
        "changed pseudo-words; their shifts of the b-share spread evenly over (0, max_shift]"))
    n_controls: int = field(default=10, metadata=_help("stable pseudo-words (no shift)"))
    min_count: int = field(default=10, metadata=_help(
        "a merged word occurs at least this often in each group"))
    max_shift: float = field(default=0.8, metadata=_help(
        "largest shift of the b-share (from 0.1), in (0, 0.9)"))
    seed: int = field(default=0, metadata=_help(
        "seed of the word pairs, the replaced occurrences and the bootstrap intervals"))


@dataclass(frozen=True)
class SemanticBenchmarkSource:
    """Where the benchmark's words of known change come from (params ``semantic_benchmark.semeval``):
    structural, resolved by the stage graph into the stage's command and deps."""

    semeval: str | None = field(default=None, metadata=_help(
        "a SemEval-2020 Task 1 language folder (corpus1/, corpus2/, targets.txt, "
        "truth/graded.txt): score the methods on its two corpora against its graded truth; "
        "null: pseudo-words made from the semantic_change groups", none="null"))


@dataclass(frozen=True)
class ChangeMethodsConfig:
    """The learned semantic-change methods' settings (params ``semantic_benchmark.temporal_*``,
    ``.sgns_*``): one set for both the semantic_change stage and its benchmark."""

    # temporal-attention method (paper 003 §4, Algorithm 1): pipeline/semantic/temporal_mlm.py
    temporal_init: str = field(default="scratch", metadata=_help(
        "temporal-attention MLM: `scratch` (a small random BERT with embeddings.encoder's "
        "tokenizer) or a BERT encoder to start from (e.g. sentence-transformers/all-MiniLM-L6-v2, "
        "fresh MLM head)"))
    temporal_usages: int = field(default=200, metadata=_help(
        "temporal-attention MLM: trains on each period's sentences holding a target, at most "
        "this many per target (a seeded sample, the contextual method's draw); 0: on every text "
        "of both groups whole (a cost that grows with the corpus, not the targets)"))
    temporal_epochs: int = field(default=2, metadata=_help(
        "temporal-attention MLM: passes over its training texts (temporal_usages), at most "
        "temporal_steps batches"))
    temporal_steps: int = field(default=250, metadata=_help(
        "temporal-attention MLM: at most this many batches (0: no cap). The default is the "
        "cheapest of the budgets measured: on 40 of the export's pseudo-words, Spearman rho did "
        "not rise from 250 to 1,000 steps (benchmarks/results/semantic_mlm_budget.md)"))
    temporal_lr: float = field(default=1e-3, metadata=_help(
        "temporal-attention MLM: AdamW learning rate of the model's own weights (linear decay)"))
    temporal_lr_new: float = field(default=1e-3, metadata=_help(
        "temporal-attention MLM: learning rate of the new modules (time embedding, W_T, MLM head)"))
    temporal_batch_size: int = field(default=16, metadata=_help(
        "temporal-attention MLM: training windows per batch"))
    temporal_max_length: int = field(default=128, metadata=_help(
        "temporal-attention MLM: tokens per training window and per encoded sentence"))
    temporal_hidden: int = field(default=128, metadata=_help(
        "temporal-attention MLM from scratch: hidden size (one head per 64)"))
    temporal_depth: int = field(default=2, metadata=_help(
        "temporal-attention MLM from scratch: transformer layers"))
    temporal_sentences: int = field(default=20, metadata=_help(
        "Algorithm 1's n: sentences per period and word (drawn with the seed when more)"))
    temporal_layers: int = field(default=2, metadata=_help(
        "Algorithm 1's h: last hidden layers averaged (the embedding output counts as one)"))
    sgns_dim: int = field(default=50, metadata=_help(
        "sgns method (skip-gram with negative sampling per group, Procrustes-aligned): vector size"))
    sgns_epochs: int = field(default=5, metadata=_help("sgns method: passes over each group's texts"))


@dataclass(frozen=True)
class ContextualConfig:
    """The settings of the methods that compare an encoder's usage vectors (params
    ``semantic_benchmark.contextual_layers``, ``.apd_*``): ``contextual``, ``apd`` and
    ``apd-corrected``, in both semantic stages (one set, like :class:`ChangeMethodsConfig`; none
    of them trains, so their seed is the stage's)."""

    contextual_layers: int = field(default=1, metadata=_help(
        "contextual methods (where the encoder runs on the texts): hidden layers averaged per "
        "occurrence, the k ending at embeddings.layer (paper 003's Algorithm 1 line 7, h); 1: "
        "embeddings.layer alone. The stored embeddings files keep their one layer"))
    apd_usages: int = field(default=100, metadata=_help(
        "apd methods: at most this many usages of a word per group, a seeded sample; APD "
        "compares every usage of one group with every usage of the other"))
    apd_permutations: int = field(default=20, metadata=_help(
        "apd-corrected: shuffles of the usages' group labels whose mean APD is subtracted "
        "(each costs one APD)"))

    def __post_init__(self) -> None:
        if self.contextual_layers < 1 or self.apd_usages < 1 or self.apd_permutations < 1:
            raise ValueError("contextual_layers, apd_usages and apd_permutations must be >= 1")


# Which fields hold each params.yaml section's keys: (class, None) = all of its fields, or (class,
# the fields that are params). The other fields are set by the stage graph from other params
# (the seed from experiment.seeds, freeze_lm and init_from from train.base) or are not results.
# `features` holds the model's history settings; `train` the optimiser, the bias module's shape
# and the design.
Part = tuple[type, tuple[str, ...] | None]
SECTIONS: dict[str, tuple[Part, ...]] = {
    "data": ((DataConfig, None),),
    "filter": ((FilterConfig, None),),
    "split": ((SplitConfig, None),),
    "features": ((ModelConfig, ("window",)),),
    "lm": ((LMConfig, ("base", "n_layer", "n_head", "n_embd", "n_positions")),),
    "tokenizer": ((TokenizerConfig, None),),
    "numerics": ((NumericsConfig, None),),
    "frequencies": ((FrequenciesConfig, None),),
    "embeddings": ((EmbeddingsConfig, None),),
    "experiment": ((ExperimentConfig, None),),
    "train": ((TrainConfig, ("epochs", "batch_size", "grad_accum", "max_length", "lr_lm", "lr_new",
                             "weight_decay", "warmup_steps", "grad_clip", "patience", "precision",
                             "latest_steps")),
              (ModelConfig, ("dropout",)),
              (TrainDesign, None)),
    "score": ((ScoreConfig, ("batch_size", "periods", "precision")), (ScoreGeneration, None),
              (GenerationSettings, None)),
    "forecast": ((ForecastConfig, None),),
    "report": ((ReportConfig, ("examples", "cluster_by")),),
    "longtail": ((LongtailConfig, None),),
    "signal": ((SignalConfig, None),),
    "semantic_change": ((SemanticChangeGroups, None), (SemanticChangeConfig, None)),
    "semantic_benchmark": ((SemanticBenchmarkSource, None), (SemanticBenchmarkConfig, None),
                           (ChangeMethodsConfig, None), (ContextualConfig, None)),
}
# params.yaml `variants`: one subsection per variant, `variants.<name>.<setting>`, whose keys are
# that variant's settings class (pipeline/variants/<name>.py). The models layer owns those
# classes, so the stage graph checks these keys (pipeline.graph.plan.check_variant_settings), not infra.
VARIANT_SECTION = "variants"

def option_name(f: Any) -> str:
    """A field's command-line option: ``--<name-with-dashes>`` or ``metadata["flag"]``."""
    return f.metadata.get("flag", "--" + f.name.replace("_", "-"))


def param_key(f: Any) -> str:
    """A field's key in its params.yaml section: the option name without dashes."""
    return option_name(f)[2:].replace("-", "_")


def section_keys(section: str) -> set[str]:
    """Every key the schema defines for ``section``."""
    return {param_key(f) for cls, names in SECTIONS[section] for f in fields(cls)
            if names is None or f.name in names}


def default(cls: type, name: str) -> Any:
    """The schema default of field ``name`` of ``cls`` (for options a stage declares by hand)."""
    for f in fields(cls):
        if f.name == name:
            return f.default
    raise KeyError(f"{cls.__name__} has no field {name!r}")


def _leaves(params: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    for section, values in params.items():
        if isinstance(values, Mapping):
            for key in values:
                yield str(section), str(key)
        else:
            yield str(section), ""


def unknown_keys(params: Mapping[str, Any]) -> list[str]:
    """Dotted keys of ``params`` (a parsed params.yaml) that the schema does not define (the
    ``variants`` section aside: see :data:`VARIANT_SECTION`)."""
    bad = []
    for section, key in _leaves(params):
        if section == VARIANT_SECTION:
            continue   # checked against each variant's settings by the stage graph
        if section not in SECTIONS:
            bad.append(section)
        elif not key or key not in section_keys(section):
            bad.append(f"{section}.{key}" if key else section)
    return bad
