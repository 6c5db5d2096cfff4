"""Pseudo-words: a semantic-change benchmark whose truth is known by construction.

No SemEval-2020 Task 1 data is reachable here, so, as in Shoemark et al. (2019) and
Schlechtweg & Schulte im Walde (2020), we *make* words change: two real words ``a`` and ``b`` of
comparable frequency are merged into one new token (``psw000``); its two "senses" are the usages
of ``a`` and of ``b``. Every occurrence of ``a`` is replaced; of ``b`` only as many as give the
pseudo-word the wanted *b-share* ``s`` in that period, ``k_b = round(s·n_a / (1-s))``, chosen at
random among b's occurrences of the period (the rest stay ``b``; no text is dropped). Where ``b``
is too rare for that (``k_b > n_b``), all of b and only ``round(n_b·(1-s)/s)`` random a's are
replaced instead, so the share holds rather than being capped.
A *changed* target goes from ``base_share`` in the first period(s) to ``base_share + shift`` in
the last; periods in between get a share interpolated by their rank (a gradual change). A *stable
control* has one share in every period, spread over the targets' range so that the mix alone does
not give a control away.

Truth is the Jensen-Shannon distance (base 2, in [0, 1]) between the pseudo-word's sense
distributions ``(1-p, p)`` of the pooled first and pooled last periods, with ``p`` counted from
the rewritten texts, not from the requested shares: a capped ``k_b`` or rounding shows up in the
truth. JSD is the graded-change definition of SemEval-2020 Task 1 Subtask 2 (distance between
sense-frequency distributions), so scores and Spearman correlations read as on that benchmark;
``share_first``/``share_last`` keep the plain b-share change as well. Controls hold their share
per period up to rounding, so their truth is ≈ 0 (exactly 0 when counts allow it).

Words are ASCII letters, ≥ 3 long, matched case-insensitively as whole words: not inside a longer
word nor a hyphenated compound (``model`` is not in ``model-based``), so ``Model`` at a sentence
start is the same usage as ``model``. Counting (:func:`count_words`) and replacing use one regex,
hence ``n_a``/``n_b`` are exactly what is replaced. :func:`load_semeval` reads the real task layout.
"""

from __future__ import annotations

import gzip
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.infra.errors import UserError

_LEFT, _RIGHT = r"(?<![\w-])", r"(?![\w-])"
WORD = re.compile(_LEFT + r"[A-Za-z]{3,}" + _RIGHT)
KINDS = ("changed", "control")


def word_pattern(words: Iterable[str]) -> re.Pattern[str]:
    """Whole-word, case-insensitive matches of any of ``words`` (the rule of :data:`WORD`: not
    inside a longer word nor a hyphenated compound); the one matcher for pseudo-words, their
    source words and their occurrences."""
    return re.compile(_LEFT + "(" + "|".join(re.escape(w) for w in sorted(words)) + ")" + _RIGHT,
                      re.IGNORECASE)


@dataclass(frozen=True)
class Pair:
    """Two words to merge; ``b`` is the one whose share is controlled (the more frequent one)."""
    a: str
    b: str
    kind: str  # "changed" | "control"


