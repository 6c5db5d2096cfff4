"""Stage `train`: train one future-LM variant with one seed (data/models/<variant>-s<seed>/).

Variants: `baseline` (the base LM fine-tuned on every training year), `baseline-N` (on the N
latest training years only), `frequency-nolstm`, `frequency` (eq. 6), `context` (eq. 8),
`context2` (eq. 9-10). A training abstract of year i is scored with the bias of year i, predicted
from the features of years i-window .. i-1.

The output folder (written atomically when training ends) holds config.json + model.safetensors
(load with pipeline.future_lm.load_future_lm) and train_metrics.json; the DVCLive training curves
go to their own folder (--curves), declared as DVC plots.
Interrupted runs resume from <checkpoint-dir>/<variant>-s<seed>/ when rerun with the same
parameters and inputs; the checkpoint folder is removed after success.
"""

from __future__ import annotations

import argparse
import re
import shutil
from pathlib import Path

import torch

from pipeline import models_hub
from pipeline.device import pick_device
from pipeline.future_lm import make_future_lm, scratch_gpt2, write_future_lm
from pipeline.history import load_history
from pipeline.io import atomic_path, read_parquet, write_json
from pipeline.temporal import bias_kind, history_kinds
from pipeline.tokenizer import encode_abstracts, load_tokenizer
from pipeline.training import (
    Checkpoints,
    TrainConfig,
    group_by_year,
    latest_years,
    run_key,
    set_dropout,
    train,
)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m stages.train", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    io = p.add_argument_group("inputs and outputs")
    io.add_argument("--variant", required=True,
                    help="baseline, baseline-N, frequency-nolstm, frequency, context or context2")
    io.add_argument("--seed", type=int, default=0, help="seed of initialisation, dropout and batch order")
    io.add_argument("--train", required=True, help="training split Parquet (key, year, title, abstract)")
    io.add_argument("--dev", required=True, help="dev split Parquet, for early stopping on perplexity")
    io.add_argument("--tokenizer", required=True, help="tokenizer folder of the tokenizer stage")
    io.add_argument("--frequencies", required=True, help="folder of <year>.parquet log frequencies")
    io.add_argument("--embeddings", required=True, help="folder of <year>.safetensors contextual embeddings")
    io.add_argument("--window", type=int, required=True, help="history length m in years (features.window)")
    io.add_argument("--out", required=True, help="model folder to write (atomically)")
    io.add_argument("--curves", required=True,
                    help="folder for the DVCLive training curves (train/loss.tsv, train/lr.tsv, "
                         "dev/ppl.tsv; a DVC plots output, written atomically)")
    io.add_argument("--checkpoint-dir", default=".futurelm/checkpoints",
                    help="root of the resume checkpoints (outside DVC outputs)")
    io.add_argument("--checkpoint-every", type=int, default=25,
                    help="optimizer steps between checkpoints (does not change results)")
    lm = p.add_argument_group("base LM (params lm.*)")
    lm.add_argument("--base", required=True,
                    help="'scratch' (a small GPT-2 from the options below) or a causal LM's hub id / local path")
    lm.add_argument("--n-layer", type=int, default=2, help="scratch GPT-2: layers")
    lm.add_argument("--n-head", type=int, default=4, help="scratch GPT-2: attention heads")
    lm.add_argument("--n-embd", type=int, default=128, help="scratch GPT-2: hidden size d")
    lm.add_argument("--n-positions", type=int, default=256, help="scratch GPT-2: context length")
    tr = p.add_argument_group("training (params train.*)")
    tr.add_argument("--epochs", type=int, required=True, help="maximum epochs")
    tr.add_argument("--batch-size", type=int, required=True, help="abstracts per batch (one year per batch)")
    tr.add_argument("--grad-accum", type=int, default=1, help="batches per optimizer step")
    tr.add_argument("--max-length", type=int, required=True, help="LM tokens per abstract (eos+text+eos, cut)")
    tr.add_argument("--lr-lm", type=float, required=True, help="AdamW learning rate of the base LM")
    tr.add_argument("--lr-new", type=float, required=True, help="AdamW learning rate of the temporal modules")
    tr.add_argument("--weight-decay", type=float, default=0.0, help="AdamW weight decay (matrices only)")
    tr.add_argument("--warmup-steps", type=int, default=0, help="linear warm-up steps before linear decay")
    tr.add_argument("--grad-clip", type=float, default=1.0, help="max gradient norm (<= 0: no clipping)")
    tr.add_argument("--dropout", type=float, default=0.1, help="dropout of the LM and the bias LSTM output")
    tr.add_argument("--patience", type=int, default=2,
                    help="early stopping: epochs without dev-perplexity improvement (<= 0: off)")
    tr.add_argument("--lstm-hidden", type=int, default=64, help="hidden size of the bias LSTM")
    tr.add_argument("--alpha", default="learned",
                    help="context2's alpha: 'learned' (initialised at 1) or a fixed number")
    tr.add_argument("--freeze-lm", action="store_true", help="train only the temporal modules")
    tr.add_argument("--device", default="auto", help="auto (cuda when available), cpu, cuda, cuda:N")
    tr.add_argument("--threads", type=int, default=0,
                    help="torch CPU threads (0 = torch default)")
    return p.parse_args(argv)


