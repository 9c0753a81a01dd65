"""Item-quality demo data, called from ``scripts/make_demo.py``.

Two things the Items page can find on first start:

- **Mislabelled items**: ``LABEL_ERRORS`` items of ``arc_easy_demo`` get a wrong gold label
  (the doc's ``answerKey`` and the target name a distractor) while a model that knows the item
  still picks the true answer (``Item.truth``). They are drawn among the easier items, so the
  strong models mostly agree on the true answer: the suspect-label rule should list them.
- **A corpus sample with planted overlaps**: ``data/demo_items/corpus.jsonl`` (JSONL, field
  ``text``): filler pages written from the demo's word lists plus pages that quote
  ``OVERLAPS`` arc_easy_demo questions with their answers and ``READING_OVERLAPS`` reading_demo
  articles (with one of their questions each). The quoted arc items are the *easiest* ones on
  purpose: overlapping items then score higher for every model although no model memorised
  anything, which is the selection effect the page warns about (clean items are not a random
  subset).

``data/demo_items/truth.json`` lists the planted items. Randomness comes from ``DemoRng``
(passed in), so the files are byte-identical run to run.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Callable, Sequence

LABEL_ERRORS = 6          # arc_easy_demo items with a wrong gold label
EASY_POOL = 40            # drawn among this many easiest arc items
OVERLAPS = 20             # arc_easy_demo items quoted in the corpus (the easiest ones not mislabelled)
READING_OVERLAPS = 3      # reading_demo articles quoted (each with one of its questions)
FILLER_PAGES = 400
FOLDER = "demo_items"


def plant_label_errors(items: Sequence[Any], rng: Any) -> tuple[list[Any], list[str]]:
    """A copy of ``items`` with LABEL_ERRORS golds moved to a distractor (``truth`` keeps the
    right option); returns (items, ids of the mislabelled docs)."""
    order = sorted(range(len(items)), key=lambda i: items[i].difficulty)
    chosen = sorted(rng.sample(order[:EASY_POOL], LABEL_ERRORS))
    out = list(items)
    ids = []
    for i in chosen:
        it = items[i]
        wrong = rng.choice([j for j in range(len(it.choices)) if j != it.gold])
        doc = dict(it.doc)
        doc["answerKey"] = doc["choices"]["label"][wrong]
        out[i] = dataclasses.replace(it, doc=doc, gold=wrong, target=wrong, truth=it.gold)
        ids.append(i)
    return out, ids


def _filler(rng: Any, words: Sequence[str], n_words: int) -> str:
    sentences, count = [], 0
    while count < n_words:
        k = rng.integer(6, 14)
        sentences.append(" ".join(rng.choice(words) for _ in range(k)).capitalize() + ".")
        count += k
    return " ".join(sentences)


def write_corpus(arc: Sequence[Any], reading: Sequence[Any], mislabelled: Sequence[int],
                 doc_to_text: Callable[[Any], str], reading_text: Callable[[Any], str],
                 words: Sequence[str], rng: Any, data_dir: Path) -> dict[str, Any]:
    """Write ``data_dir/demo_items/corpus.jsonl`` and ``truth.json``; return the truth."""
    folder = data_dir / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    skip = set(mislabelled)
    easiest = [i for i in sorted(range(len(arc)), key=lambda i: arc[i].difficulty) if i not in skip]
    quoted = sorted(easiest[:OVERLAPS])
    passages = sorted({it.doc["passage_id"] for it in reading})
    quoted_passages = sorted(rng.sample(passages, READING_OVERLAPS))
    pages = [{"text": _filler(rng, words, rng.integer(60, 220)), "source": "filler"}
             for _ in range(FILLER_PAGES)]
    planted = []
    for i in quoted:
        it = arc[i]
        page = (f"Quiz night notes. {_filler(rng, words, 30)} {doc_to_text(it)} "
                f"{it.choices[it.gold]}. {_filler(rng, words, 30)}")
        planted.append({"text": page, "source": f"arc_easy_demo/{i}"})
    for pid in quoted_passages:
        it = next(x for x in reading if x.doc["passage_id"] == pid)
        planted.append({"text": f"Reading practice. {reading_text(it)} {it.choices[it.gold]}.",
                        "source": f"reading_demo/{pid}"})
    for page in planted:
        pages.insert(rng.integer(0, len(pages)), page)
    with open(folder / "corpus.jsonl", "w", encoding="utf-8", newline="\n") as fh:
        for page in pages:
            fh.write(json.dumps(page, ensure_ascii=False, sort_keys=True) + "\n")
    reading_items = [str(k) for k, it in enumerate(reading) if it.doc["passage_id"] in quoted_passages]
    truth = {"label_errors": {"task": "arc_easy_demo", "item_ids": [str(i) for i in mislabelled],
                              "drawn_among_easiest": EASY_POOL},
             "overlaps": {"arc_easy_demo": [str(i) for i in quoted],
                          "reading_demo_passages": quoted_passages,
                          "reading_demo_items_in_quoted_passages": reading_items,
                          "note": "the quoted arc items are the easiest ones: a clean/overlap gap "
                                  "here is selection, not memorisation. arc_easy_demo questions "
                                  "are templated, so an item that differs from a quoted one only "
                                  "in the name shares 13-grams with it: more items overlap than "
                                  "were quoted, and every quoted one is among them"},
             "corpus": {"file": f"{FOLDER}/corpus.jsonl", "pages": len(pages), "field": "text"}}
    (folder / "truth.json").write_text(json.dumps(truth, indent=2, sort_keys=True) + "\n",
                                       encoding="utf-8")
    return truth


def readme_lines() -> list[str]:
    """The item-quality part of ``data/README.md``."""
    return [
        "## Item quality (the Items page)",
        "",
        f"- **Label errors**: {LABEL_ERRORS} `arc_easy_demo` items, drawn among the {EASY_POOL} "
        "easiest, carry a wrong gold label (`answerKey` and target name a distractor); a model "
        "that knows the item picks the true answer, so the strong models agree against the label. "
        "Their ids: `demo_items/truth.json` (`label_errors`). The suspect-label rule should list "
        "all of them.",
        f"- **Corpus sample**: `demo_items/corpus.jsonl` (field `text`): {FILLER_PAGES} filler pages "
        f"plus pages quoting the {OVERLAPS} easiest correctly labelled `arc_easy_demo` items with "
        f"their answers and {READING_OVERLAPS} `reading_demo` articles. Because the quoted items "
        "are the easiest, overlapping items score higher for every model although nothing was "
        "memorised: the clean/overlap gap is selection. Templated arc questions that differ only "
        "in the name share 13-grams with a quoted one and overlap too.",
    ]
