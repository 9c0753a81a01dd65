"""The CLI under hostile input: control characters never reach the terminal raw,
a full disk has its own exit code and leaves the store as it was, usage errors exit 2, and
run ids have an unambiguous form."""

from __future__ import annotations

import errno
import json
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from evalcore import cli
from evalcore.store import Store
from evalcore.termsafe import escape, escape_json
from tests.cli_helpers import run_main as run

ROOT = Path(__file__).resolve().parents[1]
EVIL = "a\x1b[31mRED\x1b[0m\x07b"
CONTROL = [chr(c) for c in range(0x20) if c != 0x0A] + ["\x7f", "\x9b", "\u202e"]




def _raw_controls(text: str) -> list[str]:
    return [c for c in CONTROL if c in text]


def _digest(path: Path) -> tuple:
    """The store's snapshot id and a digest of every table (``store_fingerprint``)."""
    from tests.store.conftest import store_fingerprint
    return store_fingerprint(Store(path))


@pytest.fixture()
def evil_store(tmp_path, capsys):
    csv = tmp_path / "evil.csv"
    rows = ["model,task,item_id,score"]
    for i in range(30):
        rows.append(f"{EVIL},t\x1b]0;title\x07,{i},{i % 2}")
    csv.write_text("\n".join(rows) + "\n")
    csv2 = tmp_path / "other.csv"
    csv2.write_text("model,task,item_id,score\n" + "\n".join(
        f"c\u009bd\u202e,t\x1b]0;title\x07,{i},{(i // 2) % 2}" for i in range(30)) + "\n")
    store = tmp_path / "s"
    assert cli.main(["--store", str(store), "ingest", str(csv)]) == 0
    assert cli.main(["--store", str(store), "ingest", str(csv2)]) == 0
    capsys.readouterr()
    return store


def test_escape_helpers():
    assert escape(EVIL) == "a\\x1b[31mRED\\x1b[0m\\x07b"
    assert escape("line1\nline2\r\t") == "line1\nline2\\x0d\\x09"
    assert escape("c\u009bd\u202e") == "c\\x9bd\\u202e"
    text = escape_json(json.dumps({"k": "x\u009b\u202e\x7f"}, ensure_ascii=False))
    assert json.loads(text) == {"k": "x\u009b\u202e\x7f"} and not _raw_controls(text)


@pytest.mark.parametrize("argv", [
    ("runs",), ("runs", "--format", "json"), ("runs", "--format", "csv"),
    ("runs", "--format", "markdown"), ("leaderboard",), ("leaderboard", "--format", "json"),
    ("leaderboard", "--format", "latex"), ("compare", "#1", "#2"),
    ("compare", "#1", "#2", "--format", "json"), ("audit",),
    ("compare", "#1", EVIL + "x"),             # error message quoting the argument
    ("leaderboard", "--method", EVIL),         # argparse's own error message
    ("rename", "#2", "new\x1bname"), ("tag", "#1", "t\x07ag"),
])
def test_no_raw_control_characters_in_any_output(capsys, evil_store, argv):
    """Item 6: every terminal output escapes ESC/BEL/C1/bidi; json stays valid JSON."""
    code, out, err = run(capsys, "--store", evil_store, *argv)
    assert not _raw_controls(out) and not _raw_controls(err), (out, err)
    if argv[0] != "audit":      # (no names in an audit of tidy runs)
        assert any(m in out + err for m in ("x1b", "u001b", "x9b", "x07")), (out, err)
    if "--format" in argv and "json" in argv:
        json.loads(out)


def test_ingest_output_escaped_and_names_kept_in_store(capsys, tmp_path):
    csv = tmp_path / "e.csv"
    csv.write_text(f"model,task,item_id,score\n{EVIL},t,1,1\n")
    code, out, err = run(capsys, "--store", tmp_path / "s", "ingest", csv)
    assert code == 0 and "a\\x1b[31mRED\\x1b[0m\\x07b (id 1)" in out
    assert not _raw_controls(out + err)
    assert Store(tmp_path / "s").runs()["name"].tolist() == [EVIL]   # data unchanged


def test_progress_bar_escapes_the_file_name():
    import io

    from evalcore.termsafe import SafeStream

    buf = io.StringIO()
    bar = cli._Progress(SafeStream(buf))
    bar(5, 10, f"/x/{EVIL}.json")
    bar.close()
    text = buf.getvalue()
    assert text.startswith("\r[") and "\\x1b" in text and not _raw_controls(text.replace("\r", ""))


