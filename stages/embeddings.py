"""Stage `embeddings@<period>`: pooled contextual vector V_iw (paper eq. 7) of every LM token seen
in one period's abstracts (a label: 2020, 2020H2, 2020Q3, 2020-07), written to
data/features/embeddings/<label>.safetensors.

Encoder and LM tokens are aligned by character offsets; abstracts longer than --max-length are
encoded in overlapping windows; pooling happens on the device with one index_add per batch.
The file records the identities (sha256) of the LM tokenizer and of the period's abstracts.

Several processes (one per GPU): `torchrun --nproc_per_node N -m stages.embeddings ...`, or
`--processes N` / FUTURELM_NPROC=N (runtime.yaml `nproc`), which starts torchrun itself. The period's
encoder batches are shared out across processes and their sums all-reduced; rank 0 writes the
file, bit-identical to one process's.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

import torch

from pipeline.corpus.by_period import period_abstracts
from pipeline.infra import distributed
from pipeline.features.alignment import plan_period
from pipeline.features.usage_sample import capped_sentences
from pipeline.infra.device import pick_device
from pipeline.features.embeddings import adapt_encoder, extract_period, pick_dtype, write_period
from pipeline.infra.errors import UserError
from pipeline.infra.identity import corpus_identity, tokenizer_identity
from pipeline.models.hub import check_encoder, load_encoder, load_masked_lm, load_tokenizer_for
from pipeline.features.tokenizer import load_tokenizer
from pipeline.interfaces.embeddings import INTERFACE
from stages._lib.args import parser_for
from stages._lib.cli import stage_main
from pipeline.infra.numerics import check_kernels, configure_torch
from stages._lib.runtime import load_runtime


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
    return parser_for(INTERFACE, __doc__)


@stage_main
def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    check_kernels()
    runtime = load_runtime()
    nproc = runtime.nproc if args.processes is None else args.processes
    if nproc > 1 and not distributed.launched():  # its children see torchrun's env: no loop
        raise SystemExit(distributed.relaunch("stages.embeddings",
                                              sys.argv[1:] if argv is None else argv, nproc))
    threads = runtime.threads if args.threads is None else args.threads
    configure_torch(threads, args.kernels)
    with distributed.session(pick_device(args.device)) as (dist, device):
        embed_period(args, dist, device)


def embed_period(args: argparse.Namespace, dist: distributed.Dist, device: torch.device) -> None:
    started = time.perf_counter()
    dtype = pick_dtype(args.dtype, device)
    check_encoder(args.encoder)  # config + readable weights, before any expensive work
    texts = period_abstracts(args.abstracts, args.period)
    corpus_id, n_abstracts = corpus_identity(texts), len(texts)
    tokenizer_id = tokenizer_identity(args.tokenizer)
    lm_tok = load_tokenizer(args.tokenizer)
    if args.usage_cap is not None:   # the sampled sentences, each encoded as a text of its own
        texts = capped_sentences(texts, lm_tok, args.usage_cap)
    enc_tok = load_tokenizer_for(args.encoder)
    if args.max_length > enc_tok.model_max_length:
        raise UserError(f"--max-length {args.max_length} exceeds {args.encoder}'s limit of "
                        f"{enc_tok.model_max_length} tokens", path="params.yaml embeddings.max_length",
                        fix=f"set embeddings.max_length <= {enc_tok.model_max_length}")
    quiet = not dist.is_main
    if args.adapt_epochs > 0:
        encoder = adapt_encoder(load_masked_lm(args.encoder), enc_tok, texts, args.adapt_epochs,
                                args.max_length, args.stride, args.batch_size, device,
                                progress=not quiet, dist=dist)
    else:
        encoder = load_encoder(args.encoder)
    encoder = encoder.to(device=device, dtype=dtype)
    plan = plan_period(texts, lm_tok, enc_tok, args.max_length, args.stride, args.batch_size)
    token_ids, counts, vectors = extract_period(encoder, plan, args.layer, device,
                                              progress=not quiet, dist=dist)
    distributed.on_main(dist, write_period, args.out, args.period, token_ids, counts, vectors,
                        encoder=args.encoder, layer=args.layer, vocab_size=len(lm_tok),
                        tokenizer_id=tokenizer_id, corpus_id=corpus_id)
    if dist.is_main:
        procs = f" x {dist.world_size} processes" if dist.enabled else ""
        encoded = ("" if args.usage_cap is None
                   else f" ({len(texts)} sentences encoded, cap {args.usage_cap})")
        print(f"{args.period}: {n_abstracts} abstracts{encoded}, "
              f"{plan.n_encoder_tokens} encoder tokens, "
              f"{len(token_ids)} LM tokens seen, {time.perf_counter() - started:.1f} s on {device}"
              f"{procs} ({dtype}), peak RSS {peak_rss_mb():.0f} MB -> {args.out}")


if __name__ == "__main__":
    main()
