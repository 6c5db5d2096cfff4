"""What ``embeddings.usage_cap`` costs and changes: one year's pooled vectors (paper eq. 7) with
every abstract against the same year under caps of usages per token.

For each cap: the sentences the embeddings stage would encode
(:func:`pipeline.features.usage_sample.capped_sentences`), the encoder's wall time, and per LM
token seen that year the cosine between its capped and its full pooled vector, summarised by the
token's usages in the full year (a rare token keeps all of its abstracts, so its cosine is 1).
The encoder, tokenizer and windows are the stage's (:func:`plan_period`, :func:`extract_period`).

    .venv/bin/python -m benchmarks.usage_cap --abstracts data/corpus/abstracts.parquet \
        --tokenizer data/tokenizer --period 2016 [--caps 4 8 16 32] [--out FILE]

Run it in a checkout whose data stages ran on the full export (``make repro PROFILE=anthology``).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # as `make repro` runs the stages

from benchmarks._results import machine, publish  # noqa: E402
from pipeline.corpus.by_period import period_abstracts  # noqa: E402
from pipeline.features.alignment import plan_period  # noqa: E402
from pipeline.features.embeddings import extract_period  # noqa: E402
from pipeline.features.tokenizer import load_tokenizer  # noqa: E402
from pipeline.features.usage_sample import capped_sentences  # noqa: E402
from pipeline.infra.numerics import configure_torch  # noqa: E402
from pipeline.models.hub import MINILM, load_encoder, load_tokenizer_for  # noqa: E402

BANDS = ((1, 32), (32, 256), (256, 2048), (2048, None))   # usages of the token in the full year


def pooled(encoder, lm_tok, enc_tok, texts: list[str]) -> tuple[np.ndarray, np.ndarray,
                                                                    np.ndarray, float, int]:
    """(token_ids, counts, fp32 vectors, seconds, encoder tokens) of ``texts``, pooled as the
    stage pools them."""
    start = time.perf_counter()
    plan = plan_period(texts, lm_tok, enc_tok, 256, 32, 32)
    ids, counts, vectors = extract_period(encoder, plan, -1, torch.device("cpu"), progress=False)
    return ids, counts, vectors.float().numpy(), time.perf_counter() - start, plan.n_encoder_tokens


def cosines(full: np.ndarray, capped: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(full, axis=1) * np.linalg.norm(capped, axis=1)
    return (full * capped).sum(axis=1) / np.maximum(norms, 1e-12)


def band_cells(cos: np.ndarray, counts: np.ndarray) -> list[str]:
    cells = []
    for low, high in BANDS:
        inside = (counts >= low) & (counts < (high or np.inf))
        cells.append(f"{np.mean(cos[inside]):.4f} ({inside.sum()})" if inside.any() else "-")
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--abstracts", required=True, help="the filter stage's abstracts.parquet")
    parser.add_argument("--tokenizer", required=True, help="the tokenizer stage's folder")
    parser.add_argument("--period", default="2016", help="the year to pool (default 2016)")
    parser.add_argument("--caps", type=int, nargs="+", default=[4, 8, 16, 32])
    parser.add_argument("--kernels", default="native", choices=["native", "portable"],
                        help="CPU kernels, as numerics.kernels (default native: the full-export "
                             "profiles' choice)")
    parser.add_argument("--out", default=None, help="also write the Markdown here")
    args = parser.parse_args()
    configure_torch(2, args.kernels)
    torch.manual_seed(0)
    lm_tok, enc_tok = load_tokenizer(args.tokenizer), load_tokenizer_for(MINILM)
    encoder = load_encoder(MINILM).eval()
    texts = period_abstracts(args.abstracts, args.period)
    ids, counts, full, seconds, n_enc = pooled(encoder, lm_tok, enc_tok, texts)
    rows = [f"| none (the paper's pooling) | {len(texts):,} abstracts | {n_enc:,} "
            f"| {seconds:.0f} s | 1.00x | 1 | 1 | {' | '.join('1' for _ in BANDS)} |"]
    print(rows[0], flush=True)
    n_sentences = len(capped_sentences(texts, lm_tok, 10**9))
    for cap in args.caps:
        taken = capped_sentences(texts, lm_tok, cap)
        c_ids, _, capped, c_seconds, c_enc = pooled(encoder, lm_tok, enc_tok, taken)
        assert np.array_equal(c_ids, ids), "a capped year lost a token"
        cos = cosines(full, capped)
        rows.append(f"| {cap} | {len(taken):,} of {n_sentences:,} sentences | {c_enc:,} "
                    f"| {c_seconds:.0f} s | {c_seconds / seconds:.2f}x | {cos.mean():.4f} "
                    f"| {np.percentile(cos, 1):.4f} | "
                    f"{' | '.join(band_cells(cos, counts))} |")
        print(rows[-1], flush=True)
    bands = " | ".join(f"cos, {lo}-{(hi or 0) - 1 if hi else '…'} usages (tokens)"
                       for lo, hi in BANDS)
    text = "\n".join([
        f"Year {args.period} of `{args.abstracts}`: {len(texts):,} abstracts, {len(ids):,} LM "
        f"tokens seen ({int(counts.sum()):,} usages), all-MiniLM-L6-v2 on CPU "
        f"({torch.get_num_threads()} threads, {args.kernels} kernels), "
        f"{machine()}, "
        f"torch {torch.__version__}.",
        "",
        f"| usage cap | encoded | encoder tokens | wall | / all | mean cos | 1st pct cos "
        f"| {bands} |",
        "|---|---:|---:|---:|---:|---:|---:|" + "---:|" * len(BANDS),
        *rows])
    publish(text, args.out, end="\n")


if __name__ == "__main__":
    main()
