"""The same file gives the same hashes on every machine: item hashes (inspect ``item_hash``)
and quoted values come from one canonical JSON text (``_common.dumps``: Python's json,
sorted keys, fixed separators, ASCII escapes), whether or not orjson is installed.

orjson is not a dependency; these tests put an orjson module first on the path (one that
writes orjson's compact, UTF-8 text; the real orjson 3.13.0 gives the same hashes here, as
checked by hand) and check that nothing changes. The pinned hashes are the ones evalbars
computed before the canonical form was fixed, on an install without orjson (commit
4f03fab), so item hashes already in such stores still match newly ingested runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from evalcore.ingest import parse_paths
from evalcore.ingest._common import dumps

ROOT = Path(__file__).resolve().parents[2]
POPULARITY = "2025-02-11T15-18-04-05-00_popularity_mj7khqpMM4GBCfVQozKgzB.eval"
PINNED = {
    POPULARITY: ("1", "455d11c68d33aa8c231dc574b2a083df7b085812deda420c401aa4bf9695b006"),
    "data_arc_qwen.json": ("1", "3deb0f50cf6f5a0cf52949d588082aefdabb1e1843a0f8dd5715dfa200b55894"),
}

FAKE_ORJSON = '''
import json as _json
OPT_SORT_KEYS = 1
JSONDecodeError = _json.JSONDecodeError
def loads(data):
    return _json.loads(data)
def dumps(obj, option=0):
    return _json.dumps(obj, separators=(",", ":"), ensure_ascii=False,
                       sort_keys=bool(option & OPT_SORT_KEYS)).encode()
'''

PROBE = '''
import json, sys
from evalcore.ingest import parse_paths
from evalcore.ingest._common import dumps
out = {"orjson importable": __import__("importlib.util").util.find_spec("orjson") is not None}
for f in sys.argv[1:]:
    s = parse_paths([f])[0].scores.sort_values(["item_id", "answer_idx"])
    out[f.rsplit("/", 1)[1]] = s["item_hash"].tolist()
out["dumps"] = dumps({"b": [1, 2.5, "\\u00e9"], "a": None, "c": 1e16})
print(json.dumps(out))
'''


def probe(files: list[Path], extra_path: Path | None) -> dict:
    path = f"{extra_path}:{ROOT}" if extra_path else str(ROOT)
    proc = subprocess.run([sys.executable, "-c", PROBE, *map(str, files)], cwd=ROOT,
                          env={"PYTHONPATH": path, "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_hashes_do_not_depend_on_orjson(fixtures_dir: Path, tmp_path: Path) -> None:
    fake = tmp_path / "site"
    fake.mkdir()
    (fake / "orjson.py").write_text(FAKE_ORJSON)
    files = [fixtures_dir / "inspect" / name for name in PINNED]
    without = probe(files, None)
    with_orjson = probe(files, fake)
    assert with_orjson.pop("orjson importable") is True
    assert without.pop("orjson importable") in (True, False)
    assert with_orjson == without
    assert without["dumps"] == '{"a": null, "b": [1, 2.5, "\\u00e9"], "c": 1e+16}'


def test_pinned_item_hashes_of_real_logs(fixtures_dir: Path) -> None:
    for name, (item, digest) in PINNED.items():
        scores = parse_paths([fixtures_dir / "inspect" / name])[0].scores
        first = scores.sort_values(["item_id", "answer_idx"]).iloc[0]
        assert (first["item_id"], first["item_hash"]) == (item, digest), name


def test_canonical_text() -> None:
    assert dumps({"b": 1, "a": [True, None, "x"]}) == '{"a": [true, null, "x"], "b": 1}'
    assert dumps({"k": float("nan")}) == '{"k": NaN}'
    assert dumps({1: "a", "b": 2}) == '{"1": "a", "b": 2}'     # mixed keys: written as text
    assert dumps({"t": object}) == '{"t": "<class \'object\'>"}'


def test_orjson_is_not_imported_by_evalcore() -> None:
    src = (ROOT / "evalcore").rglob("*.py")
    assert not [p for p in src if "import orjson" in p.read_text(encoding="utf-8")]
