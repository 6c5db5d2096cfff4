"""Corpus: from a downloaded export to the documents of each period.

Download, BibTeX reading, LaTeX to Unicode, the paper's language and content filters, periods
(year, half, quarter, month), splits, one period's documents.
May import: ``pipeline.infra``.
"""