# ---------------------------------------------------------------------------------------
# item 8: disk full
# ---------------------------------------------------------------------------------------
def _ingest_twice_setup(tmp_path):
    a = tmp_path / "a.csv"
    a.write_text("model,task,item_id,score\nm,t,1,1\nm,t,2,0\n")
    b = tmp_path / "b.csv"
    b.write_text("model,task,item_id,score\nn,t,1,1\nn,t,2,1\n")
    store = tmp_path / "s"
    assert cli.main(["--store", str(store), "ingest", str(a)]) == 0
    return store, b


def test_disk_full_in_duckdb_write(capsys, tmp_path, monkeypatch):
    store, b = _ingest_twice_setup(tmp_path)
    before = _digest(store)

    def full(self, con, p):
        raise duckdb.IOException('IO Error: Could not write file "x.tmp": No space left on device')
    monkeypatch.setattr(Store, "_write_runs", full)
    code, out, err = run(capsys, "--store", store, "ingest", b)
    assert code == cli.EXIT_DISK_FULL == 5
    assert err.startswith("error: no space left on device; the store was not changed")
    assert len(err.strip().splitlines()) == 1
    assert _digest(store) == before


def test_disk_full_hidden_behind_an_aborted_transaction(capsys, tmp_path, monkeypatch):
    """DuckDB reports the first failure, then "Current transaction is aborted": the cause
    decides."""
    store, b = _ingest_twice_setup(tmp_path)
    before = _digest(store)

    def full(self, con, p):
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError:
            raise duckdb.TransactionException("TransactionContext Error: Current transaction "
                                              "is aborted (please ROLLBACK)")
    monkeypatch.setattr(Store, "_write_runs", full)
    code, _, err = run(capsys, "--store", store, "ingest", b)
    assert code == 5 and "no space left on device; the store was not changed" in err
    assert _digest(store) == before


def test_disk_full_as_an_os_error_mid_write(capsys, tmp_path, monkeypatch):
    store, b = _ingest_twice_setup(tmp_path)
    before = _digest(store)

    def full(self, con, p):
        raise OSError(errno.ENOSPC, "No space left on device", "data/main/scores/x.parquet")
    monkeypatch.setattr(Store, "_write_runs", full)
    code, _, err = run(capsys, "--store", store, "ingest", b)
    assert code == 5 and err.startswith("error: no space left on device; the store was not changed")
    assert _digest(store) == before


def _can_mount_tmpfs(tmp_path) -> bool:
    if not shutil.which("unshare"):
        return False
    target = tmp_path / "probe"
    target.mkdir()
    probe = subprocess.run(["unshare", "-rm", "sh", "-c",
                            f"mount -t tmpfs -o size=1m tmpfs {target}"],
                           capture_output=True, timeout=30)
    return probe.returncode == 0


def test_disk_full_on_a_real_tiny_filesystem(tmp_path):
    """A 2 MB tmpfs in a user namespace (skipped where that is not allowed): a table of
    200,000 random scores does not fit (its Parquet alone is larger), the CLI says so with
    exit 5, and the store is unchanged."""
    if not _can_mount_tmpfs(tmp_path):
        pytest.skip("unprivileged tmpfs mounts (unshare -rm) are not available here")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    small = tmp_path / "small.csv"
    small.write_text("model,task,item_id,score\nm,t,1,1\n")
    big = tmp_path / "big.csv"
    rng = __import__("numpy").random.default_rng(1)
    big.write_text("model,task,item_id,score\n" + "".join(
        f"b,t,{i},{v!r}\n" for i, v in enumerate(rng.random(200_000).tolist())))
    script = (
        f"mount -t tmpfs -o size=2m tmpfs {mnt} && "
        f"{sys.executable} -m evalcore --store {mnt}/s ingest {small} >/dev/null && "
        f"{sys.executable} -m evalcore --store {mnt}/s runs --format csv && "
        f"{sys.executable} -m evalcore --store {mnt}/s ingest {big}; "
        f"echo rc=$?; {sys.executable} -m evalcore --store {mnt}/s runs --format csv")
    proc = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)
    lines = proc.stdout.splitlines()
    assert "rc=5" in lines, (proc.stdout, proc.stderr)
    assert "error: no space left on device; the store was not changed" in proc.stderr
    assert "Traceback" not in proc.stderr
    cut = lines.index("rc=5")
    assert lines[:cut] == lines[cut + 1:] and len(lines[:cut]) == 2   # header + the one run


