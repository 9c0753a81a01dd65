"""Validation of Every Eval Ever files for the tests: the official validator where a Python
>= 3.12 with ``every-eval-ever`` is found, else the JSON schemas that package ships plus a
port of its repository checks.

The official validator (PyPI ``every-eval-ever`` 0.3.0, MIT) is
``python -m every_eval_ever validate --format json FILES``; it needs Python >= 3.12.
``official_python()`` finds an interpreter: ``$EVALBARS_EEE_PYTHON``, else ``python3.12`` /
``python3.13`` / ``python3.14`` on PATH, each only if ``import every_eval_ever`` works there.

``schema_check(root)`` validates every file under ``root/data`` with ``jsonschema`` against
``tests/fixtures/wild/eee/schemas/0.3.0/`` (byte-exact copies of the schemas inside the
0.3.0 wheel) and applies the checks of the package's ``validator/validation_core.py``
(``check_path_structure``, ``check_companion_exists``, ``check_instance_companion``,
``check_score_metadata``, ``check_model_deployment``, ``check_model_identity_path``), ported
here line by line where they apply to one exported folder. It returns a list of messages
(empty: valid).
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any

from jsonschema import Draft7Validator

SCHEMAS = Path(__file__).resolve().parents[1] / "fixtures" / "wild" / "eee" / "schemas" / "0.3.0"
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
_AGGREGATE = re.compile(rf"{_UUID}\.json")
_INSTANCE = re.compile(rf"{_UUID}_samples\.jsonl")
_BAD_CHARS = re.compile(r'[<>:"\\|?*\x00-\x1f]')
_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)),
             *(f"LPT{i}" for i in range(1, 10))}
_DEPLOYMENT = ("self_deployed", "externally_managed", "unknown")
_AVAILABILITY = ("open_weights", "closed_weights", "unknown")


def official_python() -> str | None:
    """An interpreter that imports ``every_eval_ever``: ``$EVALBARS_EEE_PYTHON`` as given
    (the user vouches for it), else a Python >= 3.12 on PATH; None when there is none."""
    chosen = os.environ.get("EVALBARS_EEE_PYTHON", "")
    candidates = [(chosen, "import every_eval_ever")] if chosen else []
    candidates += [(shutil.which(n) or "", "import sys, every_eval_ever; "
                    "assert sys.version_info >= (3, 12)")
                   for n in ("python3.12", "python3.13", "python3.14")]
    for exe, probe in candidates:
        if exe and subprocess.run([exe, "-c", probe], capture_output=True, timeout=60,
                                  check=False).returncode == 0:
            return exe
    return None


def official_validate(python: str, root: Path) -> list[dict[str, Any]]:
    """The official validator's JSON report on every file under ``root/data``."""
    files = sorted(str(p.relative_to(root)) for p in (root / "data").rglob("*") if p.is_file())
    proc = subprocess.run([python, "-m", "every_eval_ever", "validate", "--format", "json",
                           *files], cwd=root, capture_output=True, text=True, timeout=600,
                          check=False)
    return json.loads(proc.stdout)


def _strict(text: str) -> Any:
    def refuse(token: str) -> Any:
        raise ValueError(f"non-standard JSON token {token}")
    return json.loads(text, parse_constant=refuse)


def schema_check(root: Path) -> list[str]:
    """Messages for every error in the files under ``root/data`` (empty: valid; the
    validator's warnings are ``schema_warnings``)."""
    agg_schema = Draft7Validator(json.loads((SCHEMAS / "eval.schema.json").read_text()))
    inst_schema = Draft7Validator(json.loads(
        (SCHEMAS / "instance_level_eval.schema.json").read_text()))
    files = {p.relative_to(root).as_posix(): p for p in (root / "data").rglob("*")
             if p.is_file()}
    problems: list[str] = []
    for rel, path in sorted(files.items()):
        problems += [f"{rel}: {m}" for m in path_structure(rel)]
        if rel.endswith(".json"):
            doc = _strict(path.read_text(encoding="utf-8"))
            problems += [f"{rel}: {e.message}" for e in agg_schema.iter_errors(doc)]
            problems += [f"{rel}: {m}" for m in companion(rel, doc, files)]
            problems += [f"{rel}: {m}" for m in score_metadata(doc)]
            problems += [f"{rel}: {m}" for m in model_deployment(doc)]
        elif rel.endswith(".jsonl"):
            for k, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if line.strip():
                    row = _strict(line)
                    problems += [f"{rel} line {k}: {e.message}"
                                 for e in inst_schema.iter_errors(row)]
            aggregate = rel[: -len("_samples.jsonl")] + ".json"
            if aggregate not in files:
                problems.append(f"{rel}: samples file requires sibling aggregate {aggregate}")
        else:
            problems.append(f"{rel}: unsupported extension")
    return problems


def schema_warnings(root: Path) -> list[str]:
    """The validator's warnings (``check_model_identity_path``) for the aggregates under
    ``root/data``: valid files, "not merge-ready" in the datastore."""
    out = []
    for path in sorted((root / "data").rglob("*.json")):
        rel = path.relative_to(root).as_posix()
        out += [f"{rel}: {m}" for m in model_identity(rel, _strict(path.read_text("utf-8")))]
    return out


