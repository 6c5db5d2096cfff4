"""Stage `embeddings@<period>`: one period's pooled contextual vector of every LM token."""

from __future__ import annotations

from pipeline.infra.interface import Output, Params, StageInterface, Value
from pipeline.infra.schema.params import EmbeddingsConfig, NumericsConfig
from pipeline.infra.shared_options import ABSTRACTS, TOKENIZER, period

INTERFACE = StageInterface("embeddings", (
    period("embed"),
    ABSTRACTS,
    TOKENIZER,
    Params(EmbeddingsConfig, "embeddings", "encoder and pooling (params embeddings.*)"),
    # passed by the graph to every torch stage (pipeline.graph.build.with_numerics)
    Params(NumericsConfig, "numerics", "CPU kernels (params numerics.*; "
           "pipeline/infra/numerics.py)", graph=False),
    Value("--threads", "torch CPU threads per process (default: the recorded 2, "
          "pipeline/infra/numerics.py; other values give other bytes)", type=int, default=None,
          graph=False),
    # Not `--nproc`: torchrun's own parser would take it for an abbreviation of its options.
    Value("--processes", "processes to run, one per GPU, started with torchrun (runtime "
          "setting; default: runtime.yaml `nproc` / FUTURELM_NPROC); ignored under torchrun",
          type=int, default=None, graph=False),
    Output("--out", "output .safetensors for this period"),
), torch=True)
