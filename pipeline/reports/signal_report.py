"""The signal report (stage ``signal``): reads the documents the yardstick needs, judges its
claims and writes ``reports/signal.json`` and ``reports/signal.md``.

The yardstick itself is :mod:`pipeline.forecast.signal`. Here: every period from the first
training period to the one before the test period, and the test period, read from the corpus
table (:func:`pipeline.corpus.by_period.read_period`) and tokenized as the frequencies stage
counts them; two scopes (whole abstracts; each cut to what a model of context ``max_length``
predicts); the claims judged (:func:`pipeline.stats.verdict.judge`, Holm within each scope).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

from pipeline.corpus.by_period import read_period
from pipeline.corpus.groups import NONE, abstract_groups, group_labels
from pipeline.corpus.periods import kind_of, ordinal, shift, span
from pipeline.features.tokenizer import load_tokenizer
from pipeline.forecast.documents import PeriodDocuments, tokenize_documents
from pipeline.forecast.signal import (COMPARISONS, DISTRIBUTIONS, ORACLE, PERMUTATIONS, PERMUTED,
                                      WINDOW, Scope, Signal, signal)
from pipeline.infra.errors import UserError
from pipeline.infra.io import atomic_path, write_json
from pipeline.stats.verdict import Verdict, judge, sentence, to_records

SPLIT_FIX = "choose split.train_first, split.train_last and split.test in params.yaml"


def check_periods(train_periods: Sequence[str], test: str) -> list[str]:
    """The periods before ``test`` the signal reads (first training period .. test − 1), or a
    :class:`UserError` naming the params."""
    first, last = (str(p) for p in train_periods)
    try:
        kinds = {kind_of(first), kind_of(last), kind_of(test)}
    except ValueError as err:
        raise UserError(f"the signal's periods are not labels: {err}", path="params.yaml: split",
                        fix=SPLIT_FIX) from None
    if len(kinds) != 1 or not ordinal(first) <= ordinal(last) < ordinal(test):
        raise UserError(f"the signal needs training periods {first} .. {last} of one kind, "
                        f"before the test period {test}", path="params.yaml: split",
                        fix=SPLIT_FIX)
    past = span(first, shift(test, -1))
    if len(past) < WINDOW:
        raise UserError(f"{len(past)} period before the test period {test} ({', '.join(past)}): "
                        f"recent-{WINDOW} needs {WINDOW}", path="params.yaml: split.train_first",
                        fix=f"start the training periods at {shift(test, -WINDOW)} or earlier")
    return past


def read_documents(corpus: str | os.PathLike[str], tokenizer: str | os.PathLike[str],
                   periods: Sequence[str]) -> list[PeriodDocuments]:
    """Every abstract of ``periods`` (corpus order), tokenized as the frequencies stage counts."""
    tok = load_tokenizer(tokenizer)
    out = []
    for p in periods:
        frame = read_period(corpus, p, ["key", "abstract"], purpose="measure the signal")
        out.append(tokenize_documents(tok, p, frame["key"].tolist(), frame["abstract"].tolist()))
    return out


def measure(corpus: str | os.PathLike[str], tokenizer: str | os.PathLike[str],
            train_periods: Sequence[str], test: str, max_length: int, seed: int,
            cluster_by: str = NONE) -> tuple[Signal, list[Scope], list[Verdict]]:
    """The signal of ``test``, its two scopes and their judged claims (module doc), the test
    abstracts grouped by the corpus column ``cluster_by`` (:data:`NONE`: independent)."""
    if max_length < 2:
        raise UserError(f"--max-length {max_length} leaves no token to score after the "
                        "leading EOS", path="params.yaml: train.max_length", fix="use >= 2")
    past = check_periods(train_periods, test)
    docs = read_documents(corpus, tokenizer, [*past, test])
    n_train = len(span(*train_periods))
    found = signal(docs[:-1], n_train, docs[-1], seed)
    groups = group_labels(found.test.keys, abstract_groups(str(corpus), cluster_by))
    scopes = [found.score(groups=groups), found.score(max_length - 1, groups)]
    return found, scopes, judge(c for s in scopes for c in s.claims())


def _number(x: float) -> float | None:
    return None if math.isnan(x) else x


def document(found: Signal, scopes: Sequence[Scope], verdicts: Sequence[Verdict],
             max_length: int) -> dict[str, object]:
    """``reports/signal.json``: the settings, one table row per scope and distribution, and the
    verdict records."""
    return {
        "test_period": found.test.period, "seed": found.seed, "permutations": PERMUTATIONS,
        "max_length": max_length,
        "n_documents": found.test.n_documents,
        "periods": {d: list(found.periods[d]) for d in DISTRIBUTIONS},
        "table": [{"scope": s.name, "distribution": d, "ppl": s.ppl(d),
                   "share_of_oracle": _number(s.share(d)), "n_tokens": s.n_tokens}
                  for s in scopes for d in DISTRIBUTIONS],
        "verdicts": to_records(verdicts),
    }


def markdown(found: Signal, scopes: Sequence[Scope], verdicts: Sequence[Verdict]) -> str:
    """``reports/signal.md``: the table and the sentences of the records."""
    y = found.test.period
    lines = [f"# The signal: unigram perplexity of {y} under recent and pooled counts", "",
             f"Each of {found.test.n_documents} abstracts of {y} is scored under add-one smoothed "
             "unigram distributions of these counts (`pipeline/forecast/signal.py`):", ""]
    lines += [f"- **{d}**: {_made_of(found, d)}" for d in DISTRIBUTIONS]
    lines += ["", "Share: (log PPL of pooled − log PPL) / (log PPL of pooled − log PPL of the "
              "oracle), the part of the oracle's gain a distribution takes.", "",
              "| scope | distribution | unigram PPL | share of the oracle's gain | tokens |",
              "|---|---|---:|---:|---:|"]
    for s in scopes:
        for d in DISTRIBUTIONS:
            share = s.share(d)
            lines.append(f"| {s.name} | {d} | {s.ppl(d):.2f} | "
                         f"{'—' if math.isnan(share) else f'{share:.2f}'} | {s.n_tokens} |")
    lines += ["", f"## Verdicts (family `signal`: {len(COMPARISONS)} comparisons per scope, "
              "Holm within each scope)", ""]
    lines += [f"- {sentence(v)}" for v in verdicts]
    return "\n".join(lines) + "\n"


def _made_of(found: Signal, name: str) -> str:
    periods = ", ".join(found.periods[name])
    if name == ORACLE:
        return (f"{periods} itself, each half's abstracts (by key hash) scored with the other "
                "half's counts")
    if name == PERMUTED:
        return (f"the periods {periods} with their documents' period labels permuted, the last "
                f"{WINDOW} of them summed; {PERMUTATIONS} permutations (seeds ({found.seed}, k)), "
                "its PPL the mean of their log PPL, its test over them")
    return f"the counts of {periods}" + (" summed" if len(found.periods[name]) > 1 else "")


def write_signal(found: Signal, scopes: Sequence[Scope], verdicts: Sequence[Verdict],
                 max_length: int, json_path: str | os.PathLike[str],
                 out: str | os.PathLike[str]) -> None:
    """Both files, each written atomically."""
    write_json(document(found, scopes, verdicts, max_length), json_path)
    with atomic_path(out) as tmp:
        tmp.write_text(markdown(found, scopes, verdicts), encoding="utf-8")
