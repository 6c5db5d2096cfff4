"""CM anchors and fluency on the embedded real sample: the content-word sampler and its
stopword-matched draw, the previous-period anchor, the stopword share, and the cm-anchor claims
through the verdict engine."""

from __future__ import annotations

import gzip
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline.evaluation.cm_anchors import (ContentSampler, gold_abstracts, mean_stopword_share,
                                            period_anchors, previous_abstracts,
                                            previous_period_sample, stopword_share)
from pipeline.evaluation.content import content_words, load_stopwords
from pipeline.reports.cm_anchors_report import (MATCHED, ModelCM, cm_anchor_claims,
                                                render_cm_anchors, with_matched)
from pipeline.stats.verdict import judge

REPO = Path(__file__).resolve().parents[1]
SAMPLE_BIB = REPO / "data" / "sample" / "anthology-sample.bib.gz"
STOPWORDS = REPO.parent / "shared" / "data" / "stopwords.txt"
if not STOPWORDS.exists():
    STOPWORDS = REPO / "data" / "reference" / "stopwords.txt"


def sample_entries() -> pd.DataFrame:
    """(key, year, abstract) of every sample entry with an abstract, file order."""
    text = gzip.open(SAMPLE_BIB, "rt", encoding="utf-8").read()
    rows = []
    for entry in re.split(r"\n@", text)[1:]:
        key = re.match(r"\w+\{([^,]+),", entry)
        year = re.search(r'^\s*year = "(\d{4})"', entry, flags=re.M)
        abstract = re.search(r'^\s*abstract = [{"](.*?)["}],?$', entry, flags=re.M)
        if key and year and abstract:
            rows.append((key.group(1), int(year.group(1)), abstract.group(1)))
    return pd.DataFrame(rows, columns=["key", "year", "abstract"])


@pytest.fixture(scope="module")
def entries() -> pd.DataFrame:
    frame = sample_entries()
    assert (frame["year"] == 2020).sum() == 300 and (frame["year"] == 2021).sum() == 300
    return frame


@pytest.fixture(scope="module")
def stopwords() -> frozenset[str]:
    return load_stopwords(STOPWORDS)


@pytest.fixture(scope="module")
def train(entries) -> list[str]:
    return entries.loc[entries["year"].between(2016, 2018), "abstract"].tolist()


@pytest.fixture(scope="module")
def sampler(train, stopwords) -> ContentSampler:
    return ContentSampler.fit(train, stopwords)


@pytest.mark.slow
def test_sampler_is_deterministic_and_draws_only_content_words(sampler, stopwords):
    texts = sampler.sample(10, "2021")
    assert texts == sampler.sample(10, "2021")
    assert texts != sampler.sample(10, "2020")                 # another period, another stream
    assert texts != sampler.sample(10, "2021", seed=1)
    vocab = set(sampler.words)
    for text in texts:
        words = text.split()
        assert words and set(words) <= vocab
        # CM sees exactly the drawn words: all are content words, none is lost by tokenizing
        assert content_words(text, stopwords) == words


@pytest.mark.slow
def test_sampler_lengths_and_frequencies_follow_the_training_abstracts(sampler, train,
                                                                      stopwords):
    real = [len(content_words(t, stopwords)) for t in train]
    real = np.array([n for n in real if n > 0])
    texts = sampler.sample(3000, "2021")
    lengths = np.array([len(t.split()) for t in texts])
    assert set(lengths) <= set(real)
    assert abs(lengths.mean() - real.mean()) < 0.05 * real.mean()
    assert abs(np.median(lengths) - np.median(real)) <= 3
    # frequency: the most frequent training content word is the most drawn one
    counts = Counter(w for t in texts for w in t.split())
    top = sampler.words[int(np.argmax(sampler.counts))]
    assert counts.most_common(1)[0][0] == top


