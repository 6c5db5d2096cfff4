"""Stage `tokenizer`: write the LM tokenizer every temporal feature is indexed by (data/tokenizer/).

`--base scratch` trains a GPT-2-style byte-level BPE on the training periods' abstracts only;
any other base (a Hugging Face id or a local path) saves that LM's own tokenizer, resolved
offline by pipeline.models.hub. This is the first stage that names the base LM, so it also checks
the WHOLE model (config of a causal LM + readable weights): a name that training could not load
stops here, before any feature stage runs. The folder also gets futurelm.json = {"base",
"vocab_size"}.
"""

from __future__ import annotations

import argparse

from pipeline.infra.errors import UserError
from pipeline.infra.io import atomic_path, read_parquet, write_json
from pipeline.models.hub import check_causal_lm, load_tokenizer_for
from pipeline.features.tokenizer import ensure_special_tokens, train_scratch_tokenizer
from pipeline.interfaces.tokenizer import INTERFACE
from stages._lib.args import parser_for
from stages._lib.cli import stage_main


def build_parser() -> argparse.ArgumentParser:
    return parser_for(INTERFACE, __doc__)


@stage_main
def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)

    if args.base == "scratch":
        abstracts = read_parquet(args.train, columns=["abstract"])["abstract"].tolist()
        if not abstracts:
            raise UserError("the training split has no abstracts to train the tokenizer on",
                            path=args.train, fix="check the split params (params.yaml: split)")
        try:
            tok = train_scratch_tokenizer(abstracts, args.vocab_size)
        except ValueError as err:  # a vocabulary too small for a byte-level BPE
            raise UserError(str(err), path="tokenizer.vocab_size",
                            fix="set tokenizer.vocab_size in params.yaml to 257 or more") from None
    else:
        source = check_causal_lm(args.base)  # the whole model, before any feature stage runs
        print(f"base LM {args.base!r}: config and weights found ({source.origin}: {source.path})")
        try:
            tok = ensure_special_tokens(load_tokenizer_for(args.base))
        except ValueError as err:  # a tokenizer without EOS cannot start or end an abstract
            raise UserError(str(err), path=args.base, fix="use a causal LM whose tokenizer has an "
                            "EOS token, or lm.base: scratch") from None
    with atomic_path(args.out) as tmp:
        tok.save_pretrained(tmp)
        write_json({"base": args.base, "vocab_size": len(tok)}, tmp / "futurelm.json")
    print(f"tokenizer for base {args.base!r}: |V| = {len(tok)} -> {args.out}")


if __name__ == "__main__":
    main()
