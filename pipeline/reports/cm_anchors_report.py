"""The report section "CM anchors and fluency" and its claims.

Per scored period with generations: the reference CMs of :mod:`pipeline.evaluation.cm_anchors`
(a content-word sampler and the previous period's real abstracts), and per model its CM, the
stopword share of its generated texts beside the real abstracts', and the CM of its
stopword-matched sampler (as many content words as each of its texts has). Each model's CM is a
claim against its matched sampler (family ``cm-anchor``, :mod:`pipeline.stats.verdict`): like
with like, since CM drops stopwords and a model that writes mostly stopwords would otherwise lose
to the plain sampler by its fluency alone. The items are generated abstracts, independent
samples (one per seed of the model, and the sampler's), tested on the difference of mean CMs by
Welch's t over the model's per-run means and the sampler's items
(:func:`pipeline.stats.comparisons.compare_items`). The sampler has no run-to-run spread
(``seeds`` = (model's runs, 0)). A model's CM is evidence of content only where it is ``better``
than its matched sampler.

Use: ``claims = cm_anchor_claims(models)``, judge them with the report's other claims
(:func:`pipeline.stats.verdict.judge`), then ``render_cm_anchors(verdicts, anchors, models)``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from pipeline.corpus.periods import NOUN, in_time_order, kind_of
from pipeline.evaluation.content import content_words
from pipeline.evaluation.cm_anchors import (ANCHOR_SEED, ContentSampler, PeriodAnchors,
                                            gold_abstracts, mean_stopword_share, period_anchors,
                                            previous_abstracts, sampler_cms)
from pipeline.infra.errors import UserError
from pipeline.infra.io import read_parquet
from pipeline.models.registry import display_name
from pipeline.stats.comparisons import Side, compare_items
from pipeline.stats.verdict import Claim, Verdict, claim_of, judge, sentence

FAMILY = "cm-anchor"
SAMPLER = "content-word sampler"
MATCHED = "stopword-matched sampler"


@dataclass(frozen=True)
class ModelCM:
    """One model's CM items in one period: per seed, the CM of each generated abstract; its
    generated texts (every seed's, in order) and the CM of its stopword-matched sampler's texts
    (:func:`with_matched`)."""

    name: str                 # display name
    period: str
    per_run: tuple[np.ndarray, ...]
    stopword_share: float     # mean over the generated abstracts of every seed
    texts: tuple[str, ...] = ()
    matched_cm: np.ndarray | None = None

    @property
    def n_seeds(self) -> int:
        return len(self.per_run)

    @property
    def cm(self) -> float:
        return float(np.mean([np.mean(x) for x in self.per_run]))


def model_cms(runs: Mapping[tuple[str, int], Any], variants: Sequence[str],
              seeds: Mapping[str, Sequence[int]], periods: Sequence[str],
              stopwords: frozenset[str]) -> list[ModelCM]:
    """:class:`ModelCM` of every variant and period (``runs``: :class:`pipeline.reports.scored_runs.Run`
    by (variant, seed); ``seeds``: each variant's; only periods every run generated for)."""
    out = []
    for period in periods:
        for v in variants:
            gens = [runs[(v, s)].generations[period] for s in seeds[v]]
            table = pd.concat([pd.Series(g["cm"].to_numpy(), index=g["index"].to_numpy())
                               for g in gens], axis=1, join="inner")
            if any(len(g) != len(table) for g in gens):
                raise ValueError(f"the seeds of {v} generated different abstract indices in "
                                 f"{period}")
            texts = [t for g in gens for t in g["text"].tolist()]
            out.append(ModelCM(display_name(v), period,
                               tuple(table[c].to_numpy() for c in table.columns),
                               mean_stopword_share(texts, stopwords), tuple(texts)))
    return out


def with_matched(models: Sequence[ModelCM], sampler: ContentSampler,
                 gold: Mapping[str, Sequence[str]], stopwords: frozenset[str],
                 seed: int = ANCHOR_SEED) -> list[ModelCM]:
    """Each model with the CM of its stopword-matched sampler: one sampled text per generated
    text, as many content words as it has, scored against its period's ``gold`` (their content
    words found once per period, not once per model)."""
    gold_words = {p: [content_words(text, stopwords) for text in texts]
                  for p, texts in gold.items()}
    return [replace(m, matched_cm=sampler_cms(
                sampler.sample_matching(m.texts, m.period, stopwords, seed), gold[m.period],
                stopwords, gold_words[m.period]))
            for m in models]


def build_cm_anchors(runs: Mapping[tuple[str, int], Any], variants: Sequence[str],
                     seeds: Mapping[str, Sequence[int]], *, train: str | os.PathLike[str],
                     splits: Mapping[str, str | os.PathLike[str]], corpus: str | os.PathLike[str],
                     stopwords: frozenset[str], seed: int = ANCHOR_SEED,
                     ) -> tuple[dict[str, PeriodAnchors], list[ModelCM]]:
    """The anchors of every period the runs generated for, and every model's CM there.

    ``train``: the train split (its abstracts fit the sampler); ``splits``: the dev and test
    split files by period label and ``corpus`` the corpus table, from which the gold abstracts
    are read as the score stage reads them (checked against its ``n_gold``); ``runs`` as
    :func:`model_cms`. Each anchor has as many texts as the models generated for the period."""
    first = runs[(variants[0], seeds[variants[0]][0])]
    periods = [p for p in first.periods if p in first.generations]
    if not periods:
        return {}, []
    sampler = ContentSampler.fit(read_parquet(train, columns=["abstract"])["abstract"].tolist(),
                                 stopwords)
    anchors, golds = {}, {}
    for period in periods:
        gold = golds[period] = gold_abstracts(period, splits, corpus)
        n_gold = first.period_metrics(period).get("n_gold")
        if n_gold is not None and n_gold != len(gold):
            raise UserError(f"{period} has {len(gold)} gold abstracts here but the score stage "
                            f"compared the generations with {n_gold}", path=first.folder,
                            fix="re-score the models on the current corpus and splits")
        previous, earlier = previous_abstracts(corpus, period)
        anchors[period] = period_anchors(period, previous, gold, earlier, sampler,
                                         len(first.generations[period]), stopwords, seed)
    return anchors, with_matched(model_cms(runs, variants, seeds, periods, stopwords), sampler,
                                 golds, stopwords, seed)


def cm_anchor_claims(models: Sequence[ModelCM], report: str = "results") -> list[Claim]:
    """One claim per model and period: its per-abstract CM against its stopword-matched
    sampler's (module doc; :func:`with_matched`). One family for the whole section (every
    period), Holm-adjusted together."""
    claims = []
    for m in models:
        if m.matched_cm is None:
            raise ValueError(f"{m.name} ({m.period}) has no stopword-matched sampler: "
                             "call with_matched first")
        result = compare_items(Side(m.per_run, trained=True),
                               Side([np.asarray(m.matched_cm)], trained=False),
                               names=(m.name, MATCHED))
        claims.append(claim_of(result, report=report, family=FAMILY, a=m.name, b=MATCHED,
                               metric=f"CM {m.period}", effect_unit="METEOR",
                               better_when="higher"))
    return claims


def _share(x: float) -> str:
    return "—" if math.isnan(x) else f"{x:.3f}"


def render_cm_anchors(verdicts: Sequence[Verdict], anchors: Mapping[str, PeriodAnchors],
                      models: Sequence[ModelCM], noun: str = "year") -> str:
    """The Markdown section: a table per period (anchors, then models with CM, stopword share,
    their matched sampler's CM and the verdict against it) and the verdict sentences."""
    by_key = {(v.a, v.metric): v for v in verdicts if v.family == FAMILY}
    parts = [
        "## CM anchors and fluency", "",
        f"CM has no reference point by itself, so texts that are not models are scored with "
        f"the same CM function against the same gold abstracts, as many as each model generates: "
        f"a **content-word sampler** (content words drawn i.i.d. by their training-{noun} "
        f"frequency, as many as a real training abstract has), **real abstracts of the "
        f"previous {noun}** (scored as if written for the {noun}) and, per model, a "
        f"**stopword-matched sampler** (the same draw with as many content words as each of the "
        f"model's texts has). Fluency: the **stopword share**, the share of word tokens on the "
        f"stopword list CM drops (a list of content words has 0). CM drops stopwords, so a model "
        f"that writes mostly stopwords has few content words to score and loses to the plain "
        f"sampler by fluency alone; its CM is evidence of content only where it is better than "
        f"its matched sampler's, where length and stopword share are equal (family `{FAMILY}`, "
        f"Holm over the section; a model with fewer than 3 seeds is never ordered). Code: "
        f"`pipeline/evaluation/cm_anchors.py`.", ""]
    for period in in_time_order(anchors):
        a = anchors[period]
        parts += [f"**{noun.capitalize()} {period}** ({a.n} texts per row, {a.n_gold:,} gold "
                  "abstracts)", "",
                  "| Text | CM | stopword share | matched sampler's CM | CM vs matched sampler |",
                  "|---|---:|---:|---:|---|",
                  f"| Content-word sampler | {np.mean(a.sampler_cm):.4f} | 0 | — | — |",
                  f"| Real abstracts of {a.previous} | {np.mean(a.previous_cm):.4f} | — | — | — |",
                  f"| Real abstracts of {period} (gold) | — | "
                  f"{_share(a.real_stopword_share)} | — | — |"]
        for m in models:
            if m.period != period:
                continue
            v = by_key.get((m.name, f"CM {period}"))
            matched = "—" if m.matched_cm is None else f"{np.mean(m.matched_cm):.4f}"
            parts.append(f"| {m.name} | {m.cm:.4f} | {_share(m.stopword_share)} | {matched} | "
                         f"{v.verdict if v else '—'} |")
        parts.append("")
    parts += [f"- {sentence(v)}" for v in verdicts if v.family == FAMILY]
    return "\n".join(parts).rstrip() + "\n"


@dataclass(frozen=True)
class AnchorInputs:
    """What the anchors read: the training split (the sampler's counts), the dev and test split
    files (the gold abstracts), the corpus table (the previous period) and the stopwords."""

    train: str | os.PathLike[str]
    dev: str | os.PathLike[str]
    test: str | os.PathLike[str]
    corpus: str | os.PathLike[str]
    stopwords: frozenset[str]


def anchors_section(runs: Mapping[tuple[str, int], Any], variants: Sequence[str],
                    seeds: Mapping[str, Sequence[int]], inputs: AnchorInputs
                    ) -> tuple[list[Verdict], str]:
    """The judged ``cm-anchor`` verdicts and the section "CM anchors and fluency" for the runs'
    dev and test periods (``seeds``: each variant's)."""
    first = runs[(variants[0], seeds[variants[0]][0])]
    splits = {first.split_period("dev"): inputs.dev, first.split_period("test"): inputs.test}
    anchors, models = build_cm_anchors(runs, variants, seeds, train=inputs.train, splits=splits,
                                       corpus=inputs.corpus, stopwords=inputs.stopwords)
    verdicts = judge(cm_anchor_claims(models))
    noun = NOUN[kind_of(first.split_period("test"))]
    return verdicts, render_cm_anchors(verdicts, anchors, models, noun)
