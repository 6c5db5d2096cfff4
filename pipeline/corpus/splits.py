"""Year-based train / dev / test splits and the years of history they need.

The future LM for year i conditions on the documents of years i-m .. i-1 (the history window m,
paper Section 3). So training on years ``train_first .. train_last`` and evaluating on
``dev_year`` and ``test_year`` needs abstracts in every year from ``train_first - m`` to
``test_year - 1``; a gap there would silently give a model an empty history, so it is an error
that names the year.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from pipeline.infra.errors import UserError

SPLIT_COLUMNS = ["key", "year", "title", "abstract"]


class SplitError(UserError, ValueError):
    """The split years are inconsistent or the corpus lacks a needed year."""


@dataclass(frozen=True)
class SplitYears:
    train_first: int
    train_last: int
    dev_year: int
    test_year: int
    window: int  # history length m

    def __post_init__(self) -> None:
        if self.window < 1:
            raise SplitError(f"the history window must be >= 1 year, got {self.window}",
                             path="params.yaml: features.window", fix="set it to 1 or more")
        if not self.train_first <= self.train_last < self.dev_year < self.test_year:
            raise SplitError(
                "split years must satisfy train_first <= train_last < dev_year < test_year, got "
                f"train {self.train_first}-{self.train_last}, dev {self.dev_year}, "
                f"test {self.test_year}", path="params.yaml: split",
                fix="order the years as train_first <= train_last < dev_year < test_year")

    @property
    def history_years(self) -> list[int]:
        """Years whose documents some split's history uses: train_first-m .. test_year-1."""
        return list(range(self.train_first - self.window, self.test_year))

    def split_of(self, year: int) -> str:
        """``train``/``dev``/``test``, ``history`` (only a history year) or ``unused``."""
        if self.train_first <= year <= self.train_last:
            return "train"
        if year == self.dev_year:
            return "dev"
        if year == self.test_year:
            return "test"
        if self.train_first - self.window <= year < self.test_year:
            return "history"
        return "unused"


def check_years(abstracts: pd.DataFrame, years: SplitYears) -> None:
    """Raise :class:`SplitError` naming the first needed year that has no abstracts (and all
    the missing ones)."""
    present = set(abstracts["year"].astype(int).tolist())
    needed = sorted(set(years.history_years) | {years.dev_year, years.test_year})
    for year in needed:
        if year not in present:
            role = years.split_of(year)
            first, last = (min(present), max(present)) if present else (None, None)
            missing = [y for y in needed if y not in present]
            raise SplitError(
                f"year {year} ({role} year) has no abstracts in the corpus (it has years "
                f"{first}-{last}); with a history window of {years.window}, years "
                f"{years.history_years[0]}-{years.test_year} are needed; missing: "
                f"{', '.join(map(str, missing))}", path="params.yaml: split, features.window",
                fix="choose split years inside the corpus (params.yaml: split, "
                    "features.window) or use a larger export (data.source)")


def make_splits(abstracts: pd.DataFrame, years: SplitYears) -> dict[str, pd.DataFrame]:
    """``{"train", "dev", "test"}`` -> rows of that split (SPLIT_COLUMNS), corpus order."""
    check_years(abstracts, years)
    year = abstracts["year"].astype(int)
    masks = {
        "train": year.between(years.train_first, years.train_last),
        "dev": year == years.dev_year,
        "test": year == years.test_year,
    }
    return {name: abstracts.loc[mask, SPLIT_COLUMNS].reset_index(drop=True)
            for name, mask in masks.items()}


def year_counts(abstracts: pd.DataFrame, years: SplitYears) -> pd.DataFrame:
    """Abstracts per year with each year's role (the paper's Figure 3): year, abstracts, split."""
    counts = abstracts["year"].astype(int).value_counts().sort_index()
    return pd.DataFrame({
        "year": counts.index.astype(int),
        "abstracts": counts.to_numpy().astype(int),
        "split": [years.split_of(int(y)) for y in counts.index],
    })