def count_words(texts: Iterable[str]) -> Counter[str]:
    """Lower-cased whole-word counts, by the same rule as the replacement."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(m.group(0).lower() for m in WORD.finditer(text))
    return counts


def choose_pairs(word_counts_first: Mapping[str, int], word_counts_last: Mapping[str, int],
                 n_targets: int, n_controls: int, min_count: int, seed: int,
                 stopwords: Iterable[str] = ()) -> list[Pair]:
    """Random disjoint pairs of comparable frequency, ``n_targets`` changed then ``n_controls``.

    A candidate occurs ≥ ``min_count`` times in the first *and* the last periods (both senses
    must be observable on both sides) and is no stopword. The seed draws 2·n candidates; sorted by
    total count, neighbours are paired, so partners differ little in frequency; pairs are then
    assigned to kinds at random so that neither kind is the frequent one.
    """
    stop = {w.lower() for w in stopwords}
    cands = sorted(w for w, n in word_counts_first.items()
                   if n >= min_count and word_counts_last.get(w, 0) >= min_count
                   and w not in stop and WORD.fullmatch(w) and w == w.lower())
    need = 2 * (n_targets + n_controls)
    if len(cands) < need:
        raise UserError(
            f"pseudo-words: {len(cands)} candidate words found (each ≥ min_count={min_count} "
            f"times in both the first and the last periods, not a stopword); {need} needed for "
            f"{n_targets} targets + {n_controls} controls",
            fix=f"lower min_count below {min_count}, ask for fewer pairs, or widen the periods")
    rng = np.random.default_rng(seed)
    total = {w: word_counts_first[w] + word_counts_last[w] for w in cands}
    picked = sorted((cands[i] for i in rng.choice(len(cands), need, replace=False)),
                    key=lambda w: (total[w], w))
    couples = [(picked[i], picked[i + 1]) for i in range(0, need, 2)]  # b: the more frequent
    kinds = ["changed"] * n_targets + ["control"] * n_controls
    order = rng.permutation(len(couples))
    return [Pair(couples[j][0], couples[j][1], kinds[i]) for i, j in enumerate(order)]


def _token_prefix(texts: pd.Series) -> str:
    """``psw``, or a longer prefix when the corpus already holds ``psw<digit>``."""
    prefix = "psw"
    while texts.str.contains(prefix + r"\d", case=False, regex=True).any():
        prefix += "x"
    return prefix


def make_benchmark(texts: pd.DataFrame, first_periods: Sequence[str], last_periods: Sequence[str],
                   pairs: Sequence[Pair], shifts: Sequence[float], seed: int, *,
                   base_share: float = 0.1, text_column: str = "abstract",
                   period_column: str = "period") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rewrite ``texts`` with one pseudo-word per pair; return (texts, truth).

    ``shifts`` has one b-share increase per changed pair (in order). Period labels sort in time
    order (true of every label kind in :mod:`pipeline.corpus.periods`); rows keep index and order.
    The truth table has ``word truth kind a b n_first n_last share_first share_last``.
    """
    firsts, lasts = set(map(str, first_periods)), set(map(str, last_periods))
    labels = sorted(texts[period_column].astype(str).unique())
    if not firsts or not lasts or not firsts <= set(labels) or not lasts <= set(labels):
        raise UserError(f"pseudo-words: first {sorted(firsts)} / last {sorted(lasts)} periods "
                        f"must be non-empty and among the corpus periods {labels}")
    if max(firsts) >= min(lasts):
        raise UserError("pseudo-words: every first period must come before every last period",
                        fix=f"first {sorted(firsts)}, last {sorted(lasts)}")
    words = [w for p in pairs for w in (p.a, p.b)]
    if (not pairs or len(set(words)) != len(words) or any(p.kind not in KINDS for p in pairs)
            or not all(w == w.lower() and WORD.fullmatch(w) for w in words)):
        raise ValueError(f"pairs must be ≥ 1, disjoint, lower-case words, kinds {KINDS}: {pairs}")
    changed = [p for p in pairs if p.kind == "changed"]
    if len(shifts) != len(changed) or any(not 0 <= base_share + s < 1 for s in shifts):
        raise ValueError(f"{len(changed)} changed pairs need as many shifts with "
                         f"0 <= base_share + shift < 1; got {list(shifts)}")
    spread = list(shifts) or [0.0]
    start, end, shift = {}, {}, iter(shifts)
    for i, p in enumerate(pairs):
        start[p] = base_share + (0.0 if p.kind == "changed" else spread[i % len(spread)] / 2)
        end[p] = start[p] + (next(shift) if p.kind == "changed" else 0.0)
    lo, hi = labels.index(max(firsts)), labels.index(min(lasts))
    prefix = _token_prefix(texts[text_column].astype(str))
    token = {p: f"{prefix}{i:03d}" for i, p in enumerate(pairs)}
    owner = {w.lower(): p for p in pairs for w in (p.a, p.b)}
    pattern = word_pattern(owner)
    out = texts.copy()
    period = texts[period_column].astype(str)
    counts = {p: {g: [0, 0] for g in ("first", "last")} for p in pairs}  # replaced [a, b]
    for k, label in enumerate(labels):
        rows = np.flatnonzero((period == label).to_numpy())
        seen = Counter(w.lower() for t in out[text_column].iloc[rows].astype(str)
                       for w in pattern.findall(t))
        keep: dict[str, set[int] | None] = {}  # None: all
        for i, p in enumerate(pairs):
            t = min(max((k - lo) / (hi - lo), 0.0), 1.0)
            share = start[p] + t * (end[p] - start[p])
            n_a, n_b = seen[p.a], seen[p.b]
            k_a, k_b = n_a, int(round(share * n_a / (1 - share)))
            if k_b > n_b:   # b too rare here: replace all of b and fewer a's, keeping the share
                k_a, k_b = min(n_a, int(round(n_b * (1 - share) / share))), n_b
            rng = np.random.default_rng([seed, i, k])
            for word, n, m in ((p.a, n_a, k_a), (p.b, n_b, k_b)):
                keep[word] = set(rng.choice(n, m, replace=False).tolist()) if m < n else None
            group = "first" if label in firsts else "last" if label in lasts else None
            if group:
                counts[p][group][0] += k_a
                counts[p][group][1] += k_b
        position: Counter[str] = Counter()

        def swap(m: re.Match[str]) -> str:
            word = m.group(0).lower()
            position[word] += 1
            chosen = keep[word]
            replace = chosen is None or position[word] - 1 in chosen
            return token[owner[word]] if replace else m.group(0)

        col = out.columns.get_loc(text_column)
        for r in rows:
            out.iat[r, col] = pattern.sub(swap, str(out.iat[r, col]))
    truth = []
    for p in pairs:
        (a1, b1), (a2, b2) = counts[p]["first"], counts[p]["last"]
        s1 = b1 / (a1 + b1) if a1 + b1 else float("nan")
        s2 = b2 / (a2 + b2) if a2 + b2 else float("nan")
        truth.append({"word": token[p], "truth": js_distance(s1, s2), "kind": p.kind, "a": p.a,
                      "b": p.b, "n_first": a1 + b1, "n_last": a2 + b2,
                      "share_first": s1, "share_last": s2})
    return out, pd.DataFrame(truth)


