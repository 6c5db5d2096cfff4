"""Stage `gold_words`: the content words of the dev and test abstracts, for every score stage's CM.
Its paths are fixed, so it declares them and its place (after the tokenizer) here."""

from __future__ import annotations

from pipeline.infra.interface import Input, Output, StageInterface

INTERFACE = StageInterface("gold_words", (
    Input("--dev", "dev split Parquet (data/splits/dev.parquet)"),
    Input("--test", "test split Parquet (data/splits/test.parquet)"),
    Input("--stopwords", "the paper's stopword list (CM's content words)"),
    Output("--out", "output folder: <period>.parquet (key, words) for the dev and the test period"),
), paths={"dev": "data/splits/dev.parquet", "test": "data/splits/test.parquet",
          "stopwords": "data/reference/stopwords.txt", "out": "data/gold_words"},
   after="tokenizer")
