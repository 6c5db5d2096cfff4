"""The usage cap of the embeddings stage: which sentences it encodes, and what it keeps."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pipeline.corpus.sentences import sentence_pieces
from pipeline.features import embeddings as em
from pipeline.features.tokenizer import load_tokenizer, tokenize_texts
from pipeline.features.usage_sample import capped_documents, capped_sentences, hash_order
from pipeline.models.hub import MINILM
from stages import embeddings as embeddings_stage
from test_stage_features import corpus, tokenizer_dir  # noqa: F401 - module-scoped fixtures


def _documents(n: int = 300, vocab: int = 60, seed: int = 0) -> tuple[list[list[int]], list[str]]:
    rng = np.random.default_rng(seed)
    # Zipf-like: a few tokens in every abstract, a tail seen a handful of times
    probs = 1.0 / np.arange(1, vocab + 1)
    ids = [rng.choice(vocab, size=rng.integers(5, 30), p=probs / probs.sum()).tolist()
           for _ in range(n)]
    return ids, [" ".join(f"w{i}" for i in doc) + f" #{k}" for k, doc in enumerate(ids)]


@pytest.mark.parametrize("cap", [1, 3, 10])
def test_every_token_gets_its_cap_or_all_of_its_usages(cap) -> None:
    ids, texts = _documents()
    taken = capped_documents(ids, texts, cap, 60)
    total = np.bincount(np.concatenate([np.asarray(d) for d in ids]), minlength=60)
    kept = np.bincount(np.concatenate([np.asarray(ids[i]) for i in taken]), minlength=60)
    assert (kept >= np.minimum(cap, total)).all()
    assert len(taken) < len(ids)          # the frequent tokens stop needing abstracts
    # and no abstract is taken that brought nothing: dropping the last one taken breaks the rule
    last = [i for i in hash_order(texts) if i in set(taken.tolist())][-1]
    short = np.bincount(np.concatenate([np.asarray(ids[i]) for i in taken if i != last]),
                        minlength=60)
    assert not (short >= np.minimum(cap, total)).all()


def test_the_sample_does_not_depend_on_row_order() -> None:
    ids, texts = _documents()
    perm = np.random.default_rng(1).permutation(len(ids))
    taken = capped_documents(ids, texts, 5, 60)
    shuffled = capped_documents([ids[i] for i in perm], [texts[i] for i in perm], 5, 60)
    assert sorted(texts[i] for i in taken) == sorted(texts[perm[i]] for i in shuffled)


def test_a_cap_above_every_count_takes_every_abstract_with_a_token() -> None:
    ids, texts = _documents(n=40)
    ids[3] = []                           # an abstract with no token brings nothing
    taken = capped_documents(ids, texts, 10_000, 60)
    assert taken.tolist() == [i for i in range(40) if i != 3]
    with pytest.raises(ValueError, match="cap"):
        capped_documents(ids, texts, 0, 60)


def _embed(root, tokenizer_dir, out, *cap: str) -> em.PeriodEmbeddings:
    embeddings_stage.main(["--period", "2017", "--abstracts", str(root / "abstracts.parquet"),
                           "--tokenizer", str(tokenizer_dir), "--encoder", MINILM, "--layer", "-1",
                           "--batch-size", "8", "--max-length", "64", "--stride", "16",
                           "--dtype", "auto", "--device", "cpu", "--out", str(out), *cap])
    return em.read_period(out)


def test_sentences_keep_the_tokens_they_have_inside_their_abstract(
        corpus, tokenizer_dir) -> None:  # noqa: F811 - fixtures
    _, papers = corpus
    tok = load_tokenizer(tokenizer_dir)
    texts = [f"{t} We see it.  Then {t}" for t in papers["abstract"].tolist()[:6]]
    assert all("".join(sentence_pieces(t)) == t for t in texts)
    every = capped_sentences(texts, tok, 10**6)
    assert len(every) == 3 * len(texts) and sum(s.startswith(" ") for s in every) == 12
    whole = np.bincount(np.concatenate(tokenize_texts(tok, texts)), minlength=len(tok))
    parts = np.bincount(np.concatenate(tokenize_texts(tok, every)), minlength=len(tok))
    assert np.array_equal(whole, parts)


def test_the_stage_pools_fewer_sentences_under_a_cap(
        tmp_path, corpus, tokenizer_dir) -> None:  # noqa: F811 - fixtures
    root, _ = corpus
    full = _embed(root, tokenizer_dir, tmp_path / "full.safetensors")
    every = _embed(root, tokenizer_dir, tmp_path / "huge.safetensors", "--usage-cap", "100000")
    capped = _embed(root, tokenizer_dir, tmp_path / "cap.safetensors", "--usage-cap", "1")
    assert full.corpus_id == capped.corpus_id        # the period's identity, not the sample's
    # a cap above every count pools every usage, each with its sentence as context
    assert torch.equal(full.token_ids, every.token_ids) and torch.equal(full.counts, every.counts)
    cosine = torch.nn.functional.cosine_similarity(full.vectors.float(), every.vectors.float())
    assert float(cosine.mean()) > 0.9
    assert torch.equal(full.token_ids, capped.token_ids)   # every token keeps a usage
    assert (capped.counts >= torch.clamp(full.counts, max=1)).all()
    assert capped.counts.sum() < full.counts.sum()
