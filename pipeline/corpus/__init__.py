"""Corpus: from a downloaded export to the abstracts of each year.

Download, BibTeX reading, LaTeX to Unicode, the paper's language and content filters, splits.
May import: ``pipeline.infra``.
"""
