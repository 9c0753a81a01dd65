"""The user documentation stays short, linked and true to the code.

README.md is a guide for users (at most 400 lines); the manuals live in docs/ and the
benchmark figures in bench/README.md. These tests hold that shape, every relative link (file
and heading anchor), the Quickstart commands, the command tables against the CLI parser, the
demo session of docs/cli.md against the CLI's real output, and the exact Wilson coverage table
of docs/methods.md against `evalcore.stats.coverage`.
"""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
BENCH_README = ROOT / "bench" / "README.md"
ALL_DOCS = [README, BENCH_README, *DOCS]
README_MAX_LINES = 400

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks (links and headings in code are not markdown)."""
    lines, in_code = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            in_code = not in_code
            continue
        if not in_code:
            lines.append(line)
    return lines


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation other than '-' and '_'
    dropped (backticks, colons, dots, en dashes), spaces to '-'."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    """Every heading anchor of a markdown file, with GitHub's -1, -2 suffixes for repeats."""
    seen: dict[str, int] = {}
    anchors = set()
    for line in _prose_lines(path.read_text(encoding="utf-8")):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = _slug(m.group(1))
        count = seen.get(slug, 0)
        anchors.add(slug if count == 0 else f"{slug}-{count}")
        seen[slug] = count + 1
    return anchors


def _links(path: Path) -> list[str]:
    return [m.group(1) for line in _prose_lines(path.read_text(encoding="utf-8"))
            for m in LINK.finditer(line)]


def _section(text: str, title: str) -> str:
    """The body of the level-2 section `## title` (up to the next level-2 heading)."""
    m = re.search(rf"^## {re.escape(title)}\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert m, f"README.md has no '## {title}' section"
    return m.group(1)


def _table_first_cells(body: str) -> list[str]:
    """First cells of the rows of the first markdown table in `body` (header and rule
    skipped)."""
    rows = [line for line in body.splitlines() if line.startswith("|")]
    return [re.split(r"(?<!\\)\|", row)[1].strip() for row in rows[2:]]


def test_readme_is_a_short_guide():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines (at most {README_MAX_LINES}): move manuals to "
        "docs/ and benchmark figures to bench/README.md")


@pytest.mark.parametrize("path", ALL_DOCS, ids=_rel)
def test_relative_links_point_to_existing_files_and_headings(path):
    broken = []
    for target in _links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):       # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            broken.append(f"{target}: no file {dest}")
            continue
        if anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{target}: no heading with anchor #{anchor} in {_rel(dest)}")
    assert not broken, f"{_rel(path)}: broken links:\n" + "\n".join(broken)


@pytest.mark.parametrize("path", [*DOCS, BENCH_README], ids=_rel)
def test_every_manual_opens_with_what_it_is(path):
    lines = [line for line in path.read_text(encoding="utf-8").splitlines()]
    assert lines[0].startswith("# "), f"{_rel(path)}: the first line is not its title"
    body = [line for line in lines[1:] if line.strip()]
    first = body[0] if body else ""
    assert first and not first.startswith(("#", "|", "-", "*", "```", "!")), (
        f"{_rel(path)}: the title is not followed by a paragraph saying what the file is "
        f"(found {first!r})")


def test_quickstart_is_the_two_commands():
    quick = _section(README.read_text(encoding="utf-8"), "Quickstart")
    block = re.search(r"```bash\n(.*?)```", quick, re.S)
    assert block, "the Quickstart has no bash block"
    commands = [line.split("#")[0].strip() for line in block.group(1).splitlines()
                if line.strip()]
    assert commands == ["bash scripts/run.sh", "bash scripts/test.sh"]
    assert "`.ci/run` runs exactly this script" in quick
    # ... and that sentence is what .ci/run does.
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "exec bash scripts/test.sh" in ci and 'CI="${CI:-true}"' in ci
    for script in ("run.sh", "test.sh"):
        assert (ROOT / "scripts" / script).is_file()


def _cli_commands() -> set[str]:
    import argparse

    from evalcore.cli import build_parser
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return set(sub.choices)


def _documented_commands(body: str) -> set[str]:
    names = set()
    for cell in _table_first_cells(body):
        for code in re.findall(r"`([^`]+)`", cell):
            names.add(code.split()[0])
    return names


def test_readme_command_table_lists_every_subcommand():
    body = _section(README.read_text(encoding="utf-8"), "The command line")
    assert _documented_commands(body) == _cli_commands()


def test_cli_manual_lists_every_subcommand():
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    body = re.search(r"^## The subcommands\s*$(.*?)(?=^## |\Z)", text, re.M | re.S).group(1)
    assert _documented_commands(body) == _cli_commands()


