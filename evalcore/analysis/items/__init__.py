"""Item quality: suspect labels, re-scoring with corrected labels, contamination overlap.

One module each (``suspects``, ``rescore``, ``overlap``) over the picks of ``picks``; this face
only re-exports.

Wires store queries to ``evalcore.stats.label_consensus`` (the rule and its chance
expectation), ``evalcore.stats.two_sample`` (clean vs overlapping items), the paired and
one-score intervals, and ``evalcore.items.ngram_index`` (the corpus index).

Where each model's pick comes from (``store.item_texts``): the stored ``response`` of an item's
first answer. For lm-evaluation-harness multiple-choice tasks that is the text of the option
with the highest log-likelihood (what ``acc`` scores; ``acc_norm`` may pick another option);
for inspect_ai multiple-choice logs the completion, read as its letter when it follows
inspect's ``ANSWER: X`` template and the target is a letter. The gold is the stored
``target`` (lm_eval: the gold option's text). Tidy tables carry no texts (their ``answer``
column numbers repeats), so they cannot feed the rule. One run per model takes part (the run
with the most items on the task; a rerun of the same model would otherwise vote twice).
"""
from evalcore.analysis.items.overlap import ContaminationReport, contamination
from evalcore.analysis.items.picks import (BIAS_NOTE, BOARD_COLUMNS, COMPARE_COLUMNS,
                                           ITEM_OVERLAP_COLUMNS, NOT_CAUSAL_NOTE, OVERLAP_COLUMNS,
                                           SUSPECT_COLUMNS, VARIANTS, PickMatrix, item_choices,
                                           pick_matrix)
from evalcore.analysis.items.rescore import RescoreReport, read_relabels, rescore
from evalcore.analysis.items.suspects import SuspectReport, suspect_labels

__all__ = [
    "BIAS_NOTE", "BOARD_COLUMNS", "COMPARE_COLUMNS", "ITEM_OVERLAP_COLUMNS", "NOT_CAUSAL_NOTE",
    "OVERLAP_COLUMNS", "SUSPECT_COLUMNS", "VARIANTS", "ContaminationReport", "PickMatrix",
    "RescoreReport", "SuspectReport", "contamination", "item_choices", "pick_matrix",
    "read_relabels", "rescore", "suspect_labels",
]
