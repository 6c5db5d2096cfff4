"""Evaluating one trained future LM on a list of years: the score stage's computation and output.

For every evaluated year ``i`` (the dev and test years, plus any later years for staleness
curves), with year ``i``'s own history (years ``i-m .. i-1``): PPL and CPL over all of that year's
abstracts (:mod:`pipeline.models.scoring`), a per-position table of NLLs, and — for the years asked
for — N generated abstracts with the year's bias (§4.6) and their content METEOR against the
year's gold abstracts. Scoring and generation run in ``score.precision``
(:mod:`pipeline.infra.precision`).

Output folder (``write_evaluation``; the format is fixed in docs/design.md, "Scores"):
``metrics.json`` = {"variant", "seed", "dev_year", "test_year", "years": {"<year>": metrics},
"dev": metrics of dev_year, "test": metrics of test_year}, and per year ``tokens_<year>.parquet``,
``positions_<year>.parquet``, ``generations_<year>.parquet`` (generated years only).
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

from pipeline.corpus.years import read_year
from pipeline.infra.config import ScoreConfig
from pipeline.evaluation.content import content_token_mask
from pipeline.evaluation.layout import METRICS_FILE, generations_file, positions_file, tokens_file
from pipeline.infra.errors import UserError
from pipeline.models.encoding import encode_for_model
from pipeline.models.future_lm import FutureLM, load_histories
from pipeline.models.generation import GenerationSettings, generate_abstracts
from pipeline.models.perplexity import perplexities
from pipeline.models.scoring import score_abstracts
from pipeline.features.history import YearHistory
from pipeline.infra.io import read_parquet, write_json, write_parquet
from pipeline.evaluation.meteor import content_meteor
from pipeline.infra.precision import compute_precision

COLUMNS = ["key", "year", "abstract"]


@dataclass(frozen=True)
class EvalYears:
    """The abstracts of every evaluated year (columns key, year, abstract; corpus order)."""

    dev_year: int
    test_year: int
    abstracts: dict[int, pd.DataFrame]


def _single_year(df: pd.DataFrame, path: str | Path, role: str) -> int:
    years = sorted(int(y) for y in df["year"].unique())
    if len(years) != 1:
        raise UserError(f"the {role} split must hold the abstracts of exactly one year, found "
                        f"{years or 'no rows'}", path=path,
                        fix=f"check split.{role}_year and rerun `dvc repro split`")
    return years[0]


def read_eval_years(dev: str | Path, test: str | Path, years: Sequence[int] = (),
                    corpus: str | Path | None = None) -> EvalYears:
    """Dev and test abstracts from their split files; every other year of ``years`` from the
    corpus table (``data/corpus/abstracts.parquet``, :func:`pipeline.corpus.years.read_year`)."""
    frames = {}
    dev_df, test_df = read_parquet(dev, columns=COLUMNS), read_parquet(test, columns=COLUMNS)
    dev_year, test_year = _single_year(dev_df, dev, "dev"), _single_year(test_df, test, "test")
    frames[dev_year], frames[test_year] = dev_df, test_df
    extra = sorted(set(years) - set(frames))
    if extra:
        if corpus is None:
            raise UserError(f"years {extra} are not the dev or test year, so their abstracts "
                            "come from the corpus table", fix="pass --abstracts "
                            "data/corpus/abstracts.parquet")
        for year in extra:
            frames[year] = read_year(corpus, year, COLUMNS, purpose=f"score {year}")
    return EvalYears(dev_year, test_year, dict(sorted(frames.items())))


@dataclass(frozen=True)
class YearScores:
    metrics: dict
    tokens: pd.DataFrame
    positions: pd.DataFrame
    generations: pd.DataFrame | None


def evaluate_year(model: FutureLM, tok: PreTrainedTokenizerBase, abstracts: pd.DataFrame,
                  year: int, history: YearHistory | None, *, batch_size: int,
                  settings: GenerationSettings | None, stopwords: frozenset[str],
                  content_mask: np.ndarray) -> YearScores:
    """Scores, per-position NLLs and (if ``settings``) generations of one year's abstracts."""
    texts = abstracts["abstract"].tolist()
    encoded, n_truncated = encode_for_model(tok, texts, model.context_length)
    start = time.perf_counter()
    scores = score_abstracts(model, encoded, content_mask, history, batch_size,
                             pad_id=tok.eos_token_id, desc=f"{year} PPL", positions=True)
    rate = scores.tokens["n_tokens"].sum() / (time.perf_counter() - start)
    tokens = scores.tokens
    tokens.insert(0, "key", abstracts["key"].to_numpy())
    tokens.insert(1, "year", year)
    ppl, cpl = perplexities(tokens)
    assert scores.positions is not None
    metrics = {"year": year, "ppl": ppl.ppl, "cpl": cpl.ppl, "cm": None,
               "n_abstracts": len(abstracts), "n_tokens": ppl.n_tokens,
               "n_content_tokens": cpl.n_tokens, "n_truncated": n_truncated,
               "context_length": model.context_length,
               "top10": float(scores.positions["top10"].mean()),
               "n_generated": 0, "n_gold": len(abstracts)}
    note = f"{ppl.n_tokens} tokens scored at {rate:.0f} tokens/s"
    gens = None
    if settings is not None:
        start = time.perf_counter()
        gens = generate_abstracts(model, tok, history, settings, desc=f"{year} generation")
        best = content_meteor(gens["text"].tolist(), texts, stopwords)
        keys = abstracts["key"].tolist()
        gens["year"] = year
        gens["cm"] = [b.score for b in best]
        gens["cm_gold_key"] = [keys[b.index] if b.index >= 0 else None for b in best]
        metrics.update(cm=float(gens["cm"].mean()), n_generated=len(gens))
        note += (f"; {len(gens)} abstracts generated and scored against {len(texts)} gold "
                 f"abstracts in {time.perf_counter() - start:.1f} s")
    cm = "-" if metrics["cm"] is None else f"{metrics['cm']:.4f}"
    print(f"{year}: PPL {ppl.ppl:.2f} CPL {cpl.ppl:.2f} CM {cm} ({note})", file=sys.stderr)
    return YearScores(metrics, tokens, scores.positions, gens)


