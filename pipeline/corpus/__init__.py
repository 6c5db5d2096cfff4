"""Corpus: from a downloaded export to the documents of each period.

Download, the format of a corpus file from its content, BibTeX reading, CSV / TSV / JSON Lines /
Parquet reading with a column mapping, dates, LaTeX to Unicode, the language and content
filters, periods (year, half, quarter, month), splits, one period's documents.
May import: ``pipeline.infra``.
"""