def test_documented_lock_timeout_default_is_the_parsers():
    from evalcore.cli import build_parser
    default = build_parser().parse_args(["runs"]).lock_timeout
    readme, cli_md, store_md = (
        " ".join(path.read_text(encoding="utf-8").split())
        for path in (README, ROOT / "docs" / "cli.md", ROOT / "docs" / "store.md"))
    assert f"`--lock-timeout`, {default:g} s by default" in readme
    assert f"exit code 4 (default {default:g})" in cli_md
    assert f"`--lock-timeout` seconds (default **{default:g}**)" in store_md


def test_readme_format_table_matches_the_formats_manual():
    rows = _table_first_cells(_section(README.read_text(encoding="utf-8"), "What you can load"))
    formats = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    per_format = re.search(r"^## What is read, per format\s*$(.*?)(?=^## |\Z)", formats,
                           re.M | re.S).group(1)
    headings = re.findall(r"^### (.+)$", per_format, re.M)
    assert len(rows) == len(headings) == 7
    for row, heading in zip(rows, headings):
        # "lm-evaluation-harness results JSON" / "lighteval and Open LLM Leaderboard v1
        # results": the first two words name the same reader in both places.
        assert row.lower().split()[:2] == heading.lower().split()[:2], (row, heading)


def test_bench_readme_has_a_section_per_script():
    scripts = {p.name for p in (ROOT / "bench").glob("*.py") if not p.name.startswith("_")}
    text = BENCH_README.read_text(encoding="utf-8")
    sections = set(re.findall(r"^## (\S+\.py)", text, re.M))
    assert scripts <= sections, f"bench scripts without a section: {sorted(scripts - sections)}"


WORDS_OF_HISTORY = re.compile(r"\bissue \d+|\bthis session\b|\bthe lead\b|\bhelper\b", re.I)
PLACEHOLDER = "figures: to be filled by the lead"


@pytest.mark.parametrize("path", ALL_DOCS, ids=_rel)
def test_docs_say_what_is_not_who_or_when(path):
    bad = [line for line in path.read_text(encoding="utf-8").splitlines()
           if WORDS_OF_HISTORY.search(line) and line.strip() != PLACEHOLDER
           and "helper thread" not in line]
    assert not bad, f"{_rel(path)}: history words in the docs:\n" + "\n".join(bad)


def _wilson_table() -> list[tuple[int, float, float, float | None]]:
    """(n, p, product %, textbook % or None) for each cell of the exact Wilson coverage table
    in docs/methods.md."""
    text = (ROOT / "docs" / "methods.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines)
                 if line.startswith("| Wilson coverage (%), product (textbook)"))
    ps = [float(cell.replace("p =", "").strip()) for cell in lines[start].split("|")[2:-1]]
    cells = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        parts = [c.strip() for c in line.split("|")[1:-1]]
        n = int(parts[0].replace("n =", "").strip())
        for p, cell in zip(ps, parts[1:]):
            m = re.fullmatch(r"([\d.]+)(?: \(\**([\d.]+)\**\))?", cell)
            assert m, f"cell {cell!r} of n = {n}"
            cells.append((n, p, float(m.group(1)),
                          float(m.group(2)) if m.group(2) else None))
    return cells


def test_methods_wilson_coverage_table_is_what_the_code_computes():
    from evalcore.stats.coverage import proportion_coverage
    cells = _wilson_table()
    assert len(cells) == 49
    for n, p, product, textbook in cells:
        by_method = {m.method: m.coverage for m in proportion_coverage(n, p).methods}
        assert round(100 * by_method["wilson"], 1) == product, (n, p)
        shown = textbook if textbook is not None else product
        assert round(100 * by_method["wilson-textbook"], 1) == shown, (n, p)


def _demo_session() -> list[tuple[list[str], list[str]]]:
    """(argv, expected output lines) for the leaderboard, compare and plan commands of the
    demo session in docs/cli.md (the ingest output there is cut, so not compared)."""
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    block = re.search(r"^## A session on the bundled demo.*?```text\n(.*?)```", text,
                      re.M | re.S).group(1)
    steps, current = [], None
    for line in block.splitlines():
        if line.startswith("$ python -m evalcore "):
            current = (shlex.split(line[len("$ python -m evalcore "):].split("  #")[0]), [])
            steps.append(current)
        elif current is not None:
            current[1].append(line.rstrip())
    return [(argv, out) for argv, out in steps if argv[0] in ("leaderboard", "compare", "plan")]


def test_cli_manual_demo_session_is_the_real_output(tmp_path, capsys):
    from evalcore.cli import main
    store = ["--store", str(tmp_path / "store")]
    assert main(["ingest", str(ROOT / "data" / "demo"), *store]) == 0
    capsys.readouterr()
    steps = _demo_session()
    assert {argv[0] for argv, _ in steps} == {"leaderboard", "compare", "plan"}
    for argv, expected in steps:
        assert main([*argv, *store]) == 0, argv
        got = [line.rstrip() for line in capsys.readouterr().out.splitlines()]
        while expected and not expected[-1]:
            expected = expected[:-1]
        while got and not got[-1]:
            got = got[:-1]
        assert got == expected, f"docs/cli.md: the output of `{' '.join(argv)}` changed"