def test_previous_period_anchor_reads_only_the_previous_period(entries, tmp_path):
    corpus = tmp_path / "abstracts.parquet"
    entries.to_parquet(corpus, index=False)
    previous, texts = previous_abstracts(corpus, "2021")
    assert previous == "2020"
    assert texts == entries.loc[entries["year"] == 2020, "abstract"].tolist()
    drawn = previous_period_sample(texts, 10, "2021")
    assert drawn == previous_period_sample(texts, 10, "2021") and len(set(drawn)) == 10
    assert set(drawn) <= set(texts)
    assert not set(drawn) & set(entries.loc[entries["year"] != 2020, "abstract"])
    # gold: the split file for the dev/test period, else the corpus rows of the period
    split = tmp_path / "test.parquet"
    entries[entries["year"] == 2021].to_parquet(split, index=False)
    assert gold_abstracts("2021", {"2021": split}, corpus) == \
        entries.loc[entries["year"] == 2021, "abstract"].tolist()
    assert gold_abstracts("2019", {"2021": split}, corpus) == \
        entries.loc[entries["year"] == 2019, "abstract"].tolist()


def test_stopword_share(entries, sampler, stopwords):
    real = mean_stopword_share(entries.loc[entries["year"] == 2021, "abstract"].tolist(),
                               stopwords)
    assert 0.4 < real < 0.8
    assert all(stopword_share(t, stopwords) == 0 for t in sampler.sample(20, "2021"))
    assert stopword_share("the model of the data", stopwords) > 0.5
    assert np.isnan(stopword_share("42 , .", stopwords))


def anchors_and_model(entries, sampler, stopwords, generations: list[list[str]]):
    """The anchors of 2021 and a fake model whose runs generated ``generations`` (one list each)."""
    gold = entries.loc[entries["year"] == 2021, "abstract"].tolist()
    previous = entries.loc[entries["year"] == 2020, "abstract"].tolist()
    anchor = period_anchors("2021", "2020", gold, previous, sampler, len(generations[0]),
                            stopwords)
    from pipeline.evaluation.meteor import content_meteor
    per_run = tuple(np.array([b.score for b in content_meteor(texts, gold, stopwords)])
                    for texts in generations)
    texts = tuple(t for run in generations for t in run)
    model = ModelCM("Fake", "2021", per_run, mean_stopword_share(list(texts), stopwords), texts)
    return {"2021": anchor}, with_matched([model], sampler, {"2021": gold}, stopwords)


def test_the_matched_sampler_copies_each_texts_content_word_count(sampler, stopwords):
    texts = ["the model of the data and the parser", "we show that it is", "neural parsing"]
    drawn = sampler.sample_matching(texts, "2021", stopwords)
    assert drawn == sampler.sample_matching(texts, "2021", stopwords)         # deterministic
    assert [len(t.split()) for t in drawn] == [len(content_words(t, stopwords)) for t in texts]
    assert drawn[1] == "" and all(w in set(sampler.words) for t in drawn for w in t.split())


@pytest.mark.slow
def test_a_fluent_model_is_judged_against_its_matched_sampler(entries, sampler, stopwords):
    """A 'model' that writes sampler words padded with stopwords, a few content words per text:
    far below the plain sampler's CM (its texts hold few content words), yet its words are the
    sampler's, so against its stopword-matched sampler it is neither better nor worse."""
    pad = " ".join(w for w in "the of and to in a is that for we this with on as are by it an be "
                   "which".split() if w in stopwords)
    fakes = [[f"{pad} {' '.join(t.split()[:6])}" for t in sampler.sample(10, "2021", seed=s)]
             for s in (7, 8, 9)]
    anchors, models = anchors_and_model(entries, sampler, stopwords, fakes)
    assert models[0].cm < 0.7 * anchors["2021"].sampler_cm.mean()
    assert models[0].stopword_share > 0.5
    (verdict,) = judge(cm_anchor_claims(models))
    assert verdict.b == MATCHED and verdict.verdict == "not distinguishable", verdict.reason


