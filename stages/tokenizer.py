"""Stage `tokenizer`: write the LM tokenizer every temporal feature is indexed by (data/tokenizer/).

`--base scratch` trains a GPT-2-style byte-level BPE on the training years' abstracts only;
any other base (a Hugging Face id or a local path) saves that LM's own tokenizer, resolved
offline by pipeline.models_hub. The folder also gets futurelm.json = {"base", "vocab_size"}.
"""

from __future__ import annotations

import argparse
import json

from pipeline.io import atomic_path, read_parquet
from pipeline.models_hub import load_tokenizer_for
from pipeline.tokenizer import ensure_special_tokens, train_scratch_tokenizer


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m stages.tokenizer", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True,
                        help="'scratch' (train a byte-level BPE) or a causal LM's hub id / local "
                             "path (params lm.base)")
    parser.add_argument("--vocab-size", type=int, required=True,
                        help="BPE vocabulary size, only used with --base scratch "
                             "(params tokenizer.vocab_size)")
    parser.add_argument("--train", required=True,
                        help="training split Parquet (column 'abstract'); only read with --base scratch")
    parser.add_argument("--out", required=True, help="output tokenizer folder (written atomically)")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)

    if args.base == "scratch":
        abstracts = read_parquet(args.train, columns=["abstract"])["abstract"].tolist()
        if not abstracts:
            raise SystemExit(f"{args.train} has no abstracts to train the tokenizer on: "
                             f"check the split params")
        tok = train_scratch_tokenizer(abstracts, args.vocab_size)
    else:
        tok = ensure_special_tokens(load_tokenizer_for(args.base))
    with atomic_path(args.out) as tmp:
        tok.save_pretrained(tmp)
        info = {"base": args.base, "vocab_size": len(tok)}
        (tmp / "futurelm.json").write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")
    print(f"tokenizer for base {args.base!r}: |V| = {len(tok)} -> {args.out}")


if __name__ == "__main__":
    main()
