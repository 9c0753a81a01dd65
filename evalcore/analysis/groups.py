"""Task groups as the harness forms them (lm_eval ``group_subtasks``, MMLU subjects, BBH ...).

A leaderboard of 100+ tasks is read by group: MMLU's 57 subjects under one ``mmlu`` row,
BBH's 23 under ``bbh``. Groups come from, in this order:

1. the harness: lm-evaluation-harness 0.4 results list each group's subtasks
   (``group_subtasks``; the lm_eval parser stores them in the group's task protocol as
   ``is_group`` / ``subtasks``). Nested groups (``mmlu`` -> ``mmlu_humanities`` -> subjects)
   are flattened to their leaf tasks under the outermost group.
2. task-name families of files that carry no group list (lm_eval 0.3, Open LLM
   Leaderboard exports, HELM): ``FAMILIES`` below, e.g. ``hendrycksTest-*`` is MMLU in
   lm_eval 0.3, ``leaderboard_bbh_*`` the Open LLM Leaderboard's BBH; HELM run names
   ``scenario:args`` group by scenario. A family forms a group only with 2+ members.

No statistics here: group aggregates are computed in ``analysis.leaderboard``.
"""

from __future__ import annotations

from typing import Iterable, Mapping

# (prefix, group name) for files that do not list their groups; the longest prefix wins.
FAMILIES: tuple[tuple[str, str], ...] = (
    ("hendrycksTest-", "mmlu (hendrycksTest)"),
    ("mmlu_", "mmlu"),
    ("bbh_", "bbh"),
    ("leaderboard_bbh_", "leaderboard_bbh"),
    ("leaderboard_math_", "leaderboard_math_hard"),
    ("leaderboard_musr_", "leaderboard_musr"),
    ("leaderboard_gpqa_", "leaderboard_gpqa"),
    ("leaderboard_mmlu_", "leaderboard_mmlu"),
    ("crows_pairs_english_", "crows_pairs_english"),
    ("crows_pairs_french_", "crows_pairs_french"),
    ("blimp_", "blimp"),
    ("arithmetic_", "arithmetic"),
    ("pile_", "pile"),
    ("wmt", "wmt"),
    ("agieval_", "agieval"),
    ("ceval-valid_", "ceval"),
    ("cmmlu_", "cmmlu"),
)


def leaves_of(group: str, children: Mapping[str, list[str]], depth: int = 0) -> list[str]:
    """The leaf tasks of ``group`` (nested groups expanded, in the order listed; nesting
    deeper than 20 levels is cut, so a cyclic declaration ends)."""
    out: list[str] = []
    for sub in children.get(group, []):
        if sub in children and depth < 20:
            out.extend(leaves_of(sub, children, depth + 1))
        else:
            out.append(sub)
    return list(dict.fromkeys(out))


def task_groups(tasks: Iterable[str],
                declared: Mapping[str, Iterable[str]] | None = None) -> dict[str, list[str]]:
    """Group name -> its tasks among ``tasks`` (every task in at most one group).

    declared : group -> subtasks as the harness listed them (may be nested). Groups whose
        tasks are not on the board, and groups with fewer than 2 of them, are dropped.
    """
    tasks = list(dict.fromkeys(str(t) for t in tasks))
    present = set(tasks)
    children = {str(g): [str(s) for s in subs] for g, subs in (declared or {}).items() if subs}
    nested = {s for subs in children.values() for s in subs}
    out: dict[str, list[str]] = {}
    taken: set[str] = set()
    for g in sorted(children):
        if g in nested:
            continue  # an inner group: its leaves go to the outermost group
        members = [t for t in leaves_of(g, children) if t in present and t not in taken]
        if len(members) >= 2:
            out[g] = members
            taken.update(members)
    # name families for the rest
    by_prefix = sorted(FAMILIES, key=lambda f: -len(f[0]))
    family: dict[str, list[str]] = {}
    for t in tasks:
        if t in taken:
            continue
        name = next((g for p, g in by_prefix if t.startswith(p)), None)
        if name is None and ":" in t:
            name = t.split(":", 1)[0]          # HELM: scenario:args
        if name is not None and name != t:
            family.setdefault(name, []).append(t)
    for g, members in family.items():
        if g in present:
            # the family's name is itself a task (lm_eval 0.3 crows_pairs_english is the
            # whole English set; its subsets are crows_pairs_english_*)
            g = f"{g}_*"
        if len(members) >= 2 and g not in out:
            out[g] = members
    return out


def average_weights(tasks: Iterable[str], groups: Mapping[str, Iterable[str]]) -> list[float]:
    """Weight of each task in a macro average where a task group counts once.

    Every task belongs to one unit: its group in ``groups`` (from ``task_groups``: each
    task in at most one group) or, ungrouped, itself. Each unit present among ``tasks``
    carries weight 1, shared equally by its tasks there: w_t = 1 / (tasks of t's unit in
    ``tasks``). So an average over MMLU's 57 subjects plus ARC and HellaSwag weighs MMLU
    (the mean of its subjects) as much as each of the other two, instead of 57 times as
    much. Order follows ``tasks``; without groups every weight is 1 (the plain mean).
    """
    tasks = [str(t) for t in tasks]
    unit_of = {str(t): str(g) for g, members in groups.items() for t in members}
    units = [("group", unit_of[t]) if t in unit_of else ("task", t) for t in tasks]
    size: dict[tuple[str, str], int] = {}
    for u in units:
        size[u] = size.get(u, 0) + 1
    return [1.0 / size[u] for u in units]
