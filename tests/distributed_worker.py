"""One rank of the torch.distributed tests, started by torchrun (tests/test_distributed_*.py).

``python -m torch.distributed.run --nproc_per_node 2 ... tests/distributed_worker.py <scenario> <out>``
runs the named scenario with the real gloo backend and writes ``<out>/rank<k>.json`` (and, for
the pooling scenario, rank 0's result file); the test process compares what the ranks wrote.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: make `pipeline` importable

from pipeline.infra import distributed  # noqa: E402


def helpers(dist: distributed.Dist, out: Path) -> dict:
    """Every helper once: sharding, sums/maxima across ranks, broadcast, rank-0 writes."""
    items = list(range(7))
    total = torch.tensor([dist.rank + 1, 10 * (dist.rank + 1)], dtype=torch.int64)
    floats = torch.full((3,), 0.5 * (dist.rank + 1))
    peak = torch.tensor(float(dist.rank * 3))
    torch.manual_seed(100 + dist.rank)       # different weights on every rank ...
    module = torch.nn.Linear(3, 2)
    distributed.broadcast_module(module, dist)  # ... until rank 0's are broadcast
    marker = out / "written-by-main.txt"

    def write() -> int:
        marker.write_text(f"rank {dist.rank}")
        return dist.rank

    result = distributed.on_main(dist, write)
    return {
        "rank": dist.rank, "world_size": dist.world_size, "local_rank": dist.local_rank,
        "shard": distributed.shard(items, dist),
        "split": distributed.split_evenly(items, dist),
        "period_batches": distributed.shard_period_batches([("2017", [1, 2, 3]), ("2018", [4])], dist),
        "sum": distributed.all_reduce_sum(total, dist).tolist(),
        "float_sum": distributed.all_reduce_sum(floats, dist).tolist(),
        "max": float(distributed.all_reduce_max(peak, dist)),
        "weights": module.weight.detach().flatten().tolist(),
        "on_main_result": result,
        "marker_seen_after_barrier": marker.read_text() if marker.exists() else None,
    }


def pooling(dist: distributed.Dist, out: Path) -> dict:
    """extract_period over the ranks' shards of one plan, all-reduced (tiny random-init BERT)."""
    from transformers import BertConfig, BertModel

    from pipeline.features.alignment import plan_period
    from pipeline.features.embeddings import extract_period
    from pipeline.models.hub import MINILM, load_tokenizer_for
    from pipeline.features.tokenizer import train_scratch_tokenizer

    texts = [f"abstract {i}: we study model {i % 5} on task {i % 3} with data of {i} words"
             + " and more" * (i % 7) for i in range(23)]
    lm_tok = train_scratch_tokenizer(texts, vocab_size=300)
    enc_tok = load_tokenizer_for(MINILM)
    torch.manual_seed(0)  # the same random encoder on every rank and in the reference run
    config = BertConfig(vocab_size=enc_tok.vocab_size, hidden_size=16, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=32, max_position_embeddings=64)
    encoder = BertModel(config).eval()
    plan = plan_period(texts, lm_tok, enc_tok, max_length=24, stride=6, batch_size=3)
    ids, counts, vectors = extract_period(encoder, plan, -1, torch.device("cpu"), progress=False,
                                          dist=dist)
    if dist.is_main:
        np.save(out / f"ids-{dist.world_size}.npy", ids)
        np.save(out / f"counts-{dist.world_size}.npy", counts)
        torch.save(vectors, out / f"vectors-{dist.world_size}.pt")
    return {"rank": dist.rank, "n_batches": len(plan.batches),
            "my_batches": len(distributed.shard(plan.batches, dist))}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def loopback_env() -> dict[str, str]:
    """This environment, with gloo kept on the loopback interface and one thread per rank."""
    return {**os.environ, "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1",
            "PYTHONPATH": str(ROOT)}


def run_ranks(scenario: str, out: Path, nproc: int = 2, timeout: float = 240) -> list[dict]:
    """Run ``scenario`` as ``nproc`` ranks under torchrun on 127.0.0.1; each rank's result."""
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={nproc}",
           "--nnodes=1", "--master_addr=127.0.0.1", f"--master_port={free_port()}",
           __file__, scenario, str(out)]
    done = subprocess.run(cmd, env=loopback_env(), capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(nproc)]


def main() -> None:
    scenario, out = sys.argv[1], Path(sys.argv[2])
    torch.set_num_threads(1)
    with distributed.session(torch.device("cpu"), timeout_s=60) as (dist, _):
        result = {"helpers": helpers, "pooling": pooling}[scenario](dist, out)
    (out / f"rank{dist.rank}.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main()
