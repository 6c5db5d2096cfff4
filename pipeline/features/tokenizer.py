"""The LM tokenizer: the index of every temporal feature (a word w is an LM token id).

Two sources: a byte-level BPE trained from scratch on the training periods (``lm.base: scratch``,
the offline default; GPT-2's recipe, so nothing from dev/test periods leaks into the vocabulary),
or the base LM's own tokenizer (resolved offline by :mod:`pipeline.models.hub`). Either way the
folder written here is a plain Hugging Face tokenizer folder with a fast tokenizer (character
offsets work) and one end-of-text token used as BOS, EOS and PAD, as in GPT-2.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import AutoTokenizer, PreTrainedTokenizerBase, PreTrainedTokenizerFast

END_OF_TEXT = "<|endoftext|>"


def train_scratch_tokenizer(texts: Iterable[str], vocab_size: int) -> PreTrainedTokenizerFast:
    """Train a GPT-2-style byte-level BPE on ``texts`` (the training periods only).

    The 256 byte symbols are always in the alphabet, so any later text (another period, another
    script) encodes without unknown tokens. ``<|endoftext|>`` gets id 0 and serves as BOS, EOS
    and PAD. The vocabulary can come out smaller than ``vocab_size`` on a tiny corpus.
    """
    if vocab_size < 257:
        raise ValueError(f"vocab_size={vocab_size} is too small: a byte-level BPE needs the 256 "
                         f"byte symbols plus {END_OF_TEXT}; use at least 257 (params tokenizer.vocab_size)")
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    # trim_offsets: a token's character span excludes its leading space, like GPT-2's, so offsets
    # line up with encoders that never cover whitespace (pipeline.features.alignment).
    bpe.post_processor = processors.ByteLevel(trim_offsets=True)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[END_OF_TEXT],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    bpe.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token=END_OF_TEXT,
                                   eos_token=END_OF_TEXT, pad_token=END_OF_TEXT,
                                   unk_token=END_OF_TEXT)


def ensure_special_tokens(tok: PreTrainedTokenizerBase, required: bool = True) -> PreTrainedTokenizerBase:
    """Make a base LM's tokenizer follow the project convention: one EOS, also used as BOS/PAD.

    GPT-2 has EOS = BOS but no PAD; SmolLM2 has its own EOS. Padding positions are masked out of
    every loss and feature, so reusing EOS as PAD changes no result. ``required=False`` leaves a
    tokenizer without EOS (an encoder's) unchanged instead of raising.
    """
    if tok.eos_token is None and not required:
        return tok
    if tok.eos_token is None:
        raise ValueError(f"tokenizer {getattr(tok, 'name_or_path', tok)!r} has no EOS token; the "
                         f"future LM needs one to start generation and to end abstracts")
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    if tok.bos_token is None:
        tok.bos_token = tok.eos_token
    return tok


def load_tokenizer(path: str | os.PathLike[str]) -> PreTrainedTokenizerBase:
    """Load the tokenizer folder written by the ``tokenizer`` stage (``data/tokenizer/``)."""
    path = os.fspath(path)
    if not os.path.isdir(path):
        raise FileNotFoundError(f"tokenizer folder {path} does not exist: run `dvc repro tokenizer`")
    tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
    if not tok.is_fast:
        raise ValueError(f"{path} holds a slow tokenizer; character offsets need a fast one "
                         f"(re-run the tokenizer stage, which saves tokenizer.json)")
    return ensure_special_tokens(tok)


def plain_backend(tok: PreTrainedTokenizerBase) -> Tokenizer:
    """The Rust tokenizer behind ``tok``, without any truncation or padding saved in its
    tokenizer.json (all-MiniLM's pads and truncates to 128): features must see whole texts."""
    backend = tok.backend_tokenizer
    if backend.truncation is None and backend.padding is None:
        return backend
    plain = Tokenizer.from_str(backend.to_str())
    plain.no_truncation()
    plain.no_padding()
    return plain


def tokenize_texts(tok: PreTrainedTokenizerBase, texts: Sequence[str]) -> list[list[int]]:
    """Token ids of each text alone (no special tokens, no truncation), batched in Rust."""
    encodings = plain_backend(tok).encode_batch(list(texts), add_special_tokens=False)
    return [e.ids for e in encodings]


def encode_abstracts(tok: PreTrainedTokenizerBase, texts: Sequence[str],
                     max_length: int) -> list[list[int]]:
    """The LM's view of each abstract: ``eos + abstract + eos``, cut to ``max_length`` tokens.

    GPT-2 convention: the leading EOS is the context generation starts from, the trailing EOS
    teaches the LM where an abstract ends. Truncation keeps the start of the abstract.
    """
    if max_length < 2:
        raise ValueError(f"max_length={max_length} leaves no room for an abstract between two EOS")
    eos = tok.eos_token_id
    return [([eos] + ids + [eos])[:max_length] for ids in tokenize_texts(tok, texts)]
