"""pipeline.infra.distributed: work splitting without processes, and every helper with the real gloo
backend in 2 processes on 127.0.0.1 (torchrun; bounded by a timeout)."""

from __future__ import annotations

import sys

import pytest
import torch

from pipeline.infra import distributed
from pipeline.infra.distributed import SINGLE, Dist
from pipeline.infra.errors import UserError
from tests.distributed_worker import run_ranks


def test_shard_and_split_cover_every_item_once() -> None:
    items = list(range(11))
    for world in (1, 2, 3, 4, 12):
        ranks = [Dist(rank=r, world_size=world) for r in range(world)]
        shards = [distributed.shard(items, d) for d in ranks]
        parts = [distributed.split_evenly(items, d) for d in ranks]
        assert sorted(x for s in shards for x in s) == items
        assert [x for p in parts for x in p] == items       # contiguous, in order
        assert max(map(len, parts)) - min(map(len, parts)) <= 1
    assert distributed.shard(items, Dist(1, 3)) == [1, 4, 7, 10]


def test_period_batches_keep_one_period_per_step_on_every_rank() -> None:
    batches = [("2017H1", list("abcde")), ("2017H2", list("fg")), ("2017H1", list("h"))]
    ranks = [distributed.shard_period_batches(batches, Dist(r, 2)) for r in range(2)]
    for per_rank in ranks:
        assert [period for period, _ in per_rank] == ["2017H1", "2017H2", "2017H1"]
    assert ranks[0] == [("2017H1", ["a", "b", "c"]), ("2017H2", ["f"]), ("2017H1", ["h"])]
    assert ranks[1] == [("2017H1", ["d", "e"]), ("2017H2", ["g"]), ("2017H1", [])]


def test_single_process_helpers_are_no_ops(tmp_path, monkeypatch) -> None:
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(var, raising=False)
    assert not distributed.launched()
    dist, device = distributed.init(torch.device("cpu"))
    assert dist == SINGLE and device == torch.device("cpu") and dist.is_main and not dist.enabled
    t = torch.tensor([1, 2])
    assert distributed.all_reduce_sum(t, dist) is t and t.tolist() == [1, 2]
    assert distributed.on_main(dist, lambda: 5) == 5
    assert distributed.rank_device(torch.device("cuda"), SINGLE) == torch.device("cuda")


def test_environment_and_devices(monkeypatch) -> None:
    env = {"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1"}
    assert distributed.from_env(env) == Dist(rank=3, world_size=4, local_rank=1)
    with pytest.raises(UserError, match="outside WORLD_SIZE"):
        distributed.from_env({"RANK": "4", "WORLD_SIZE": "4"})
    with pytest.raises(UserError, match="not valid"):
        distributed.from_env({"RANK": "x", "WORLD_SIZE": "4"})
    d = Dist(rank=3, world_size=4, local_rank=1)
    assert distributed.rank_device(torch.device("cuda"), d) == torch.device("cuda", 1)
    assert distributed.rank_device(torch.device("cpu"), d) == torch.device("cpu")
    with pytest.raises(UserError, match="names one GPU"):
        distributed.rank_device(torch.device("cuda", 0), d)


def test_torchrun_command() -> None:
    cmd = distributed.torchrun_command("stages.embeddings", ["--year", "2018"], 4)
    assert cmd == [sys.executable, "-m", "torch.distributed.run", "--standalone",
                   "--nproc_per_node=4", "-m", "stages.embeddings", "--year", "2018"]


@pytest.mark.slow
def test_helpers_with_gloo_in_two_processes(tmp_path) -> None:
    ranks = run_ranks("helpers", tmp_path)
    for r, got in enumerate(ranks):
        assert (got["rank"], got["world_size"], got["local_rank"]) == (r, 2, r)
        assert got["sum"] == [3, 30]                      # (1 + 2), (10 + 20)
        assert got["float_sum"] == [1.5, 1.5, 1.5]
        assert got["max"] == 3.0
        # rank 0 wrote; the barrier made its file visible to every rank
        assert got["marker_seen_after_barrier"] == "rank 0"
    assert ranks[0]["weights"] == ranks[1]["weights"]     # rank 0's broadcast weights
    assert (ranks[0]["on_main_result"], ranks[1]["on_main_result"]) == (0, None)
    assert ranks[0]["shard"] == [0, 2, 4, 6] and ranks[1]["shard"] == [1, 3, 5]
    assert ranks[0]["split"] == [0, 1, 2, 3] and ranks[1]["split"] == [4, 5, 6]
    assert ranks[0]["period_batches"] == [["2017", [1, 2]], ["2018", [4]]]
    assert ranks[1]["period_batches"] == [["2017", [3]], ["2018", []]]
