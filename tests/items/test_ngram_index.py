"""The corpus n-gram index: readers, block edges, normalisation, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalcore.errors import AnalysisError, IngestError
from evalcore.items import ngram_index as ni

SENT = "the quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat"


def brute_ngrams(text: str, n: int) -> set[tuple[str, ...]]:
    import re
    words = [w for w in re.split(r"[^\w]+|_", text.lower()) if w]
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def test_normalisation_and_hash_agree_with_a_plain_reading() -> None:
    texts = [SENT, SENT.upper().replace(" ", ",  "), "Café naïve " + SENT, "too short"]
    grams = ni.text_ngrams(texts, 13)
    assert grams[0].size == len(brute_ngrams(SENT, 13)) == 5
    assert np.array_equal(grams[0], grams[1])                 # case and punctuation ignored
    assert grams[2].size == 7 and np.intersect1d(grams[0], grams[2]).size == 5
    assert grams[3].size == 0
    assert ni.word_counts(texts).tolist() == [17, 17, 19, 2]


def test_text_blocks_keep_ngrams_across_block_edges(tmp_path: Path, monkeypatch) -> None:
    rng = np.random.default_rng(1)
    words = [f"w{int(x)}" for x in rng.integers(0, 50, 3000)]
    (tmp_path / "c.txt").write_text(" ".join(words))
    monkeypatch.setattr(ni, "BLOCK_CHARS", 997)                # many blocks, cut mid-text
    info = ni.build_index([tmp_path / "c.txt"], tmp_path / "i.duckdb", n=5)
    assert info.ngrams == 3000 - 4 and info.documents == 1
    probe = [" ".join(words[i:i + 5]) for i in range(0, 2996, 7)]
    _, ov = ni.item_overlap(tmp_path / "i.duckdb", probe)
    assert (ov.hits == 1).all()


def test_jsonl_and_parquet_documents(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text(json.dumps({"text": SENT[:40]}) + "\n\n"
                                      + json.dumps({"text": SENT, "id": 2}) + "\n")
    pq.write_table(pa.table({"body": ["nothing to see", "The lazy dog while the cat sleeps on the "
                                      "warm mat and then some more words follow here"]}),
                   tmp_path / "b.parquet")
    with pytest.raises(IngestError, match="b.parquet.*column text"):
        ni.build_index([tmp_path], tmp_path / "x.duckdb")
    (tmp_path / "b.parquet").unlink()
    pq.write_table(pa.table({"text": ["the lazy dog while the cat sleeps on the warm mat and then "
                                      "some more words follow here"]}), tmp_path / "b.parquet")
    info = ni.build_index([tmp_path], tmp_path / "i.duckdb", n=8)
    assert info.files == ("a.jsonl", "b.parquet") and info.documents == 3
    _, ov = ni.item_overlap(tmp_path / "i.duckdb", [SENT, "the cat sleeps on the warm mat and then"])
    assert ov.hits.tolist() == [10, 2]
    assert ov.example[0] == "a.jsonl, line 1"   # its first 8 words are one 8-gram and ov.example[1] == "b.parquet, row 1"


def test_bad_input_names_file_and_place_and_keeps_the_old_index(tmp_path: Path) -> None:
    (tmp_path / "ok.txt").write_text(SENT)
    idx = tmp_path / "i.duckdb"
    ni.build_index([tmp_path / "ok.txt"], idx)
    before = idx.read_bytes()
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"text": SENT}) + "\n" + json.dumps({"text": 3}) + "\n")
    with pytest.raises(IngestError, match=r"bad.jsonl at line 2, field text.*found a int"):
        ni.build_index([tmp_path / "ok.txt", bad], idx)
    bad.write_text("{not json\n")
    with pytest.raises(IngestError, match="line 1"):
        ni.build_index([bad], idx)
    (tmp_path / "bin.txt").write_bytes(b"abc \xff\xfe def")
    with pytest.raises(IngestError, match="bin.txt at byte 4: expected UTF-8"):
        ni.build_index([tmp_path / "bin.txt"], idx)
    assert idx.read_bytes() == before
    assert not list(tmp_path.glob("*.building-*"))
    with pytest.raises(IngestError, match="not found"):
        ni.build_index([tmp_path / "missing.txt"], idx)
    with pytest.raises(AnalysisError, match="no n-gram index"):
        ni.open_index(tmp_path / "none.duckdb")
    with pytest.raises(AnalysisError, match="n-gram length"):
        ni.build_index([tmp_path / "ok.txt"], idx, n=0)
