"""The corpus filters: one language, > N words, no duplicates, and the paper's ACL rules.

Which of them apply is a choice (params ``filter.*``): ``language=None`` keeps every language
(langdetect is not even run) and ``acl_rules=False`` keeps shared-task papers, so a corpus that
is not the ACL Anthology (news, changelogs, patents) loses nothing to rules written for it.

Language identification uses langdetect, which is randomised (it samples n-grams). The authors
called it unseeded, so their corpus changed from run to run. Here every abstract gets a *fresh*
detector seeded with the same seed: langdetect re-seeds its generator at the start of each
detection, so the result for a text depends only on the text and the seed, never on which other
texts were processed before it, in what order, or in which worker process. That is what makes
the parallel filter give exactly the serial decisions (tests/test_language.py checks it).

Each dropped row gets exactly one reason, from the first check it fails, in this order:
``too_short`` (at most ``min_words`` words of prose, see :func:`word_count`), ``language:<code>``
(the detected language of the abstract is not the wanted one; ``unknown`` when langdetect finds
no letters it knows), ``shared_task`` (title, abstract or URL mention a shared task or SemEval),
then ``duplicate_of:<key>`` (the same abstract text as an earlier kept row; the first occurrence
in corpus order is kept).

Length comes first because langdetect guesses wildly on a few symbols: an abstract that is only
LaTeX maths (``$\\alpha + \\beta = \\gamma$``, decoded to "α + β = γ") used to be dropped as Greek.
Words are counted after leaving out maths: a word is a whitespace token holding a run of two or
more letters, so single-letter variables, Greek letters, numbers and operators do not count; and
each character of a script written without spaces (Chinese, Japanese, Thai, ...) counts as one
word, so a Chinese abstract is long enough and is reported as Chinese, not as too short.
"""

from __future__ import annotations

import multiprocessing
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
from langdetect.detector_factory import PROFILES_DIRECTORY, DetectorFactory
from langdetect.lang_detect_exception import LangDetectException
from tqdm import tqdm

UNKNOWN = "unknown"
SHARED_TASK = re.compile(r"shared[\s-]*tasks?\b|sem[\s-]?eval", re.IGNORECASE)

_factory: DetectorFactory | None = None  # one per process: loading the profiles takes ~0.2 s


def _get_factory(seed: int) -> DetectorFactory:
    global _factory
    if _factory is None:
        _factory = DetectorFactory()
        _factory.load_profile(PROFILES_DIRECTORY)
    _factory.set_seed(seed)
    return _factory


def detect_language(text: str, seed: int = 0) -> str:
    """langdetect's language code for ``text`` (e.g. ``en``, ``fr``, ``zh-cn``), or ``unknown``.

    A new detector per call, seeded with ``seed``: the answer depends only on (text, seed).
    """
    detector = _get_factory(seed).create()
    detector.append(text)
    try:
        return detector.detect()
    except LangDetectException:  # no letters langdetect knows (digits, symbols only)
        return UNKNOWN


def _detect_with_seed(args: tuple[str, int]) -> str:
    return detect_language(*args)


def detect_languages(texts: Sequence[str], seed: int = 0, workers: int = 1,
                     progress: bool = True) -> list[str]:
    """:func:`detect_language` for every text, in order, using ``workers`` processes.

    The result is identical for any ``workers`` (see the module docstring).
    """
    jobs = [(text, seed) for text in texts]
    bar = dict(total=len(jobs), desc="language", unit="abstract", disable=not progress,
               mininterval=1.0)
    if workers <= 1 or len(jobs) < 200:
        return [_detect_with_seed(job) for job in tqdm(jobs, **bar)]
    # fork shares the already imported code; chunks keep inter-process traffic small.
    context = multiprocessing.get_context("fork")
    with context.Pool(workers) as pool:
        found = list(tqdm(pool.imap(_detect_with_seed, jobs, chunksize=64), **bar))
        # Close and join before the block's terminate(): terminate can race the pool's
        # respawn of a worker and then wait forever on the new one, idle in SimpleQueue.get.
        pool.close()
        pool.join()
    return found


def is_shared_task(title: str, abstract: str, url: str | None) -> bool:
    """True for shared-task / SemEval papers (the paper excludes them)."""
    return any(SHARED_TASK.search(text) for text in (title, abstract, url or "") if text)


# A run of two or more letters (any script): what makes a token a word rather than maths.
_LETTER_RUN = re.compile(r"[^\W\d_]{2,}")
# Scripts written without spaces between words: Hiragana, Katakana, CJK ideographs, Thai, Lao,
# Myanmar, Khmer. Each character counts as one word.
_UNSPACED = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
                       "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff]")


