"""What the per-year feature stages (frequencies, embeddings) share: reading a year's abstracts."""

from __future__ import annotations

from pipeline.infra.errors import UserError
from pipeline.corpus.splits import year_abstracts


def read_year_abstracts(abstracts: str, year: int) -> list[str]:
    """The year's abstracts; a year the corpus lacks is the user's to fix (params ``years``)."""
    try:
        return year_abstracts(abstracts, year)
    except ValueError:
        raise UserError(f"the corpus has no abstracts for {year}", path=abstracts,
                        fix=f"use a corpus (data.source) that covers {year}, or change the split, "
                            "features.window or score.years so that no stage reads it (then "
                            "`make graph`)") from None
