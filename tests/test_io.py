import json

import pandas as pd
import pytest

from pipeline.infra.io import atomic_path, parquet_metadata, read_parquet, write_json, write_parquet


def test_atomic_path_leaves_nothing_on_error(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("interrupted")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_atomic_path_replaces_directory(tmp_path):
    target = tmp_path / "model"
    target.mkdir()
    (target / "stale").write_text("x")
    with atomic_path(target) as tmp:
        tmp.mkdir()
        (tmp / "fresh").write_text("y")
    assert [p.name for p in target.iterdir()] == ["fresh"]


def test_parquet_round_trip_is_deterministic(tmp_path):
    df = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    write_parquet(df, tmp_path / "1.parquet", metadata={"year": "2020"})
    write_parquet(df, tmp_path / "2.parquet", metadata={"year": "2020"})
    assert (tmp_path / "1.parquet").read_bytes() == (tmp_path / "2.parquet").read_bytes()
    pd.testing.assert_frame_equal(read_parquet(tmp_path / "1.parquet"), df)
    assert parquet_metadata(tmp_path / "1.parquet") == {"year": "2020"}


def test_read_parquet_missing_names_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.parquet"):
        read_parquet(tmp_path / "nope.parquet")


def test_write_json_sorted(tmp_path):
    write_json({"b": 1, "a": 2}, tmp_path / "m.json")
    text = (tmp_path / "m.json").read_text()
    assert text.index('"a"') < text.index('"b"') and json.loads(text) == {"a": 2, "b": 1}
