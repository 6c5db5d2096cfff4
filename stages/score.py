"""Stage `score@<variant>-<seed>`: evaluate one trained future LM on the dev and test years.

For each split (one year each): PPL and CPL over every abstract with that year's own history
(§4.4-4.5), N generated abstracts with the year's bias (§4.6), and their content METEOR against
the year's gold abstracts. Writes <out>/metrics.json, tokens_<split>.parquet (per-abstract NLL
sums, for paired tests) and generations_<split>.parquet (seed, text, CM; decoding settings in
the file metadata), all in one atomic folder.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from transformers import PreTrainedTokenizerBase

from pipeline.content import content_token_mask, load_stopwords
from pipeline.device import pick_device
from pipeline.future_lm import FutureLM, load_future_lm
from pipeline.generation import GenerationSettings, generate_abstracts
from pipeline.history import load_history
from pipeline.io import atomic_path, read_parquet, write_json, write_parquet
from pipeline.meteor import content_meteor
from pipeline.scoring import perplexities, score_abstracts
from pipeline.tokenizer import encode_abstracts, load_tokenizer


def split_year(df: pd.DataFrame, path: str) -> int:
    """The single year a split holds (clear error for an empty or mixed split)."""
    years = sorted(df["year"].unique()) if len(df) else []
    if len(years) != 1:
        raise SystemExit(f"{path} must hold the abstracts of exactly one year, found "
                         f"{years or 'no rows'}: check split.dev_year / split.test_year")
    return int(years[0])


def max_positions(model: FutureLM) -> int:
    config = model.lm.config
    n = getattr(config, "n_positions", None) or getattr(config, "max_position_embeddings", None)
    if not n:
        raise SystemExit("cannot tell the model's context length from its config")
    return int(n)


def evaluate_split(model: FutureLM, tok: PreTrainedTokenizerBase, df: pd.DataFrame, year: int, args: argparse.Namespace,
                   stopwords: frozenset[str], content_mask: np.ndarray, split: str,
                   ) -> tuple[dict, pd.DataFrame, pd.DataFrame, GenerationSettings]:
    """Scores, generations and metrics of one split (one year, its own history)."""
    kinds = model.history_kinds
    history = (load_history(year, model.window, args.frequencies, args.embeddings, kinds=kinds)
               if kinds else None)
    length = max_positions(model)
    # Abstracts longer than the model's context keep their start (as encode_abstracts does).
    full = encode_abstracts(tok, df["abstract"].tolist(), max_length=sys.maxsize)
    encoded = [ids[:length] for ids in full]
    start = time.perf_counter()
    tokens = score_abstracts(model, encoded, content_mask, history, args.batch_size,
                             pad_id=tok.eos_token_id, desc=f"{split} {year} PPL")
    rate = tokens["n_tokens"].sum() / (time.perf_counter() - start)
    tokens.insert(0, "key", df["key"].to_numpy())
    tokens.insert(1, "year", year)
    ppl = perplexities(tokens)
    settings = GenerationSettings(n=args.n_generate, max_new_tokens=args.max_new_tokens,
                                  min_new_tokens=args.min_new_tokens, num_beams=args.num_beams,
                                  top_k=args.top_k, top_p=args.top_p,
                                  no_repeat_ngram_size=args.no_repeat_ngram_size)
    start = time.perf_counter()
    gens = generate_abstracts(model, tok, history, settings, desc=f"{split} {year} generation")
    t_generate = time.perf_counter() - start
    start = time.perf_counter()
    best = content_meteor(gens["text"].tolist(), df["abstract"].tolist(), stopwords)
    t_cm = time.perf_counter() - start
    keys = df["key"].tolist()
    gens["year"] = year
    gens["cm"] = [b.score for b in best]
    gens["cm_gold_key"] = [keys[b.index] if b.index >= 0 else None for b in best]
    metrics = {"year": year, "ppl": ppl.ppl, "cpl": ppl.cpl, "cm": float(gens["cm"].mean()),
               "n_abstracts": len(df), "n_tokens": ppl.n_tokens,
               "n_content_tokens": ppl.n_content_tokens,
               "n_truncated": sum(len(ids) > length for ids in full),
               "n_generated": len(gens), "n_gold": len(df)}
    print(f"{split} {year}: PPL {ppl.ppl:.2f} CPL {ppl.cpl:.2f} CM {metrics['cm']:.4f} "
          f"({ppl.n_tokens} tokens scored at {rate:.0f} tokens/s; {len(gens)} abstracts generated "
          f"in {t_generate:.1f} s; CM against {len(df)} gold abstracts in {t_cm:.1f} s)",
          file=sys.stderr)
    return metrics, tokens, gens, settings


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m stages.score", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="trained model folder (data/models/<variant>-s<seed>)")
    p.add_argument("--dev", required=True, help="dev split Parquet (data/splits/dev.parquet)")
    p.add_argument("--test", required=True, help="test split Parquet (data/splits/test.parquet)")
    p.add_argument("--tokenizer", required=True, help="LM tokenizer folder (data/tokenizer)")
    p.add_argument("--frequencies", required=True, help="per-year frequency folder (history)")
    p.add_argument("--embeddings", required=True, help="per-year embedding folder (history)")
    p.add_argument("--stopwords", required=True, help="the paper's stopword list (CPL and CM)")
    p.add_argument("--batch-size", type=int, default=8, help="abstracts per scoring batch")
    p.add_argument("--n-generate", type=int, default=100,
                   help="abstracts generated per year (paper: 100); abstract i uses seed i")
    p.add_argument("--max-new-tokens", type=int, default=256, help="generation length limit")
    p.add_argument("--min-new-tokens", type=int, default=1,
                   help="EOS is forbidden before this many tokens (1: no empty abstract)")
    p.add_argument("--num-beams", type=int, default=5, help="beams of beam search with sampling")
    p.add_argument("--top-k", type=int, default=50, help="top-k sampling filter")
    p.add_argument("--top-p", type=float, default=0.92, help="nucleus sampling filter")
    p.add_argument("--no-repeat-ngram-size", type=int, default=2,
                   help="forbid repeating n-grams of this size")
    p.add_argument("--device", default="auto", help="auto (CUDA if present), cpu, cuda, cuda:1 ...")
    p.add_argument("--threads", type=int, default=0,
                   help="CPU threads for torch (0: torch's default)")
    p.add_argument("--out", required=True, help="output folder (data/scores/<variant>-s<seed>)")
    args = p.parse_args(argv)

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    tok = load_tokenizer(args.tokenizer)
    stopwords = load_stopwords(args.stopwords)
    content_mask = content_token_mask(tok, stopwords)
    model = load_future_lm(args.model, pick_device(args.device))
    metrics, outputs = {}, {}
    for split, path in (("dev", args.dev), ("test", args.test)):
        df = read_parquet(path, columns=["key", "year", "abstract"])
        year = split_year(df, path)
        metrics[split], tokens, gens, settings = evaluate_split(
            model, tok, df, year, args, stopwords, content_mask, split)
        outputs[split] = (tokens, gens)
    metrics["variant"] = model.variant
    with atomic_path(args.out) as tmp:
        tmp.mkdir()
        for split, (tokens, gens) in outputs.items():
            write_parquet(tokens, Path(tmp) / f"tokens_{split}.parquet")
            write_parquet(gens, Path(tmp) / f"generations_{split}.parquet",
                          metadata={"generation_settings": settings.to_json(),
                                    "variant": model.variant})
        write_json(metrics, Path(tmp) / "metrics.json")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
