"""Reading a batch of sources into runs, in stages: limits and classification (zips
expanded, HELM folders gathered), then each format's reader (lm_eval results paired with
their sample logs, lighteval, Every Eval Ever, inspect, HELM, tidy tables), then the
magnitude checks.

``problems is None``: all or nothing (the first ``IngestError`` is raised). Otherwise each
bad file is appended to ``problems`` and the rest goes on; a run whose file failed is left
out whole, its other files listed too ("held back").
"""

from __future__ import annotations

import logging
import os
import posixpath
from concurrent.futures import ThreadPoolExecutor

from evalcore.errors import IngestError
from evalcore.ingest import eee, helm, inspect_log, lighteval, lm_eval, tidy
from evalcore.ingest._common import Progress, Source, call_progress, check_size
from evalcore.ingest._zip import UnzipBudget
from evalcore.ingest.detect import classify
from evalcore.ingest.guards import check_magnitudes, checked_pieces, layout_guard
from evalcore.ingest.sources import expand_zip
from evalcore.model import ParsedRun

log = logging.getLogger(__name__)

# lm_eval sample logs of one run read in parallel (threads; DuckDB releases the GIL) when
# there are several on disk holding at least PARALLEL_READ_BYTES together
READ_WORKERS = min(4, os.cpu_count() or 1)
PARALLEL_READ_BYTES = 32 << 20
# parse_paths / read_paths: an lm_eval run whose sample logs on disk hold at least this
# many bytes comes back as a LazyRun (read task by task while Store.ingest writes it)
LAZY_BYTES = 256 << 20

Group = list[tuple[Source, str]]


def skipped_note(skipped: list[str]) -> str:
    return ("skipped (not a known file type, or a symlink leaving the folder): "
            + ", ".join(skipped[:20])
            + (f" and {len(skipped) - 20} more" if len(skipped) > 20 else ""))


def parse_sources(sources: list[Source], skipped: list[str], progress: Progress | None,
                  cluster_key: str | None, problems: list[IngestError] | None = None, *,
                  lazy: bool = False, columns: dict[str, str] | None = None
                  ) -> list[ParsedRun]:
    """Runs from sources (module docstring: all or nothing, or bad files into
    ``problems``)."""
    if not sources:
        raise IngestError(", ".join(skipped) or "(no input)", None,
                          "at least one file of a known format", "nothing to read")
    reading = _Reading(skipped, progress, cluster_key, problems, lazy, columns)
    reading.classify(sources)
    reading.read_lm_eval()
    reading.read_lighteval()
    # Every Eval Ever before tidy: a samples file no aggregate claims is read as a tidy table
    reading.read_eee()
    reading.read_inspect()
    reading.read_helm()
    reading.read_tidy()
    return reading.finish()