@dataclass(frozen=True)
class Evaluation:
    metrics: dict
    years: dict[int, YearScores]
    settings: GenerationSettings
    variant: str


def evaluate_model(model: FutureLM, tok: PreTrainedTokenizerBase, data: EvalYears, *,
                   frequencies: str | Path | None, embeddings: str | Path | None,
                   config: ScoreConfig, settings: GenerationSettings,
                   stopwords: frozenset[str], tokenizer_dir: str | Path | None = None) -> Evaluation:
    """Every year of ``data``, each with its own history; generation for ``config.generate_years``
    (default: dev and test years). ``tokenizer_dir``: the folder ``tok`` came from, against which
    the feature files are checked."""
    generate = (set(config.generate_years) if config.generate_years is not None
                else {data.dev_year, data.test_year})
    if generate and settings.max_new_tokens + 1 > model.context_length:
        raise UserError(f"generating {settings.max_new_tokens} tokens after the start token "
                        f"exceeds the model's context length {model.context_length} "
                        "(the train.max_length it was trained with)", path="score.max_new_tokens",
                        fix=f"set score.max_new_tokens <= {model.context_length - 1}, or raise "
                            "train.max_length")
    content_mask = content_token_mask(tok, stopwords)
    results = {}
    for year, abstracts in data.abstracts.items():
        history = load_histories([year], model.window, model.history_kinds, frequencies,
                                 embeddings, tokenizer=tokenizer_dir).get(year)
        with compute_precision(model.device, config.precision):
            results[year] = evaluate_year(
                model, tok, abstracts, year, history, batch_size=config.batch_size,
                settings=settings if year in generate else None, stopwords=stopwords,
                content_mask=content_mask)
    per_year = {str(y): r.metrics for y, r in results.items()}
    metrics = {"variant": model.variant, "seed": model.seed, "dev_year": data.dev_year,
               "test_year": data.test_year, "years": per_year,
               "dev": per_year[str(data.dev_year)], "test": per_year[str(data.test_year)]}
    return Evaluation(metrics, results, settings, model.variant)


def write_evaluation(evaluation: Evaluation, folder: str | Path) -> None:
    """Write the score folder's files into the existing ``folder`` (publish it atomically)."""
    folder = Path(folder)
    for year, result in evaluation.years.items():
        write_parquet(result.tokens, folder / tokens_file(year))
        write_parquet(result.positions, folder / positions_file(year))
        if result.generations is not None:
            write_parquet(result.generations, folder / generations_file(year),
                          metadata={"generation_settings": evaluation.settings.to_json(),
                                    "variant": evaluation.variant})
    write_json(evaluation.metrics, folder / METRICS_FILE)
