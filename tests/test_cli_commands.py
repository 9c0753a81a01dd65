"""The shape of the CLI: one module per command, registered once, none importing back."""

from __future__ import annotations

import argparse
import ast
import pathlib

import pytest

from evalcore import cli

COMMANDS_DIR = pathlib.Path(cli.__file__).parent / "commands"


def _imports(path: pathlib.Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


@pytest.mark.parametrize("path", sorted(COMMANDS_DIR.glob("*.py")), ids=lambda p: p.name)
def test_no_command_imports_back_from_cli(path):
    assert not {n for n in _imports(path) if n == "evalcore.cli" or n.startswith("evalcore.cli.")}


def test_every_command_module_has_add_parser_and_run():
    for module in cli.COMMANDS:
        assert callable(module.add_parser), module.__name__
        runs = [getattr(module, n) for n in dir(module) if n == "run" or n.startswith("run_")]
        assert runs and all(callable(r) for r in runs), module.__name__


def test_every_subcommand_runs_a_command_module_function():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    modules = {m.__name__ for m in cli.COMMANDS}
    for name, p in sub.choices.items():
        func = p.get_default("func")
        assert func.__module__ in modules, name


def test_report_sections_are_the_reports():
    from evalcore.commands.report import REPORT_SECTIONS
    from evalcore.report.build import SECTIONS
    assert REPORT_SECTIONS == SECTIONS


def test_help_names_the_json_keys_section(capsys):
    for command in ("ingest", "runs", "leaderboard", "compare", "plan", "audit", "coverage",
                    "noise", "items", "maintain"):
        with pytest.raises(SystemExit):
            cli.main([command, "--help"])
        out = " ".join(capsys.readouterr().out.split())
        assert 'docs/cli.md, section "JSON keys"' in out, command
