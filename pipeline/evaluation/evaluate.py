"""Evaluating one trained future LM on a list of periods: the score stage's computation and output.

Periods are labels (``2021``, ``2021H1``, ``2021Q3``, ``2021-07``; :mod:`pipeline.corpus.periods`).
For every evaluated period ``i`` (the dev and test periods, plus any later periods for staleness
curves), with period ``i``'s own history (periods ``i-m .. i-1``): PPL and CPL over all of that
period's abstracts (:mod:`pipeline.models.scoring`), a per-position table of NLLs, and — for the
periods asked for — N generated abstracts with the period's bias (§4.6) and their content METEOR
against the period's gold abstracts. Scoring and generation run in ``score.precision``
(:mod:`pipeline.infra.precision`).

Output folder (``write_evaluation``; the format is fixed in docs/formats.md, "Scores"):
``metrics.json`` = {"variant", "seed", "dev_period", "test_period", "periods": {"<label>":
metrics}, "dev": metrics of the dev period, "test": metrics of the test period}, and per period
``tokens_<label>.parquet``, ``positions_<label>.parquet``, ``generations_<label>.parquet``
(generated periods only). Periods are evaluated and listed in time order.

No second pass scores a period with another period's history: one wrong history is one unit; a
history effect needs a distribution over many histories, which the time-free control
(``<variant>-static``) provides.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from transformers import PreTrainedTokenizerBase

from pipeline.corpus.by_period import read_period
from pipeline.corpus.periods import in_time_order
from pipeline.infra.schema.config import ScoreConfig
from pipeline.evaluation.content import content_token_mask
from pipeline.evaluation.gold_words import read_gold_words
from pipeline.evaluation.splits import COLUMNS, read_split
from pipeline.evaluation.layout import METRICS_FILE, generations_file, positions_file, tokens_file
from pipeline.infra.errors import UserError
from pipeline.models.encoding import encode_for_model
from pipeline.models.future_lm import FutureLM, load_histories
from pipeline.models.generation import GenerationSettings, generate_abstracts
from pipeline.models.perplexity import perplexities
from pipeline.models.scoring import score_abstracts
from pipeline.features.history import PeriodHistory
from pipeline.infra.io import write_json, write_parquet
from pipeline.evaluation.meteor import content_meteor
from pipeline.infra.precision import compute_precision


@dataclass(frozen=True)
class EvalPeriods:
    """The abstracts of every evaluated period (columns key, period, abstract; corpus order),
    keyed by label in time order."""

    dev_period: str
    test_period: str
    abstracts: dict[str, pd.DataFrame]


def read_eval_periods(dev: str | Path, test: str | Path, periods: Sequence[str | int] = (),
                      corpus: str | Path | None = None) -> EvalPeriods:
    """Dev and test abstracts from their split files; every other period of ``periods`` from the
    corpus table (``data/corpus/abstracts.parquet``, :func:`pipeline.corpus.by_period.read_period`)."""
    frames = {}
    dev_period, dev_df = read_split(dev, "dev")
    test_period, test_df = read_split(test, "test")
    frames[dev_period], frames[test_period] = dev_df, test_df
    extra = in_time_order(set(map(str, periods)) - set(frames))
    if extra:
        if corpus is None:
            raise UserError(f"periods {extra} are not the dev or test period, so their abstracts "
                            "come from the corpus table", fix="pass --abstracts "
                            "data/corpus/abstracts.parquet")
        for period in extra:
            frames[period] = read_period(corpus, period, COLUMNS, purpose=f"score {period}")
    return EvalPeriods(dev_period, test_period, {p: frames[p] for p in in_time_order(frames)})


@dataclass(frozen=True)
class PeriodScores:
    metrics: dict
    tokens: pd.DataFrame
    positions: pd.DataFrame
    generations: pd.DataFrame | None


def evaluate_period(model: FutureLM, tok: PreTrainedTokenizerBase, abstracts: pd.DataFrame,
                    period: str, history: PeriodHistory | None, *, batch_size: int,
                    settings: GenerationSettings | None, stopwords: frozenset[str],
                    content_mask: np.ndarray,
                    gold_words: list[list[str]] | None = None) -> PeriodScores:
    """Scores, per-position NLLs and (if ``settings``) generations of one period's abstracts;
    ``gold_words``: the abstracts' content words for CM, if computed already (else computed here)."""
    texts = abstracts["abstract"].tolist()
    encoded, n_truncated = encode_for_model(tok, texts, model.context_length)
    start = time.perf_counter()
    scores = score_abstracts(model, encoded, content_mask, history, batch_size,
                             pad_id=tok.eos_token_id, desc=f"{period} PPL", positions=True)
    rate = scores.tokens["n_tokens"].sum() / (time.perf_counter() - start)
    tokens = scores.tokens
    tokens.insert(0, "key", abstracts["key"].to_numpy())
    tokens.insert(1, "period", period)
    ppl, cpl = perplexities(tokens)
    assert scores.positions is not None
    metrics = {"period": period, "ppl": ppl.ppl, "cpl": cpl.ppl, "cm": None,
               "n_abstracts": len(abstracts), "n_tokens": ppl.n_tokens,
               "n_content_tokens": cpl.n_tokens, "n_truncated": n_truncated,
               "context_length": model.context_length,
               "top10": float(scores.positions["top10"].mean()),
               "n_generated": 0, "n_gold": len(abstracts)}
    note = f"{ppl.n_tokens} tokens scored at {rate:.0f} tokens/s"
    gens = None
    if settings is not None:
        start = time.perf_counter()
        gens = generate_abstracts(model, tok, history, settings, desc=f"{period} generation")
        best = content_meteor(gens["text"].tolist(), texts, stopwords, gold_words)
        keys = abstracts["key"].tolist()
        gens["period"] = period
        gens["cm"] = [b.score for b in best]
        gens["cm_gold_key"] = [keys[b.index] if b.index >= 0 else None for b in best]
        metrics.update(cm=float(gens["cm"].mean()), n_generated=len(gens))
        note += (f"; {len(gens)} abstracts generated and scored against {len(texts)} gold "
                 f"abstracts in {time.perf_counter() - start:.1f} s")
    cm = "-" if metrics["cm"] is None else f"{metrics['cm']:.4f}"
    print(f"{period}: PPL {ppl.ppl:.2f} CPL {cpl.ppl:.2f} CM {cm} ({note})", file=sys.stderr)
    return PeriodScores(metrics, tokens, scores.positions, gens)