def path_structure(rel: str) -> list[str]:
    """``check_path_structure``: data/<benchmark>/<developer>/<model>/<uuid4>[.json|
    _samples.jsonl] with portable components."""
    parts = rel.split("/")
    if len(parts) != 5 or parts[0] != "data":
        return [f"unexpected path {rel!r}"]
    if any(p in ("", ".", "..") for p in parts) or "data" in parts[1:4]:
        return [f"bad path components in {rel!r}"]
    for c in parts[1:4]:
        reserved = c.split(".", 1)[0].upper() in _RESERVED
        if _BAD_CHARS.search(c) or c.endswith((".", " ")) or reserved:
            return [f"component {c!r} is not a portable name"]
    if not (_AGGREGATE.fullmatch(parts[4]) or _INSTANCE.fullmatch(parts[4])):
        return [f"file name {parts[4]!r} is not {{UUID4}}.json or {{UUID4}}_samples.jsonl"]
    return []


def companion(rel: str, doc: dict[str, Any], files: dict[str, Path]) -> list[str]:
    """``check_companion_exists``: file_path is exactly ``<stem>_samples.jsonl`` beside the
    aggregate, format jsonl, the file exists, its rows match total_rows and its ids the
    aggregate's."""
    expected = (PurePosixPath(rel).parent / f"{PurePosixPath(rel).stem}_samples.jsonl").as_posix()
    detail = doc.get("detailed_evaluation_results")
    if detail is None:
        return [f"detailed_evaluation_results missing although {expected} exists"] \
            if expected in files else []
    out = []
    if detail.get("file_path") != expected:
        out.append(f"file_path {detail.get('file_path')!r} is not {expected!r}")
    if detail.get("format") != "jsonl":
        out.append("format is not 'jsonl'")
    if expected not in files:
        return out + [f"companion {expected} not found"]
    rows = [json.loads(x) for x in files[expected].read_text(encoding="utf-8").splitlines()
            if x.strip()]
    if not rows:
        out.append("companion has no rows")
    if isinstance(detail.get("total_rows"), int) and detail["total_rows"] != len(rows):
        out.append(f"total_rows {detail['total_rows']} != {len(rows)} rows")
    if {r.get("evaluation_id") for r in rows} - {doc.get("evaluation_id")}:
        out.append("samples evaluation_id differs from the aggregate's")
    if {r.get("model_id") for r in rows} - {doc["model_info"].get("id")}:
        out.append("samples model_id differs from model_info.id")
    return out


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _bound(v: Any) -> float | None:
    if v == "Infinity":
        return math.inf
    if v == "-Infinity":
        return -math.inf
    return float(v) if _finite(v) else None


def score_metadata(doc: dict[str, Any]) -> list[str]:
    """``check_score_metadata``: continuous metrics state both bounds; scores and
    uncertainty fields finite; the score within the bounds."""
    out = []
    for i, r in enumerate(doc.get("evaluation_results") or []):
        mc = r.get("metric_config") or {}
        lo, hi = _bound(mc.get("min_score")), _bound(mc.get("max_score"))
        for key, raw, v in (("min_score", mc.get("min_score"), lo),
                            ("max_score", mc.get("max_score"), hi)):
            if v is None and (mc.get("score_type") == "continuous" or raw is not None):
                out.append(f"evaluation_results[{i}]: missing or invalid {key}")
        sd = r.get("score_details") or {}
        if not _finite(sd.get("score")):
            out.append(f"evaluation_results[{i}]: score not finite")
            continue
        unc = sd.get("uncertainty") or {}
        values = [unc.get("standard_deviation"), (unc.get("standard_error") or {}).get("value")]
        values += [(unc.get("confidence_interval") or {}).get(k)
                   for k in ("lower", "upper", "confidence_level")]
        if any(v is not None and not _finite(v) for v in values):
            out.append(f"evaluation_results[{i}]: an uncertainty field is not finite")
        if lo is not None and hi is not None and not lo <= sd["score"] <= hi:
            out.append(f"evaluation_results[{i}]: score outside [min_score, max_score]")
    return out


def model_deployment(doc: dict[str, Any]) -> list[str]:
    """``check_model_deployment``: both axes present with a known value."""
    d = (doc.get("model_info") or {}).get("additional_details") or {}
    out = []
    if d.get("deployment_type") not in _DEPLOYMENT:
        out.append(f"model_info deployment_type {d.get('deployment_type')!r}")
    if d.get("model_availability") not in _AVAILABILITY:
        out.append(f"model_info model_availability {d.get('model_availability')!r}")
    return out


def model_identity(rel: str, doc: dict[str, Any]) -> list[str]:
    """``check_model_identity_path`` (a warning there): the folders are the ones the model id
    files to (``helpers/io.py: datastore_path_components``)."""
    model = doc["model_info"]["id"]
    parts = model.strip().split("/")
    if len(parts) < 2 or parts[0].lower() == "unknown":
        return [f"model id {model!r} names no developer folder"]
    developer = parts[0].replace(":", "_")
    name = "_".join(p.replace(":", "_") for p in parts[1:])
    _, dev_dir, model_dir = rel.split("/")[1:4]
    if (dev_dir, model_dir) != (developer, name):
        return [f"model id {model!r} files to {developer}/{name}, not {dev_dir}/{model_dir}"]
    return []
