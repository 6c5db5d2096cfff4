"""Stage `embeddings@<year>`: pooled contextual vector V_iw (paper eq. 7) of every LM token seen
in one year's abstracts, written to data/features/embeddings/<year>.safetensors.

Encoder and LM tokens are aligned by character offsets; abstracts longer than --max-length are
encoded in overlapping windows; pooling happens on the device with one index_add per batch.
"""

from __future__ import annotations

import argparse
import resource
import time

from pipeline.alignment import plan_year
from pipeline.device import pick_device
from pipeline.embeddings import adapt_encoder, extract_year, pick_dtype, write_year
from pipeline.models_hub import load_encoder, load_masked_lm, load_tokenizer_for
from pipeline.splits import year_abstracts
from pipeline.tokenizer import load_tokenizer



def peak_rss_mb() -> float:
    """Peak resident memory of this process in MB. Linux VmHWM restarts at exec, unlike
    ru_maxrss, which would report the forking parent's size (e.g. DVC's) if that was larger."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m stages.embeddings", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--year", type=int, required=True, help="the year to embed")
    parser.add_argument("--abstracts", required=True,
                        help="corpus Parquet with columns 'year' and 'abstract' "
                             "(data/corpus/abstracts.parquet)")
    parser.add_argument("--tokenizer", required=True, help="LM tokenizer folder (data/tokenizer)")
    parser.add_argument("--encoder", required=True,
                        help="encoder hub id or local path (params embeddings.encoder; paper: roberta-large)")
    parser.add_argument("--layer", type=int, default=-1,
                        help="hidden layer to pool: -1 = last, 0 = embedding output, k = after layer k")
    parser.add_argument("--batch-size", type=int, default=32, help="encoder windows per batch")
    parser.add_argument("--max-length", type=int, default=256,
                        help="encoder window in tokens, special tokens included")
    parser.add_argument("--stride", type=int, default=32, help="token overlap between consecutive windows")
    parser.add_argument("--dtype", default="auto",
                        help="encoder compute dtype: auto (fp32 on CPU, bf16/fp16 on CUDA), fp32, fp16, bf16")
    parser.add_argument("--device", default="auto", help="auto (CUDA when present), cpu, cuda, cuda:1, ...")
    parser.add_argument("--adapt-epochs", type=int, default=0,
                        help="epochs of MLM fine-tuning on this year before extraction (0 = off; "
                             "needs an encoder with an MLM head)")
    parser.add_argument("--out", required=True, help="output .safetensors for this year")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)

    started = time.perf_counter()
    device = pick_device(args.device)
    dtype = pick_dtype(args.dtype, device)
    try:
        texts = year_abstracts(args.abstracts, args.year)
    except ValueError as err:  # a year with no abstracts: the message says what to change
        raise SystemExit(str(err)) from None
    lm_tok = load_tokenizer(args.tokenizer)
    enc_tok = load_tokenizer_for(args.encoder)
    if args.max_length > enc_tok.model_max_length:
        raise SystemExit(f"--max-length {args.max_length} exceeds {args.encoder}'s limit of "
                         f"{enc_tok.model_max_length} tokens: lower embeddings.max_length")
    if args.adapt_epochs > 0:
        encoder = adapt_encoder(load_masked_lm(args.encoder), enc_tok, texts, args.adapt_epochs,
                                args.max_length, args.stride, args.batch_size, device)
    else:
        encoder = load_encoder(args.encoder)
    encoder = encoder.to(device=device, dtype=dtype)
    plan = plan_year(texts, lm_tok, enc_tok, args.max_length, args.stride, args.batch_size)
    token_ids, counts, vectors = extract_year(encoder, plan, args.layer, device)
    write_year(args.out, args.year, token_ids, counts, vectors, encoder=args.encoder,
               layer=args.layer, vocab_size=len(lm_tok))
    peak_mb = peak_rss_mb()
    print(f"{args.year}: {len(texts)} abstracts, {plan.n_encoder_tokens} encoder tokens, "
          f"{len(token_ids)} LM tokens seen, {time.perf_counter() - started:.1f} s on {device} "
          f"({dtype}), peak RSS {peak_mb:.0f} MB -> {args.out}")


if __name__ == "__main__":
    main()