def word_count(text: str) -> int:
    """Words of prose in ``text``, maths left out (see the module docstring)."""
    unspaced = len(_UNSPACED.findall(text))
    if unspaced:
        text = _UNSPACED.sub(" ", text)
    return unspaced + sum(1 for token in text.split() if _LETTER_RUN.search(token))


@dataclass(frozen=True)
class FilterResult:
    kept: pd.DataFrame     # the input columns, corpus order
    dropped: pd.DataFrame  # the input columns + ``reason``, corpus order


def filter_papers(papers: pd.DataFrame, language: str | None = "en", seed: int = 0,
                  min_words: int = 10, workers: int = 1, progress: bool = True,
                  acl_rules: bool = True) -> FilterResult:
    """Apply the corpus filters (module docstring) to a papers table (docs/formats.md).

    ``language=None`` turns the language filter off, ``acl_rules=False`` the shared-task rule;
    a table without a ``url`` column (not BibTeX) is checked on title and abstract only.
    """
    titles, abstracts = papers["title"].tolist(), papers["abstract"].tolist()
    urls = papers["url"].tolist() if "url" in papers.columns else [None] * len(papers)
    detected = (detect_languages(abstracts, seed=seed, workers=workers, progress=progress)
                if language is not None else [None] * len(papers))
    reasons: list[str | None] = [None] * len(papers)
    for i, (title, abstract, url, code) in enumerate(zip(titles, abstracts, urls, detected)):
        if word_count(abstract) <= min_words:
            reasons[i] = "too_short"
        elif language is not None and code != language:
            reasons[i] = f"language:{code}"
        elif acl_rules and is_shared_task(title, abstract, url if isinstance(url, str) else None):
            reasons[i] = "shared_task"

    first_key: dict[str, str] = {}
    keys = papers["key"].tolist()
    for i, abstract in enumerate(abstracts):
        if reasons[i] is not None:
            continue
        if abstract in first_key:
            reasons[i] = f"duplicate_of:{first_key[abstract]}"
        else:
            first_key[abstract] = keys[i]

    reason = pd.Series(reasons, index=papers.index, dtype=object)
    keep = reason.isna()
    kept = papers[keep.to_numpy()].reset_index(drop=True)
    dropped = papers[~keep.to_numpy()].assign(reason=reason[~keep].astype(str)).reset_index(
        drop=True)
    return FilterResult(kept=kept, dropped=dropped)


def reason_category(reason: str) -> str:
    """``language:fr`` -> ``language``, ``duplicate_of:key`` -> ``duplicate``."""
    head = reason.split(":", 1)[0]
    return "duplicate" if head == "duplicate_of" else head


def corpus_counts(result: FilterResult) -> dict[str, object]:
    """reports/corpus.json: totals, dropped-by-reason and per-year kept / dropped-by-reason
    counts, and ``last_date``, the latest kept document's date (the report stars the period
    holding it as possibly incomplete); the DVC metrics are their :func:`corpus_headline`."""
    categories = result.dropped["reason"].map(reason_category)
    dropped_by_year: dict[int, Counter[str]] = {}
    for year, category in zip(result.dropped["year"].tolist(), categories.tolist()):
        dropped_by_year.setdefault(int(year), Counter())[category] += 1
    kept_by_year = Counter(int(y) for y in result.kept["year"].tolist())
    years = sorted(set(kept_by_year) | set(dropped_by_year))
    per_year = {
        str(year): {
            "kept": kept_by_year.get(year, 0),
            "dropped": dict(sorted(dropped_by_year.get(year, Counter()).items())),
        }
        for year in years
    }
    languages = Counter(r.split(":", 1)[1] for r in result.dropped["reason"]
                        if r.startswith("language:"))
    return {
        "papers": len(result.kept) + len(result.dropped),
        "kept": len(result.kept),
        "dropped": dict(sorted(Counter(categories.tolist()).items())),
        "dropped_languages": dict(sorted(languages.items())),
        "per_year": per_year,
        "last_date": _last_date(result.kept),
    }


def _last_date(kept: pd.DataFrame) -> str | None:
    """The latest normalised date among ``kept`` (``YYYY`` < ``YYYY-MM`` < ``YYYY-MM-DD`` of the
    same year sort in that order as strings, and a later year always sorts later)."""
    column = "date" if "date" in kept.columns else "year"
    values = kept[column].dropna().astype(str)
    return str(values.max()) if len(values) else None


def corpus_headline(counts: dict[str, object]) -> dict[str, int]:
    """metrics/corpus.json, the DVC metrics of :func:`corpus_counts`: papers, kept and dropped
    (all reasons together); the breakdowns stay in reports/corpus.json."""
    dropped = counts["dropped"]
    total = sum(dropped.values()) if isinstance(dropped, dict) else int(dropped)
    return {"papers": int(counts["papers"]), "kept": int(counts["kept"]), "dropped": total}