def js_distance(p: float, q: float) -> float:
    """Jensen-Shannon distance (base 2) between the two-sense distributions (1-p, p), (1-q, q)."""
    if math.isnan(p) or math.isnan(q):
        return float("nan")   # the pseudo-word does not occur on one side
    P, Q = np.array([1 - p, p]), np.array([1 - q, q])
    M = (P + Q) / 2
    kl = [float(np.sum(x[x > 0] * np.log2(x[x > 0] / M[x > 0]))) for x in (P, Q)]
    return float(np.sqrt(max(sum(kl) / 2, 0.0)))


LAYOUT = ("<folder>/corpus1/[lemma|token/]*.txt[.gz], <folder>/corpus2/[lemma|token/]*.txt[.gz] "
          "(one sentence per line), <folder>/targets.txt (one word per line), "
          "<folder>/truth/graded.txt or <folder>/graded.txt (word TAB score)")


def load_semeval(folder: str | Path, kind: str = "lemma",
                 text_column: str = "abstract") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Read a SemEval-2020 Task 1 language folder: (texts, targets with their graded truth).

    Texts have ``key`` (``corpus1:<file>:<line>``), ``period`` (``corpus1``/``corpus2``) and the
    sentence; blank lines are skipped. ``corpus<n>/<kind>/`` is read when present (the task ships
    ``lemma`` and ``token``; its targets are lemmas), else the files directly in ``corpus<n>/``.
    """
    root = Path(folder)
    rows: list[tuple[str, str, str]] = []
    for period in ("corpus1", "corpus2"):
        where = root / period / kind if (root / period / kind).is_dir() else root / period
        files = sorted(f for f in where.glob("*") if f.name.endswith((".txt", ".txt.gz")))
        if not files:
            raise UserError(f"SemEval folder: no .txt or .txt.gz file in {period}/", path=where,
                            fix=f"expected layout: {LAYOUT}")
        for f in files:
            raw = gzip.decompress(f.read_bytes()) if f.name.endswith(".gz") else f.read_bytes()
            for n, line in enumerate(raw.decode("utf-8").splitlines(), 1):
                if line.strip():
                    rows.append((f"{period}:{f.name}:{n}", period, line.strip()))
    targets_file = root / "targets.txt"
    graded = root / "truth" / "graded.txt"
    if not graded.is_file() and (root / "graded.txt").is_file():
        graded = root / "graded.txt"
    for missing, path in (("targets.txt", targets_file), ("truth/graded.txt", graded)):
        if not path.is_file():
            raise UserError(f"SemEval folder: {missing} is missing", path=root / missing,
                            fix=f"expected layout: {LAYOUT}")
    targets = [w.strip() for w in targets_file.read_text("utf-8").splitlines() if w.strip()]
    fields = [line.split() for line in graded.read_text("utf-8").splitlines()]
    scores = {f[0]: f[1] for f in fields if len(f) >= 2}
    lacking = [w for w in targets if w not in scores]
    if lacking:
        raise UserError(f"SemEval folder: {len(lacking)} targets have no graded score: "
                        f"{lacking[:5]}", path=graded, fix="one 'word<TAB>score' line per target")
    texts = pd.DataFrame(rows, columns=["key", "period", text_column])
    truth = pd.DataFrame({"word": targets, "truth": [float(scores[w]) for w in targets]})
    return texts, truth