@dataclass(frozen=True)
class Evaluation:
    metrics: dict
    periods: dict[str, PeriodScores]
    settings: GenerationSettings
    variant: str


def evaluate_model(model: FutureLM, tok: PreTrainedTokenizerBase, data: EvalPeriods, *,
                   frequencies: str | Path | None, embeddings: str | Path | None,
                   config: ScoreConfig, settings: GenerationSettings,
                   stopwords: frozenset[str], tokenizer_dir: str | Path | None = None,
                   gold_words: str | Path | None = None) -> Evaluation:
    """Every period of ``data``, each with its own history; generation for
    ``config.generate_periods`` (default: the dev and test periods). ``tokenizer_dir``: the folder ``tok`` came from, against which
    the feature files are checked. ``gold_words``: the ``gold_words`` stage's folder, whose
    content words of a generated period's abstracts CM reads instead of computing them."""
    generate = (set(map(str, config.generate_periods)) if config.generate_periods is not None
                else {data.dev_period, data.test_period})
    if generate and settings.max_new_tokens + 1 > model.context_length:
        raise UserError(f"generating {settings.max_new_tokens} tokens after the start token "
                        f"exceeds the model's context length {model.context_length} "
                        "(the train.max_length it was trained with)", path="score.max_new_tokens",
                        fix=f"set score.max_new_tokens <= {model.context_length - 1}, or raise "
                            "train.max_length")
    content_mask = content_token_mask(tok, stopwords)
    results = {}

    def history_of(period: str) -> PeriodHistory | None:
        return load_histories([period], model.window, model.history_kinds, frequencies,
                              embeddings, tokenizer=tokenizer_dir,
                              static_periods=model.static_periods,
                              reference_periods=model.reference_periods).get(period)

    for period, abstracts in data.abstracts.items():
        history = history_of(period)
        words = (read_gold_words(gold_words, period, abstracts["key"].tolist())
                 if gold_words is not None and period in generate else None)
        with compute_precision(model.device, config.precision):
            results[period] = evaluate_period(
                model, tok, abstracts, period, history, batch_size=config.batch_size,
                settings=settings if period in generate else None, stopwords=stopwords,
                content_mask=content_mask, gold_words=words)
    per_period = {p: r.metrics for p, r in results.items()}
    metrics = {"variant": model.variant, "seed": model.seed, "dev_period": data.dev_period,
               "test_period": data.test_period, "periods": per_period,
               "dev": per_period[data.dev_period], "test": per_period[data.test_period]}
    return Evaluation(metrics, results, settings, model.variant)


def write_evaluation(evaluation: Evaluation, folder: str | Path) -> None:
    """Write the score folder's files into the existing ``folder`` (publish it atomically)."""
    folder = Path(folder)
    for period, result in evaluation.periods.items():
        write_parquet(result.tokens, folder / tokens_file(period))
        write_parquet(result.positions, folder / positions_file(period))
        if result.generations is not None:
            write_parquet(result.generations, folder / generations_file(period),
                          metadata={"generation_settings": evaluation.settings.to_json(),
                                    "variant": evaluation.variant})
    write_json(evaluation.metrics, folder / METRICS_FILE)
