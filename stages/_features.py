"""What the per-year feature stages (frequencies, embeddings) share: reading a year's abstracts."""

from __future__ import annotations

from pipeline.errors import UserError
from pipeline.splits import year_abstracts


def read_year_abstracts(abstracts: str, year: int) -> list[str]:
    """The year's abstracts; a year the corpus lacks is the user's to fix (params ``years``)."""
    try:
        return year_abstracts(abstracts, year)
    except ValueError as err:
        raise UserError(str(err), path=abstracts,
                        fix=f"remove {year} from `years:` in params.yaml, or use a corpus "
                            "(data.source) that covers it") from None