@pytest.mark.slow
def test_real_gold_abstracts_beat_the_sampler(entries, sampler, stopwords):
    gold = entries.loc[entries["year"] == 2021, "abstract"].tolist()
    anchors, models = anchors_and_model(entries, sampler, stopwords,
                                        [gold[:10], gold[10:20], gold[20:30]])
    anchor = anchors["2021"]
    assert anchor.n == 10 and len(anchor.previous_cm) == 10
    assert 0 < anchor.sampler_cm.mean() < 0.5
    claims = cm_anchor_claims(models)
    (verdict,) = judge(claims)
    assert verdict.family == "cm-anchor" and verdict.seeds == (3, 0)
    assert verdict.verdict == "better", verdict.reason
    assert verdict.ci[0] > 0
    text = render_cm_anchors([verdict], anchors, models)
    assert "## CM anchors and fluency" in text and "| Fake |" in text and "better" in text
    assert "Real abstracts of 2020" in text


@pytest.mark.slow
def test_sampler_texts_as_a_model_are_not_better(entries, sampler, stopwords):
    """The converse: a 'model' that is itself a content-word sampler (another seed) is not
    better than the sampler, and one seed is never ordered."""
    fakes = [sampler.sample(10, "2021", seed=s) for s in (7, 8, 9)]
    anchors, models = anchors_and_model(entries, sampler, stopwords, fakes)
    (verdict,) = judge(cm_anchor_claims(models))
    assert verdict.verdict == "not distinguishable" and verdict.mde > 0
    one = [ModelCM("Fake", "2021", models[0].per_run[:1], 0.0, (), models[0].matched_cm)]
    (verdict,) = judge(cm_anchor_claims(one))
    assert verdict.verdict == "untested" and "fewer than 3" in verdict.reason


@pytest.mark.slow
def test_report_stage_adds_the_section_and_its_verdict_records(entries, stopwords, tmp_path):
    """The report stage with the splits, corpus and stopwords: the section, and the cm-anchor
    records in reports/results.json; without them (older callers) no section."""
    import json

    from stages import report as cli
    from tests.test_report import write_scores
    from pipeline.features.frequencies import write_period

    scores = tmp_path / "scores"
    for seed in (0, 1, 2):
        write_scores(scores, "baseline", seed, 0.0, 0.0, periods=("2020", "2021"))
    rng = np.random.default_rng(7)
    for year in range(2017, 2022):
        write_period(tmp_path / "freq" / f"{year}.parquet", str(year), rng.integers(0, 30, 40))
    corpus = tmp_path / "abstracts.parquet"
    entries.to_parquet(corpus, index=False)
    split = {}
    for name, years in (("train", (2018, 2019)), ("dev", (2020, 2020)), ("test", (2021, 2021))):
        split[name] = tmp_path / f"{name}.parquet"
        entries[entries["year"].between(*years)].to_parquet(split[name], index=False)
    out, details = tmp_path / "results.md", tmp_path / "results.json"
    base = ["--scores", str(scores), "--variants", "baseline", "--seeds", "0", "1", "2",
            "--baseline", "baseline", "--examples", "1", "--frequencies", str(tmp_path / "freq"),
            "--window", "2", "--train-periods", "2018", "2019", "--details", str(details),
            "--out", str(out), "--metrics-dir", str(tmp_path / "m"),
            "--plots", str(tmp_path / "p.csv"), "--staleness", str(tmp_path / "s.csv"),
            "--buckets", str(tmp_path / "b.csv")]
    cli.main(base + ["--train-split", str(split["train"]), "--dev", str(split["dev"]),
                     "--test", str(split["test"]), "--abstracts", str(corpus),
                     "--stopwords", str(STOPWORDS)])
    text = out.read_text()
    assert "## CM anchors and fluency" in text
    assert "Real abstracts of 2019" in text and "Real abstracts of 2020" in text
    records = json.loads(details.read_text())["verdicts"]
    assert [(r["family"], r["a"], r["b"], r["metric"], r["seeds"]) for r in records] == [
        ("cm-anchor", "Baseline-all", MATCHED, f"CM {p}", [3, 0])
        for p in ("2020", "2021")]
    cli.main(base)
    assert "CM anchors" not in out.read_text()