class _Reading:
    """The state of one batch's read: the sources by format, the runs read so far, the
    progress, and how a failure is recorded."""

    def __init__(self, skipped: list[str], progress: Progress | None, cluster_key: str | None,
                 problems: list[IngestError] | None, lazy: bool,
                 columns: dict[str, str] | None) -> None:
        self.skipped, self.progress, self.cluster_key = skipped, progress, cluster_key
        self.problems, self.lazy, self.columns = problems, lazy, columns
        self.by_fmt: dict[str, list[Source]] = {}
        self.helm_parts: dict[str, dict[str, Source]] = {}
        self.helm_schemas: dict[str, Source] = {}
        self.formats: dict[str, str] = {}
        self.runs: list[ParsedRun] = []
        self.done = 0
        self.total = 0

    # ---- failures and progress --------------------------------------------------------
    def failed(self, exc: IngestError) -> None:
        if self.problems is None:
            raise exc
        self.problems.append(exc)

    def held_back(self, src: Source, because: IngestError) -> None:
        self.failed(IngestError(src.name, None, "every file of its run to be readable",
                                f"not stored: {because.file} of the same run could not be "
                                "read; a run is stored whole or not at all"))

    def held_back_all(self, members: list[Source], exc: IngestError) -> None:
        """``exc`` recorded, and every other file of its run held back."""
        self.failed(exc)
        for other in members:
            if other.name != exc.file:
                self.held_back(other, exc)

    def step(self, src_name: str, size: int) -> None:
        self.done += size
        call_progress(self.progress, min(self.done, self.total), self.total, src_name)

    # ---- classification ---------------------------------------------------------------
    def classify(self, sources: list[Source]) -> None:
        """Limits first (before reading anything), then each source's format; zips are
        expanded into their members, HELM run folders gathered."""
        skipped = self.skipped
        noise = helm.noise_names([s.name for s in sources] + skipped)  # HELM inputs, caches
        if noise:
            log.debug("skipped HELM inputs and caches: %s", ", ".join(sorted(noise)))
            sources = [s for s in sources if s.name not in noise]
            skipped[:] = [s for s in skipped if s not in noise]
        ok_sources = []
        for src in sources:
            try:
                check_size(src.name, src.size)
                ok_sources.append(src)
            except IngestError as exc:
                self.failed(exc)
        self.total = sum(s.size for s in ok_sources)
        budget = UnzipBudget()
        for src in ok_sources:
            try:
                fmt = classify(src, self.columns)
                if fmt != "zip":
                    self._add(src, fmt)
                    continue
                members, kind = expand_zip(src, skipped, budget)
            except IngestError as exc:
                self.failed(exc)
                continue
            if kind == "inspect":
                self._add(src, inspect_log.EVAL_ZIP)
                continue
            self._add_members(src, members)
        zipped_noise = helm.noise_names(skipped + list(self.formats))   # a zip's groups/latex/*.tex
        skipped[:] = [s for s in skipped if s not in zipped_noise]

    def _add_members(self, src: Source, members: list[Source]) -> None:
        noise = helm.noise_names([m.name for m in members])
        for m in members:
            if m.name in noise:
                log.debug("skipped HELM input or cache %s", m.name)
                continue
            try:
                check_size(m.name, m.size)
                mfmt = classify(m, self.columns)
                if mfmt == "zip":
                    raise IngestError(src.name, f"zip member {m.name}", "no nested archives")
                self._add(m, mfmt)
            except IngestError as exc:
                self.failed(exc)

    def _add(self, src: Source, fmt: str) -> None:
        self.formats[src.name] = fmt
        if fmt in helm.UNUSED:
            log.debug("%s", helm.describe(fmt, src.name))
        elif fmt == helm.SCHEMA:
            self.helm_schemas[src.folder] = src
        elif fmt in helm.PART_FORMATS:
            parts = self.helm_parts.setdefault(src.folder, {})
            if fmt in parts:
                raise IngestError(src.name, None, "one HELM run per folder",
                                  f"{parts[fmt].name} is also a {fmt} file of folder {src.folder!r}")
            parts[fmt] = src
        else:
            self.by_fmt.setdefault(fmt, []).append(src)

    # ---- lm_eval ----------------------------------------------------------------------
    def read_lm_eval(self) -> None:
        """Results files and sample logs, paired into runs; sample logs that would have
        paired with a failed results file are held back."""
        results = []
        bad_results: list[tuple[Source, IngestError]] = []
        for src in self.by_fmt.get(lm_eval.RESULTS, []):
            try:
                results.append(layout_guard(src.name, lm_eval.read_results, src))
            except IngestError as exc:
                self.failed(exc)
                bad_results.append((src, exc))
        sample_srcs = (self.by_fmt.get(lm_eval.SAMPLES_JSONL, [])
                       + self.by_fmt.get(lm_eval.SAMPLES_JSON, []))
        if bad_results:
            kept = []
            for s in sample_srcs:
                owner = next((exc for r, exc in bad_results if _may_pair(r, s)), None)
                if owner is None:
                    kept.append(s)
                else:
                    self.held_back(s, owner)
            sample_srcs = kept
        attached, alone = lm_eval.pair_samples(results, sample_srcs)
        for i, res in enumerate(results):
            self._build_lm_eval(res, attached[i])
            self.step(res.src.name, res.src.size)
        alone_groups: dict[str, Group] = {}
        for s, t in alone:
            # one run per (folder, timestamp); a file without a timestamp is its own run
            # unless it sits in a folder on disk (lm_eval's per-model output folder)
            key = lm_eval.samples_ts(s) or (s.name if s.path is None or not s.folder else "")
            alone_groups.setdefault(f"{s.folder}|{key}", []).append((s, t))
        for group in alone_groups.values():
            self._build_lm_eval(None, group)

    def _build_lm_eval(self, res: lm_eval.ResultsFile | None, group: Group) -> None:
        """One lm_eval run, all or nothing: a failed file leaves the whole run out."""
        members = ([res.src] if res is not None else []) + [s for s, _ in group]
        if self._lazy_ok(res, group):
            try:
                with ThreadPoolExecutor(max_workers=2, thread_name_prefix="evalbars-sha") as pool:
                    list(pool.map(lambda s: s.sha256(), [s for s, _ in group]))
                run = lm_eval.build_lazy_run(res, group, self.formats, self._read_quiet)
            except (IngestError, OSError) as exc:
                if not isinstance(exc, IngestError):
                    exc = IngestError(group[0][0].name, None, "a readable file", str(exc))
                self.held_back_all(members, exc)
                return
            self.runs.append(checked_pieces(run))
            for s, _ in group:
                self.step(s.name, s.size)
            return
        try:
            samples = self._read_group(group)
            self.runs.append(layout_guard(members[0].name, lm_eval.build_run, res, samples,
                                          self.formats, self.cluster_key))
        except IngestError as exc:
            self.held_back_all(members, exc)

    def _lazy_ok(self, res: lm_eval.ResultsFile | None, group: Group) -> bool:
        return (self.lazy and bool(group) and (res is None or not res.embedded)
                and all(s.path is not None and self.formats[s.name] == lm_eval.SAMPLES_JSONL
                        for s, _ in group)
                and sum(s.size for s, _ in group) >= LAZY_BYTES)

    def _read_samples(self, src: Source, task: str) -> lm_eval.SampleColumns:
        if self.formats[src.name] == lm_eval.SAMPLES_JSON:
            cols = layout_guard(src.name, lm_eval.read_samples_json_array, src, task,
                                self.cluster_key)
        else:
            cols = layout_guard(src.name, lm_eval.read_samples_jsonl, src, task, self.progress,
                                self.done, self.total, self.cluster_key)
        self.step(src.name, src.size)
        return cols

    def _read_group(self, group: Group) -> list[tuple[Source, str, lm_eval.SampleColumns]]:
        """The sample logs of one run; large logs on disk are read ``READ_WORKERS`` at a time
        (DuckDB's JSON reader keeps about one core busy per file). Progress is then reported
        per file, from this thread only; the first file that fails (in the given order)
        raises, as in a sequential read."""
        eligible = [s for s, _ in group
                    if s.path is not None and self.formats[s.name] != lm_eval.SAMPLES_JSON]
        workers = min(READ_WORKERS, len(eligible))
        ids = {id(s) for s in eligible}
        if workers < 2 or sum(s.size for s in eligible) < PARALLEL_READ_BYTES:
            return [(s, t, self._read_samples(s, t)) for s, t in group]
        out = []
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="evalbars-read") as pool:
            futures = [pool.submit(layout_guard, s.name, lm_eval.read_samples_jsonl, s, t,
                                   None, 0, 0, self.cluster_key)
                       if id(s) in ids else None for s, t in group]
            try:
                for (s, t), fut in zip(group, futures):
                    out.append((s, t, fut.result() if fut is not None
                                else self._read_samples(s, t)))
                    if fut is not None:
                        self.step(s.name, s.size)
            finally:
                for fut in futures:
                    if fut is not None:
                        fut.cancel()
        return out

    def _read_quiet(self, group: Group) -> list[tuple[Source, str, lm_eval.SampleColumns]]:
        """A lazy run's piece: its files read one after the other, no progress calls."""
        return [(s, t, layout_guard(s.name, lm_eval.read_samples_jsonl, s, t, None, 0, 0,
                                    self.cluster_key))
                for s, t in group]

    # ---- the other formats ------------------------------------------------------------
    def read_lighteval(self) -> None:
        """lighteval / Open LLM Leaderboard v1 results: one run each, with the per-item
        details files of the same run (same timestamp); details without their results file
        are skipped."""
        details = self.by_fmt.get(lighteval.DETAILS, [])
        noted: set[str] = set()
        for src in self.by_fmt.get(lighteval.RESULTS, []):
            mine = lighteval.details_for(src, details)
            noted.update(d.name for d in mine)
            try:
                self.runs.append(layout_guard(src.name, lighteval.parse_results, src, mine))
            except IngestError as exc:
                self.held_back_all([src, *mine], exc)
            self.step(src.name, src.size)
            for d in mine:
                self.step(d.name, d.size)
        for d in details:
            if d.name not in noted:
                self.skipped.append(f"{d.name} (lighteval per-item details without their "
                                    "results file: not read)")
                self.step(d.name, d.size)

    def read_eee(self) -> None:
        """Every Eval Ever aggregates with their companions (``eee.parse_aggregate``), all
        or nothing per run; unclaimed instance-level files go on to the tidy reader."""
        beside: dict[str, dict[str, Source]] = {}
        for s in self.by_fmt.get(eee.SAMPLES, []):
            beside.setdefault(s.folder, {})[s.basename] = s
        claimed: set[str] = set()
        for src in self.by_fmt.get(eee.AGGREGATE, []):
            mine = beside.get(src.folder, {})
            try:
                run, comp = layout_guard(src.name, eee.parse_aggregate, src, mine)
            except IngestError as exc:
                self._eee_failed(src, mine, claimed, exc)
                self.step(src.name, src.size)
                continue
            self.runs.append(run)
            if comp is not None:
                claimed.add(comp.name)
                self.step(comp.name, comp.size)
            self.step(src.name, src.size)
        for s in self.by_fmt.get(eee.SAMPLES, []):
            if s.name not in claimed:
                self.formats[s.name] = tidy.JSONL
                self.by_fmt.setdefault(tidy.JSONL, []).append(s)

    def _eee_failed(self, src: Source, mine: dict[str, Source], claimed: set[str],
                    exc: IngestError) -> None:
        """A failed aggregate: its companion (whichever name it goes by) is held back."""
        self.failed(exc)
        stem = posixpath.splitext(src.basename)[0]
        for name in (f"{stem}_samples.jsonl", f"{stem}.jsonl", exc.file):
            other = mine.get(posixpath.basename(name.replace("!", "/")))
            if other is not None and other.name not in claimed:
                claimed.add(other.name)
                if other.name != exc.file:
                    self.held_back(other, exc)
        if exc.file != src.name:
            self.held_back(src, exc)

    def read_inspect(self) -> None:
        """inspect logs: one run each."""
        for fmt, parse in ((inspect_log.EVAL_ZIP, inspect_log.parse_eval),
                           (inspect_log.JSON_LOG, inspect_log.parse_json_log)):
            for src in self.by_fmt.get(fmt, []):
                try:
                    self.runs.append(layout_guard(src.name, parse, src, self.cluster_key))
                except IngestError as exc:
                    self.failed(exc)
                self.step(src.name, src.size)

    def read_helm(self) -> None:
        """HELM run folders, one run per (suite folder, model); a bad folder is left out
        whole."""
        if not self.helm_parts:
            return
        first = next(iter(next(iter(self.helm_parts.values())).values())).name
        try:
            self.runs.extend(layout_guard(
                first, helm.parse_runs, self.helm_parts, self.helm_schemas,
                on_error=lambda parts, exc: self.held_back_all(list(parts.values()), exc)))
        except IngestError as exc:
            self.failed(exc)
        for p in [p for parts in self.helm_parts.values() for p in parts.values()]:
            self.step(p.name, p.size)
        for p in self.helm_schemas.values():
            self.step(p.name, p.size)

    def read_tidy(self) -> None:
        """Tidy tables: one run per model/run value."""
        for fmt in (tidy.CSV, tidy.JSONL, tidy.PARQUET):
            for src in self.by_fmt.get(fmt, []):
                try:
                    self.runs.extend(layout_guard(src.name, tidy.parse_table, src, fmt,
                                                  self.columns))
                except IngestError as exc:
                    self.failed(exc)
                self.step(src.name, src.size)

    # ---- the end ----------------------------------------------------------------------
    def finish(self) -> list[ParsedRun]:
        """The runs that pass the magnitude checks (a LazyRun: its summaries here, its
        pieces when read), the skipped files named on the first."""
        kept = []
        for run in self.runs:
            try:
                check_magnitudes(run)
                kept.append(run)
            except IngestError as exc:
                self.failed(exc)
        if self.skipped and kept:
            kept[0].warnings.append(skipped_note(self.skipped))
        call_progress(self.progress, self.total, self.total, "")
        return kept


def _may_pair(results: Source, samples: Source) -> bool:
    """Whether a sample log could belong to an lm_eval results file (same folder, and the
    same timestamp when both names carry one), as ``lm_eval.pair_samples`` would pair them."""
    if results.folder != samples.folder:
        return False
    m = lm_eval.RESULTS_NAME.match(results.basename)
    r_ts, s_ts = (m.group("ts") if m else None), lm_eval.samples_ts(samples)
    return r_ts is None or s_ts is None or r_ts == s_ts