def _alpha(value: str) -> float | None:
    if value == "learned":
        return None
    try:
        return float(value)
    except ValueError:
        raise SystemExit(f"--alpha must be 'learned' or a number, got {value!r}") from None


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    try:
        kind = bias_kind(args.variant)
    except ValueError as err:
        raise SystemExit(str(err)) from None
    alpha = _alpha(args.alpha)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    device = pick_device(args.device)

    tok = load_tokenizer(args.tokenizer)
    pad_id = tok.eos_token_id

    def sequences(path: str) -> dict[int, list]:
        df = read_parquet(path, columns=["year", "abstract"])
        return group_by_year(df["year"], encode_abstracts(tok, df["abstract"].tolist(), args.max_length))

    latest = re.fullmatch(r"baseline-(\d+)", args.variant)
    train_data = latest_years(sequences(args.train), int(latest.group(1)) if latest else None)
    dev_data = sequences(args.dev)
    if not train_data or not dev_data:
        raise SystemExit(f"empty training ({args.train}) or dev ({args.dev}) split: check the split params")

    kinds = history_kinds(kind)
    histories = ({y: load_history(y, args.window, args.frequencies, args.embeddings, kinds)
                  for y in sorted({*train_data, *dev_data})} if kind != "none" else {})
    feature_dim = next((int(h.emb.shape[-1]) for h in histories.values() if h.emb is not None), None)

    torch.manual_seed(args.seed)   # the same seed gives every variant the same initial base LM
    if args.base == "scratch":
        if args.max_length > args.n_positions:
            raise SystemExit(f"--max-length {args.max_length} exceeds --n-positions {args.n_positions}")
        lm = scratch_gpt2(len(tok), tok.eos_token_id, n_layer=args.n_layer, n_head=args.n_head,
                          n_embd=args.n_embd, n_positions=args.n_positions, dropout=args.dropout)
    else:
        lm = models_hub.load_causal_lm(args.base)
        if lm.get_output_embeddings().weight.shape[0] < len(tok):
            lm.resize_token_embeddings(len(tok))
    set_dropout(lm, args.dropout)
    model = make_future_lm(lm, args.variant, args.window, lstm_hidden=args.lstm_hidden,
                           feature_dim=feature_dim, alpha=alpha, dropout=args.dropout)

    config = TrainConfig(epochs=args.epochs, batch_size=args.batch_size, grad_accum=args.grad_accum,
                         lr_lm=args.lr_lm, lr_new=args.lr_new, weight_decay=args.weight_decay,
                         warmup_steps=args.warmup_steps, grad_clip=args.grad_clip,
                         patience=args.patience, seed=args.seed, freeze_lm=args.freeze_lm,
                         checkpoint_every=args.checkpoint_every)
    identity = {k: v for k, v in vars(args).items()
                if k not in ("out", "curves", "checkpoint_dir", "checkpoint_every", "device", "threads")}
    # Resume only from a checkpoint of this very configuration and these very inputs.
    history_years = sorted({y for h in histories.values() for y in h.years})
    feature_files = [Path(args.frequencies) / f"{y}.parquet" for y in history_years]
    if "embeddings" in kinds:
        feature_files += [Path(args.embeddings) / f"{y}.safetensors" for y in history_years]
    key = run_key(identity, [Path(args.train), Path(args.dev), Path(args.tokenizer), *feature_files])
    checkpoints = Checkpoints(Path(args.checkpoint_dir) / f"{args.variant}-s{args.seed}", key)
    live_dir = checkpoints.dir / "live"

    state = train(model, train_data, dev_data, histories, config, pad_id=pad_id, device=device,
                  checkpoints=checkpoints, live_dir=live_dir)

    n_new = sum(p.numel() for p in model.bias.parameters()) if model.bias is not None else 0
    metrics = {
        "variant": args.variant, "seed": args.seed, "base": args.base,
        "train_years": sorted(train_data), "dev_years": sorted(dev_data),
        "train_abstracts": sum(len(s) for s in train_data.values()),
        "epochs_run": len(state.dev_ppl), "best_epoch": state.best_epoch + 1,
        "best_dev_ppl": state.best_ppl, "dev_ppl": state.dev_ppl, "stopped_early": state.stopped_early,
        "steps": state.step, "train_tokens": state.tokens,
        "parameters_lm": sum(p.numel() for p in model.lm.parameters()), "parameters_new": n_new,
    }
    with atomic_path(args.curves) as tmp:
        shutil.copytree(live_dir / "plots" / "metrics", tmp)
    with atomic_path(args.out) as tmp:
        tmp.mkdir()
        write_future_lm(model.cpu(), tmp)
        write_json(metrics, tmp / "train_metrics.json")
    checkpoints.clear()
    print(f"{args.variant} seed {args.seed}: best dev ppl {state.best_ppl:.2f} "
          f"(epoch {state.best_epoch + 1} of {len(state.dev_ppl)}) -> {args.out}")


if __name__ == "__main__":
    main()