# ---------------------------------------------------------------------------------------
# item 9: usage errors and unambiguous run ids
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv", [("plan",), ("plan", "--n", "100"), ("plan", "--delta", "0.02"),
                                  ("plan", "--n", "9", "--sd-diff", "0.3", "--disagreement", "0.2"),
                                  ("plan", "--pilot", "a", "b", "--n", "9")])
def test_plan_without_assumptions_is_a_usage_error(capsys, argv):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("usage error: ") and "python -m evalcore plan --help" in err


@pytest.fixture()
def shadow_store(tmp_path, capsys):
    """Runs: id 1 'alpha', id 2 'beta', id 3 '1' (a run named like id 1)."""
    store = tmp_path / "s"
    for name in ("alpha", "beta", "1"):
        f = tmp_path / f"{name}.csv"
        f.write_text(f"model,task,item_id,score\n{name},t,1,1\n{name},t,2,0\n")
        assert cli.main(["--store", str(store), "ingest", str(f)]) == 0
    s = Store(store)
    assert dict(zip(s.runs()["name"], s.runs()["run_id"])) == {"alpha": 1, "beta": 2, "1": 3}
    capsys.readouterr()
    return store


def test_run_reference_forms(shadow_store):
    s = Store(shadow_store)
    assert s.resolve_run("#1") == 1 and s.resolve_run("id:1") == 1 and s.resolve_run("ID: 2") == 2
    assert s.resolve_run("name:1") == 3 and s.resolve_run("beta") == 2 and s.resolve_run(2) == 2
    assert s.resolve_run("3") == 3        # a bare number that is only an id (run '1' has id 3)
    from evalcore.errors import StoreError
    with pytest.raises(StoreError, match=r"run '1' is ambiguous: it is the name of run id 3 "
                                         r"and the id of another run; write #1"):
        s.resolve_run("1")
    with pytest.raises(StoreError, match="no run named or numbered '#9'"):
        s.resolve_run("#9")


def test_delete_with_an_ambiguous_number_deletes_nothing(capsys, shadow_store):
    before = _digest(shadow_store)
    code, _, err = run(capsys, "--store", shadow_store, "delete", "1", "--yes")
    assert code == 3 and "ambiguous" in err and "#1" in err and "name:1" in err
    assert _digest(shadow_store) == before
    code, out, _ = run(capsys, "--store", shadow_store, "delete", "#1", "--yes")
    assert code == 0 and out.strip() == "run 1 deleted"
    assert sorted(Store(shadow_store).runs()["name"]) == ["1", "beta"]
    # now '1' is only a name: the bare form works again
    code, out, _ = run(capsys, "--store", shadow_store, "delete", "1", "--yes")
    assert code == 0 and out.strip() == "run 3 deleted"


# ---------------------------------------------------------------------------------------
# item 5: overflow
# ---------------------------------------------------------------------------------------
def test_scores_near_the_limit_give_finite_results_without_warnings(capsys, tmp_path):
    """Scores up to +-1e100 are accepted and every mean/SE/CI of compare and leaderboard is
    finite with no RuntimeWarning; 1e308 is refused at parse time (exit 3, file and line)."""
    import warnings

    rng = __import__("numpy").random.default_rng(0)
    store = tmp_path / "s"
    for name in ("a", "b"):
        f = tmp_path / f"{name}.csv"
        vals = rng.choice([1e99, -1e99, 9.9e99, 5e98], size=60)
        f.write_text("model,task,item_id,score\n" +
                     "".join(f"{name},t,{i},{float(v)!r}\n" for i, v in enumerate(vals)))
        assert cli.main(["--store", str(store), "ingest", str(f)]) == 0
    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        code, out, err = run(capsys, "--store", store, "compare", "a", "b", "--format", "json")
        assert code == 0, err
        row = json.loads(out)["per_task"][0]
        for k in ("score_a", "score_b", "diff", "se", "low", "high", "se_unpaired", "mde"):
            assert row[k] is not None and abs(row[k]) < 1e101, (k, row[k])
        code, out, err = run(capsys, "--store", store, "leaderboard", "--format", "json")
        assert code == 0, err
        for c in json.loads(out)["cells"]:
            assert all(c[k] is not None and abs(c[k]) < 1e101 for k in ("score", "se", "low", "high"))
    huge = tmp_path / "huge.csv"
    huge.write_text("model,task,item_id,score\nh,t,1,1\nh,t,2,1e308\n")
    code, _, err = run(capsys, "--store", store, "ingest", "--strict", huge)
    assert code == 3 and err.startswith(f"error: {huge} at line 3, column score: expected a "
                                        "finite number within +-1e+100")
