"""Identities of a tokenizer folder and of a period's corpus (pipeline.infra.identity)."""

from __future__ import annotations

import pytest

from pipeline.infra.errors import UserError
from pipeline.infra.identity import check_tokenizer, corpus_identity, repro_stage, tokenizer_identity
from pipeline.features.tokenizer import train_scratch_tokenizer


def test_tokenizer_identity_follows_content_not_place_or_litter(tmp_path) -> None:
    tok = train_scratch_tokenizer(["the cat sat on the mat"] * 20, vocab_size=280)
    tok.save_pretrained(tmp_path / "a")
    tok.save_pretrained(tmp_path / "b")
    ident = tokenizer_identity(tmp_path / "a")
    assert len(ident) == 64 and ident == tokenizer_identity(tmp_path / "b")
    (tmp_path / "b" / ".tokenizer.json.x1y2.tmp").write_text("left by a killed write")
    assert tokenizer_identity(tmp_path / "b") == ident
    other = train_scratch_tokenizer(["a dog ran in the park"] * 20, vocab_size=280)
    other.save_pretrained(tmp_path / "c")
    assert tokenizer_identity(tmp_path / "c") != ident
    (tmp_path / "b" / "futurelm.json").write_text("{}")
    assert tokenizer_identity(tmp_path / "b") != ident   # any file of the folder counts


def test_tokenizer_identity_of_a_missing_folder_says_how_to_make_it(tmp_path) -> None:
    with pytest.raises(UserError, match="does not exist") as err:
        tokenizer_identity(tmp_path / "tokenizer")
    assert "dvc repro tokenizer" in err.value.fix


def test_corpus_identity_is_order_and_boundary_sensitive() -> None:
    base = corpus_identity(["ab", "c"])
    assert base == corpus_identity(["ab", "c"])
    assert base != corpus_identity(["a", "bc"]) != corpus_identity(["c", "ab"])
    assert corpus_identity([]) != corpus_identity([""])


def test_check_tokenizer_and_repro_stage() -> None:
    check_tokenizer("f", "a" * 64, "a" * 64, "frequencies@2018")
    with pytest.raises(UserError, match="another tokenizer"):
        check_tokenizer("f", "a" * 64, "b" * 64, "frequencies@2018")
    assert repro_stage("embeddings", "data/features/embeddings/2018.safetensors") == "embeddings@2018"
    assert repro_stage("frequencies", "/tmp/x.parquet") == "frequencies"
    for label in ("2018H2", "2018Q3", "2018-07"):
        assert repro_stage("frequencies", f"f/{label}.parquet") == f"frequencies@{label}"
    assert repro_stage("frequencies", "f/2018-13.parquet") == "frequencies"
