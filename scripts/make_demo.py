"""Generate the bundled evalbars demo: simulated eval logs in real harness formats.

Run ``python scripts/make_demo.py`` from the repository root. It (re)writes

- ``data/demo/lm_eval/<model_name_sanitized>/results_<ts>.json`` and
  ``samples_<task>_<ts>.jsonl``: lm-evaluation-harness 0.4.x native output
  (results JSON with ``name``/``alias``/``sample_len``, ``n-samples``, ``config``,
  ``task_hashes``; one JSONL line per (doc, filter) with ``doc_hash``/``prompt_hash``/
  ``target_hash`` = sha256 hex of the doc JSON, the first request's context and
  ``str(target)``, exactly as lm_eval computes them);
- ``data/demo/inspect/<created>_<task>_<task_id>.eval``: inspect_ai ``.eval`` zip logs
  (deflate; ``_journal/start.json``, ``_journal/summaries/<n>.json``, ``samples/<id>_epoch_<k>.json``,
  ``summaries.json``, ``reductions.json``, ``header.json``) with 5 epochs per sample;
- ``data/demo_truth.json``: the true simulated parameters and the expected scores;
- ``data/demo_items/``: a corpus sample with planted overlaps and the list of planted label
  errors (``scripts/demo_items.py``);
- ``data/README.md``: what the demo contains, with the true abilities.

The simulation is item response theory with a guessing floor (3PL with unit slope):

    P(correct | model m, item i) = c + (1 - c) * sigmoid(theta_{m,t} - b_i)

with c = 1 / (number of choices) for multiple-choice tasks and 0 otherwise, theta the
model's ability on task t (logit scale) and b_i the item difficulty. Difficulties are drawn
from a skewed mixture (``DIFFICULTY_MIX``: many easy items, a minority of very hard ones, a
middle band), shared by all models, so different models' per-item correctness correlates
(about 0.3-0.5) as in real evals. Difficulties of the reading task share a passage effect
(b_i = mu + u_passage + e_i, u_passage from the mixture) and those of the inspect task a
category effect, so clustered standard errors differ from iid ones there.

Determinism: all randomness flows from ``random.Random(seed).random()`` (whose sequence
Python guarantees across versions), through small helpers written here (no numpy
streams, no ``random.choice``/``gauss``, whose algorithms may change). Timestamps are
fixed, JSON is written with a fixed key order, zip members carry fixed dates and
permissions. Running the script twice gives byte-identical files.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import math
import random
import re
import shutil
import sys
import zipfile
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
import demo_items  # noqa: E402  (scripts/demo_items.py: item-quality demo, issue 13)

ROOT = Path(__file__).resolve().parents[1]
SEED = 20260301
LM_EVAL_VERSION = "0.4.13.dev0"
N_ARC, N_BOOLQ, N_GSM = 200, 120, 120          # items per lm_eval task
N_PASSAGES, PER_PASSAGE = 30, 5                # reading_demo: passages x questions
READING_MU, READING_WITHIN_SD = 0.0, 0.8   # difficulty = mu + u_p + e_i, u_p ~ DIFFICULTY_MIX
# Item difficulty (logit) is a skewed mixture, as in real benchmarks: many items are easy for
# every model, a sizeable minority are hard for every model (answered at about chance), and a
# middle band separates the models. The resulting spread (sd 2.4-3.7 on the logit scale) is
# what makes different models' per-item correctness correlate (0.3-0.5 on the 4-option tasks);
# a sd near 1 gives almost independent runs, which real evals are not.
#   task -> ((weight, mean, sd) of the easy, hard and middle components)
DIFFICULTY_MIX: dict[str, tuple[tuple[float, float, float], ...]] = {
    "arc_easy_demo": ((0.5, -4.5, 1.0), (0.25, 4.0, 1.0), (0.25, 0.0, 1.2)),
    "boolq_demo": ((0.45, -4.5, 1.0), (0.3, 4.0, 1.0), (0.25, 0.0, 1.2)),
    "gsm8k_demo": ((0.3, -3.0, 1.0), (0.2, 2.5, 1.0), (0.5, 0.0, 1.3)),
    "reading_demo": ((0.45, -3.8, 0.6), (0.25, 3.2, 0.6), (0.3, 0.0, 0.8)),   # the passage effect u_p
}
INSPECT_VERSION = "0.3.179"

# ---------------------------------------------------------------------------------------
# Deterministic randomness
# ---------------------------------------------------------------------------------------

SHORTUUID_ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


class DemoRng:
    """A seeded stream built only on ``random.Random.random()`` (stable across Pythons)."""

    def __init__(self, *key: object) -> None:
        digest = hashlib.sha256(":".join(str(k) for k in (SEED, *key)).encode()).hexdigest()
        self._r = random.Random(int(digest[:16], 16))

    def uniform(self, lo: float = 0.0, hi: float = 1.0) -> float:
        return lo + (hi - lo) * self._r.random()

    def integer(self, lo: int, hi: int) -> int:
        """Uniform integer in [lo, hi)."""
        return lo + min(int(self._r.random() * (hi - lo)), hi - lo - 1)

    def normal(self, mu: float = 0.0, sd: float = 1.0) -> float:
        """Box-Muller transform of two uniforms."""
        u1 = 1.0 - self._r.random()
        u2 = self._r.random()
        return mu + sd * math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)

    def bernoulli(self, p: float) -> bool:
        return self._r.random() < p

    def choice(self, seq: Sequence[Any]) -> Any:
        return seq[self.integer(0, len(seq))]

    def shuffled(self, seq: Sequence[Any]) -> list[Any]:
        out = list(seq)
        for i in range(len(out) - 1, 0, -1):
            j = self.integer(0, i + 1)
            out[i], out[j] = out[j], out[i]
        return out

    def sample(self, seq: Sequence[Any], k: int) -> list[Any]:
        return self.shuffled(seq)[:k]

    def shortuuid(self, n: int = 22) -> str:
        return "".join(self.choice(SHORTUUID_ALPHABET) for _ in range(n))

    def hexstr(self, n: int) -> str:
        return "".join(self.choice("0123456789abcdef") for _ in range(n))


def mixture_difficulty(rng: DemoRng, task: str, shift: float = 0.0) -> float:
    """Draw one item difficulty from the mixture ``DIFFICULTY_MIX[task]``, plus ``shift``.

    One uniform picks the component (by cumulative weight), one normal draw gives the value.
    """
    comps = DIFFICULTY_MIX[task]
    u, acc = rng.uniform(), 0.0
    for weight, mu, sd in comps:
        acc += weight
        if u < acc:
            return rng.normal(mu + shift, sd)
    _, mu, sd = comps[-1]
    return rng.normal(mu + shift, sd)


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def p_correct(theta: float, b: float, chance: float) -> float:
    """3PL-style IRT with unit slope: chance + (1 - chance) * sigmoid(theta - b)."""
    return chance + (1.0 - chance) * sigmoid(theta - b)


def bf16_round(x: float) -> float:
    """Round a log-likelihood to 1/16, the granularity bf16 sums show in real lm_eval logs."""
    return round(x * 16.0) / 16.0


def mean_stderr(values: Sequence[float]) -> float:
    """lm_eval's ``mean_stderr``: sample sd (ddof=1) / sqrt(n), in its exact arithmetic."""
    n = len(values)
    mu = sum(values) / n
    return math.sqrt(sum((x - mu) ** 2 for x in values) / (n - 1)) / math.sqrt(n)


# ---------------------------------------------------------------------------------------
# Models and true abilities
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class DemoModel:
    name: str
    params: int
    theta: float                                  # general ability (logit scale)
    task_shift: dict[str, float] = field(default_factory=dict)
    gsm_format: float = 0.5                       # P(writes "#### n") at 0-shot, no template


MODELS: tuple[DemoModel, ...] = (
    DemoModel("demo-org/atlas-13b", 13_015_864_320, 2.00, {"gsm8k_demo": 0.2}, gsm_format=0.78),
    DemoModel("demo-org/boreal-8b", 8_030_261_248, 0.60, {"reading_demo": 0.15}, gsm_format=0.64),
    DemoModel("demo-org/atlas-7b", 6_738_415_616, 0.50, {}, gsm_format=0.62),
    DemoModel("demo-org/cirrus-3b-instruct", 3_212_749_824, -0.80, {"gsm8k_demo": 0.55}, gsm_format=0.92),
    DemoModel("demo-org/cirrus-3b", 3_212_749_824, -0.90, {"gsm8k_demo": -0.2}, gsm_format=0.35),
)
MODEL_BY_NAME = {m.name: m for m in MODELS}

RERUN_MODEL = "demo-org/atlas-7b"          # two passes, same protocol, different seed/batching
PROTOCOL_MODEL = "demo-org/boreal-8b"      # a second run with few-shot + chat template
PROTOCOL_TASKS = ("arc_easy_demo", "gsm8k_demo")
PROTOCOL_SHOTS = 3                         # num_fewshot of the variant (the main runs are 0-shot)
RERUN_TASKS = ("arc_easy_demo", "gsm8k_demo")
PROTOCOL_SHIFT = {"arc_easy_demo": 0.25, "gsm8k_demo": 0.45}   # few-shot helps a little
PROTOCOL_GSM_FORMAT = 0.97                 # with worked examples the model copies "#### n"
RERUN_RESAMPLE = {"arc_easy_demo": 0.4, "gsm8k_demo": 0.4}   # share of items redrawn on rerun
ACC_SPLIT = 0.12       # arc_easy_demo: share of items where raw and length-normalised choices differ


def theta_for(model: DemoModel, task: str) -> float:
    return model.theta + model.task_shift.get(task, 0.0)


# ---------------------------------------------------------------------------------------
# Item banks (short synthetic texts; the inspect task uses real, checkable facts)
# ---------------------------------------------------------------------------------------

NAMES = ["Ava", "Ben", "Chloe", "Dev", "Elena", "Farid", "Grace", "Hiro", "Isla", "Jonah",
         "Kira", "Luis", "Maya", "Nils", "Omar", "Priya", "Quinn", "Rosa", "Sami", "Tara",
         "Umar", "Vera", "Wes", "Xena", "Yara", "Zane", "Amir", "Bea", "Cole", "Dina"]
SHOT_NAMES = ["Lena", "Marco", "Nora", "Otto", "Pia", "Raj", "Sofia", "Theo"]
PRONOUN = {n: ("she" if n in {"Ava", "Chloe", "Elena", "Grace", "Isla", "Kira", "Maya", "Priya",
                                "Rosa", "Tara", "Vera", "Xena", "Yara", "Bea", "Dina", "Lena",
                                "Nora", "Pia", "Sofia"} else "he")
           for n in NAMES + SHOT_NAMES}

SCIENCE_GROUPS = {
    "mammals": ["whale", "bat", "dolphin", "rabbit", "otter", "horse"],
    "birds": ["penguin", "ostrich", "robin", "owl", "eagle"],
    "reptiles": ["lizard", "snake", "tortoise", "crocodile"],
    "insects": ["ant", "beetle", "honeybee", "butterfly"],
    "fish": ["salmon", "shark", "tuna", "trout"],
    "metals": ["copper", "iron", "aluminum", "silver"],
    "planets": ["Mars", "Venus", "Jupiter", "Saturn"],
    "fossil fuels": ["coal", "petroleum", "natural gas"],
    "renewable energy sources": ["wind", "sunlight", "flowing water"],
    "simple machines": ["lever", "pulley", "inclined plane", "wheel and axle"],
}
MEASURES = [  # quantity, objects, correct unit
    ("mass", ["a rock", "an apple", "a textbook", "a bag of rice"], "grams"),
    ("length", ["a pencil", "a leaf", "a desk", "a piece of string"], "centimeters"),
    ("volume", ["the water in a glass", "the juice in a bottle", "the milk in a cup"], "milliliters"),
    ("temperature", ["a cup of tea", "a pond", "the air in a classroom"], "degrees Celsius"),
    ("time", ["a marble rolling down a ramp", "one swing of a pendulum", "a short sprint"], "seconds"),
    ("force", ["a spring pulling a cart", "a magnet pulling a paper clip"], "newtons"),
]
UNITS = [u for _, _, u in MEASURES]

TOWNS = ["Alder Falls", "Brookmere", "Cedar Hollow", "Dunmore", "Elmstead", "Fairhaven", "Glenrock",
         "Harrowgate", "Ironbridge", "Juniper Bay", "Kestrel Point", "Larkfield", "Millbrook",
         "Northwick", "Oakridge", "Pinecrest", "Quarry Hill", "Ravensford", "Stonebridge", "Thornbury"]
RIVERS = ["Avon", "Birch", "Clearwater", "Dale", "Eden", "Fern", "Silver", "Willow"]
PRODUCTS = ["cheese", "pottery", "apple cider", "wool blankets", "honey", "glassware", "bread", "furniture"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]

JOBS = ["nurse", "baker", "librarian", "mechanic", "teacher", "gardener", "pilot", "chef"]
TRANSPORT = ["bus", "train", "ferry", "tram", "bicycle"]
PLACES = ["hospital", "market", "harbor", "library", "workshop", "school"]
PETS = ["cat", "parrot", "rabbit", "dog", "tortoise", "hamster"]
PET_NAMES = ["Biscuit", "Pepper", "Mango", "Clover", "Ziggy", "Luna", "Olive", "Rocket"]
MONTHS = ["January", "March", "April", "June", "August", "October", "November", "December"]
CITIES = ["Lisbon", "Oslo", "Kyoto", "Toronto", "Nairobi", "Lima", "Dublin", "Hanoi"]
RELATIVES = ["grandmother", "cousin", "uncle", "older sister", "aunt", "best friend"]

GSM_ITEMS = ["stickers", "marbles", "pencils", "seashells", "trading cards", "buttons"]

# inspect task: real facts, one wrong answer a model plausibly gives for each.
TRIVIA: tuple[tuple[str, str, str, str], ...] = (
    ("geography", "What is the capital of France?", "Paris", "Lyon"),
    ("geography", "What is the capital of Japan?", "Tokyo", "Osaka"),
    ("geography", "What is the capital of Canada?", "Ottawa", "Toronto"),
    ("geography", "What is the capital of Australia?", "Canberra", "Sydney"),
    ("geography", "What is the capital of Kenya?", "Nairobi", "Mombasa"),
    ("geography", "What is the capital of Peru?", "Lima", "Cusco"),
    ("geography", "What is the capital of Norway?", "Oslo", "Bergen"),
    ("geography", "What is the capital of Egypt?", "Cairo", "Alexandria"),
    ("geography", "What is the capital of Vietnam?", "Hanoi", "Ho Chi Minh City"),
    ("geography", "What is the capital of Turkey?", "Ankara", "Istanbul"),
    ("chemistry", "What is the chemical symbol for gold?", "Au", "Ag"),
    ("chemistry", "What is the chemical symbol for silver?", "Ag", "Si"),
    ("chemistry", "What is the chemical symbol for sodium?", "Na", "So"),
    ("chemistry", "What is the chemical symbol for potassium?", "K", "P"),
    ("chemistry", "What is the chemical symbol for iron?", "Fe", "Ir"),
    ("chemistry", "What is the chemical symbol for lead?", "Pb", "Ld"),
    ("chemistry", "What is the chemical symbol for tin?", "Sn", "Ti"),
    ("chemistry", "What is the chemical symbol for mercury?", "Hg", "Me"),
    ("chemistry", "What is the chemical symbol for copper?", "Cu", "Co"),
    ("chemistry", "What is the chemical symbol for tungsten?", "W", "Tu"),
    ("arithmetic", "What is 17 multiplied by 23?", "391", "381"),
    ("arithmetic", "What is 48 multiplied by 12?", "576", "586"),
    ("arithmetic", "What is 35 multiplied by 29?", "1015", "1005"),
    ("arithmetic", "What is 64 multiplied by 15?", "960", "940"),
    ("arithmetic", "What is 73 multiplied by 11?", "803", "793"),
    ("arithmetic", "What is 26 multiplied by 34?", "884", "874"),
    ("arithmetic", "What is 91 multiplied by 19?", "1729", "1739"),
    ("arithmetic", "What is 56 multiplied by 47?", "2632", "2622"),
    ("arithmetic", "What is 38 multiplied by 43?", "1634", "1644"),
    ("arithmetic", "What is 82 multiplied by 67?", "5494", "5484"),
    ("literature", "Who wrote the novel 'Pride and Prejudice'?", "Jane Austen", "Charlotte Brontë"),
    ("literature", "Who wrote the novel '1984'?", "George Orwell", "Aldous Huxley"),
    ("literature", "Who wrote the novel 'Moby-Dick'?", "Herman Melville", "Nathaniel Hawthorne"),
    ("literature", "Who wrote the novel 'War and Peace'?", "Leo Tolstoy", "Fyodor Dostoevsky"),
    ("literature", "Who wrote the novel 'Don Quixote'?", "Miguel de Cervantes", "Lope de Vega"),
    ("literature", "Who wrote the play 'Hamlet'?", "William Shakespeare", "Christopher Marlowe"),
    ("literature", "Who wrote the novel 'Frankenstein'?", "Mary Shelley", "Bram Stoker"),
    ("literature", "Who wrote the novel 'One Hundred Years of Solitude'?", "Gabriel García Márquez",
     "Jorge Luis Borges"),
    ("literature", "Who wrote the novel 'Jane Eyre'?", "Charlotte Brontë", "Emily Brontë"),
    ("literature", "Who wrote the novel 'The Trial'?", "Franz Kafka", "Thomas Mann"),
    ("science", "Which planet is closest to the Sun?", "Mercury", "Venus"),
    ("science", "Which planet is the largest in the Solar System?", "Jupiter", "Saturn"),
    ("science", "Which gas do plants take in from the air for photosynthesis?", "carbon dioxide", "oxygen"),
    ("science", "At sea level, at how many degrees Celsius does water boil?", "100", "90"),
    ("science", "How many bones are in the adult human body?", "206", "212"),
    ("science", "What is the hardest naturally occurring mineral?", "diamond", "quartz"),
    ("science", "Which subatomic particle carries a negative electric charge?", "electron", "proton"),
    ("science", "What is the chemical formula of water?", "H2O", "HO2"),
    ("science", "Which planet is known as the Red Planet?", "Mars", "Jupiter"),
    ("science", "What is the largest organ of the human body?", "skin", "liver"),
    ("history", "In what year did World War II end?", "1945", "1944"),
    ("history", "In what year did the Berlin Wall fall?", "1989", "1991"),
    ("history", "In what year did Apollo 11 land on the Moon?", "1969", "1968"),
    ("history", "In what year did the French Revolution begin?", "1789", "1793"),
    ("history", "In what year did Christopher Columbus first reach the Americas?", "1492", "1498"),
    ("history", "In what year did World War I begin?", "1914", "1917"),
    ("history", "In what year did the Titanic sink?", "1912", "1911"),
    ("history", "In what year did the Soviet Union dissolve?", "1991", "1989"),
    ("history", "In what year did Nelson Mandela become President of South Africa?", "1994", "1990"),
    ("history", "In what year was the United States Declaration of Independence adopted?", "1776", "1783"),
)


@dataclass(frozen=True)
class Item:
    """One test item: the lm_eval doc plus what the simulation needs to know about it."""

    doc: dict[str, Any]
    question: str                    # the text the prompt shows (without few-shot context)
    choices: tuple[str, ...]         # answer options (empty for generation)
    gold: int                        # index of the right option (-1 for generation)
    difficulty: float
    target: Any                      # lm_eval target (int index or answer text)
    answer: str = ""                 # numeric answer for generation items
    wrong_answer: str = ""           # the wrong number a model produces for generation items
    solution: str = ""               # worked solution for generation items (few-shot text)
    truth: int = -1                  # a mislabelled item's right option (scripts/demo_items.py)


def _mc_options(rng: DemoRng, gold_text: str, pool: Sequence[str]) -> tuple[tuple[str, ...], int]:
    options = [gold_text] + rng.sample([p for p in pool if p != gold_text], 3)
    options = rng.shuffled(options)
    return tuple(options), options.index(gold_text)


def build_arc(n: int, rng: DemoRng, names: Sequence[str], prefix: str) -> list[Item]:
    """Science questions in the ARC-Easy doc shape (id, question, choices{text,label}, answerKey)."""
    candidates: list[tuple[str, str, tuple[str, ...], int]] = []
    groups = list(SCIENCE_GROUPS)
    for name in names:
        for group in groups:
            gold_text = rng.choice(SCIENCE_GROUPS[group])
            others = [x for g in groups if g != group for x in SCIENCE_GROUPS[g]]
            opts, gold = _mc_options(rng, gold_text, others)
            q = f"{name} sorts picture cards. Which card goes in the \"{group}\" pile?"
            candidates.append(("group", q, opts, gold))
        for quantity, objects, unit in MEASURES:
            for obj in objects:
                q = f"{name} measures the {quantity} of {obj}. Which unit fits best?"
                opts, gold = _mc_options(rng, unit, UNITS)
                candidates.append(("unit", q, opts, gold))
    picked = rng.sample(candidates, n)
    items = []
    for k, (kind, q, opts, gold) in enumerate(picked):
        labels = ["A", "B", "C", "D"]
        doc = {"id": f"{prefix}_{k + 1:04d}", "question": q,
               "choices": {"text": list(opts), "label": labels}, "answerKey": labels[gold]}
        b = mixture_difficulty(rng, "arc_easy_demo", -0.3 if kind == "unit" else 0.0)
        items.append(Item(doc=doc, question=q, choices=opts, gold=gold, difficulty=b, target=gold))
    return items


def build_boolq(n: int, rng: DemoRng) -> list[Item]:
    """Yes/no questions about a short passage, in the BoolQ doc shape (question, passage, idx, label)."""
    items = []
    for k in range(n):
        town = rng.choice(TOWNS)
        river = rng.choice(RIVERS)
        year = rng.integer(1650, 1950)
        pop = rng.integer(8, 95) * 100
        product = rng.choice(PRODUCTS)
        day = rng.choice(DAYS)
        passage = (f"{town} lies on the {river} River. Founded in {year}, it has about {pop} "
                   f"residents and is known for its {product}, sold at a market every {day}.")
        kind = rng.integer(0, 4)
        truth = rng.bernoulli(0.55)
        if kind == 0:
            other = product if truth else rng.choice([p for p in PRODUCTS if p != product])
            question = f"is {town.lower()} known for its {other}"
        elif kind == 1:
            year2 = year + rng.integer(5, 80) if truth else year - rng.integer(5, 80)
            question = f"was {town.lower()} founded before {year2}"
        elif kind == 2:
            pop2 = pop - rng.integer(1, 6) * 100 if truth else pop + rng.integer(1, 6) * 100
            question = f"does {town.lower()} have more than {pop2} residents"
        else:
            day2 = day if truth else rng.choice([d for d in DAYS if d != day])
            question = f"is the market in {town.lower()} held on {day2.lower()}"
        label = 1 if truth else 0
        doc = {"question": question, "passage": passage, "idx": k, "label": label}
        b = mixture_difficulty(rng, "boolq_demo", -0.3 + 0.2 * kind)
        items.append(Item(doc=doc, question=question, choices=("no", "yes"), gold=label,
                          difficulty=b, target=label))
    return items


def build_reading(n_passages: int, per_passage: int, rng: DemoRng) -> list[Item]:
    """RACE-style reading items; several questions share one passage (``doc["passage_id"]``)."""
    items = []
    for p in range(n_passages):
        name = rng.choice(NAMES)
        pron = PRONOUN[name]
        pos = "her" if pron == "she" else "his"
        job, transport, place = rng.choice(JOBS), rng.choice(TRANSPORT), rng.choice(PLACES)
        pet, pet_name, month = rng.choice(PETS), rng.choice(PET_NAMES), rng.choice(MONTHS)
        city, relative = rng.choice(CITIES), rng.choice(RELATIVES)
        article = (f"{name} is a {job} who takes the {transport} to the {place}. In {month} "
                   f"{pron} adopted a {pet}, {pet_name}, and next year {pron} will visit "
                   f"{pos} {relative} in {city}.")
        questions = [
            (f"What is {name}'s job?", job, JOBS),
            (f"How does {name} get to the {place}?", f"by {transport}", [f"by {t}" for t in TRANSPORT]),
            (f"What kind of animal is {pet_name}?", f"a {pet}", [f"a {x}" for x in PETS]),
            (f"When did {name} adopt {pet_name}?", f"in {month}", [f"in {m}" for m in MONTHS]),
            (f"Who will {name} visit in {city}?", f"{pos} {relative}", [f"{pos} {r}" for r in RELATIVES]),
            (f"Which city will {name} visit?", city, CITIES),
        ]
        passage_effect = mixture_difficulty(rng, "reading_demo")
        for q_idx, (question, gold_text, pool) in enumerate(rng.sample(questions, per_passage)):
            opts, gold = _mc_options(rng, gold_text, pool)
            labels = ["A", "B", "C", "D"]
            doc = {"passage_id": f"p{p + 1:03d}", "article": article, "question": question,
                   "options": list(opts), "answer": labels[gold],
                   "example_id": f"p{p + 1:03d}_q{q_idx + 1}"}
            b = READING_MU + passage_effect + rng.normal(0.0, READING_WITHIN_SD)
            items.append(Item(doc=doc, question=question, choices=opts, gold=gold, difficulty=b,
                              target=gold))
    return items


def _gsm_problem(rng: DemoRng, name: str) -> tuple[str, str, int, int]:
    """One word problem: (question, worked solution ending in '#### n', answer, a wrong answer)."""
    pron = PRONOUN[name]
    Pron = pron.capitalize()
    kind = rng.integer(0, 5)
    if kind == 0:
        thing = rng.choice(GSM_ITEMS)
        a, b, c = rng.integer(5, 40), rng.integer(2, 9), rng.integer(3, 12)
        ans, bc = a + b * c, b * c
        q = (f"{name} has {a} {thing}. {Pron} buys {b} packs with {c} {thing} in each pack. "
             f"How many {thing} does {name} have now?")
        sol = (f"{name} buys {b} * {c} = <<{b}*{c}={bc}>>{bc} {thing}.\n"
               f"Now {pron} has {a} + {bc} = <<{a}+{bc}={ans}>>{ans} {thing}.\n#### {ans}")
        wrong = a + b + c
    elif kind == 1:
        a = rng.integer(30, 90)
        b = rng.integer(5, a - 10)
        c = rng.integer(2, 8)
        ans = (a - b) * c
        q = (f"A bakery makes {a} loaves of bread each day and sells {b} of them. "
             f"How many loaves are left over after {c} days?")
        sol = (f"Each day {a} - {b} = <<{a}-{b}={a - b}>>{a - b} loaves are left.\n"
               f"After {c} days that is {a - b} * {c} = <<{a - b}*{c}={ans}>>{ans} loaves.\n#### {ans}")
        wrong = a * c - b
    elif kind == 2:
        a, b = rng.integer(9, 25), rng.integer(10, 40)
        c = rng.integer(20, a * b // 2)
        d = rng.integer(2, 6)
        ans = (a * b - c) * d
        q = (f"{name} earns ${a} per hour and works {b} hours a week. {Pron} spends ${c} a week on "
             f"food. How much money does {pron} save in {d} weeks?")
        sol = (f"{name} earns {a} * {b} = $<<{a}*{b}={a * b}>>{a * b} a week.\n"
               f"{Pron} saves {a * b} - {c} = $<<{a * b}-{c}={a * b - c}>>{a * b - c} a week.\n"
               f"In {d} weeks that is {a * b - c} * {d} = $<<{a * b - c}*{d}={ans}>>{ans}.\n#### {ans}")
        wrong = a * b * d - c
    elif kind == 3:
        a, b, c, d = rng.integer(30, 80), rng.integer(2, 6), rng.integer(20, 60), rng.integer(1, 5)
        ans = a * b + c * d
        q = (f"A train travels at {a} miles per hour for {b} hours and then at {c} miles per hour "
             f"for {d} hours. How many miles does it travel in total?")
        sol = (f"First it travels {a} * {b} = <<{a}*{b}={a * b}>>{a * b} miles.\n"
               f"Then it travels {c} * {d} = <<{c}*{d}={c * d}>>{c * d} miles.\n"
               f"In total {a * b} + {c * d} = <<{a * b}+{c * d}={ans}>>{ans} miles.\n#### {ans}")
        wrong = (a + c) * (b + d)
    else:
        a = rng.integer(10, 40)
        b = rng.integer(3 * a + 20, 3 * a + 200)
        ans = b - 3 * a
        q = (f"{name} reads {a} pages of a book on Monday and twice as many on Tuesday. The book "
             f"has {b} pages. How many pages are left to read?")
        sol = (f"On Tuesday {pron} reads 2 * {a} = <<2*{a}={2 * a}>>{2 * a} pages.\n"
               f"So far {pron} has read {a} + {2 * a} = <<{a}+{2 * a}={3 * a}>>{3 * a} pages.\n"
               f"There are {b} - {3 * a} = <<{b}-{3 * a}={ans}>>{ans} pages left.\n#### {ans}")
        wrong = b - 2 * a
    if wrong == ans:
        wrong = ans + 10
    return q, sol, ans, wrong


def build_gsm(n: int, rng: DemoRng, names: Sequence[str]) -> list[Item]:
    """Grade-school word problems in the GSM8K doc shape (question, answer)."""
    items = []
    for _ in range(n):
        q, sol, ans, wrong = _gsm_problem(rng, rng.choice(names))
        doc = {"question": q, "answer": sol}
        items.append(Item(doc=doc, question=q, choices=(), gold=-1, difficulty=mixture_difficulty(rng, "gsm8k_demo"),
                          target=sol, answer=str(ans), wrong_answer=str(wrong), solution=sol))
    return items


# ---------------------------------------------------------------------------------------
# lm_eval task definitions
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LmTask:
    name: str
    kind: str                        # "mc" (loglikelihood over choices) or "gen"
    metrics: tuple[str, ...]
    items: tuple[Item, ...]
    shots: tuple[Item, ...]          # few-shot pool ("training split")
    original: int                    # n-samples.original (size of the full split)

    @property
    def n_choices(self) -> int:
        return len(self.items[0].choices) if self.kind == "mc" else 0


def doc_to_text(task: str, item: Item) -> str:
    d = item.doc
    if task == "arc_easy_demo":
        return f"Question: {d['question']}\nAnswer:"
    if task == "boolq_demo":
        return f"{d['passage']}\nQuestion: {d['question']}?\nAnswer:"
    if task == "reading_demo":
        return f"Article: {d['article']}\n\nQuestion: {d['question']}\nAnswer:"
    return f"Question: {d['question']}\nAnswer:"


def doc_to_target_text(task: str, item: Item) -> str:
    return item.solution if task == "gsm8k_demo" else item.choices[item.gold]


GSM_GEN_KWARGS = {"until": ["Question:", "</s>", "<|im_end|>"], "do_sample": False, "temperature": 0.0}

CHAT_TEMPLATE = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
                 "message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}"
                 "{{ '<|im_start|>assistant\\n' }}{% endif %}")


def _task_config(name: str, n_shot: int, pretrained: str) -> dict[str, Any]:
    """The ``configs[task]`` entry as lm_eval 0.4.x writes it for a YAML task."""
    common_tail = {"metadata": {"version": 1.0, "pretrained": pretrained, "dtype": "bfloat16"}}
    if name == "arc_easy_demo":
        cfg = {"task": name, "tag": ["demo_science"], "dataset_path": "evalbars/demo_science",
               "dataset_name": "easy", "training_split": "train", "validation_split": "validation",
               "test_split": "test", "doc_to_text": "Question: {{question}}\nAnswer:",
               "doc_to_target": "{{choices.label.index(answerKey)}}", "unsafe_code": False,
               "doc_to_choice": "{{choices.text}}", "description": "", "target_delimiter": " ",
               "fewshot_delimiter": "\n\n", "num_fewshot": n_shot,
               "metric_list": [{"metric": "acc", "aggregation": "mean", "higher_is_better": True},
                               {"metric": "acc_norm", "aggregation": "mean", "higher_is_better": True}],
               "output_type": "multiple_choice", "repeats": 1, "should_decontaminate": True,
               "doc_to_decontamination_query": "Question: {{question}}\nAnswer:"}
    elif name == "boolq_demo":
        cfg = {"task": name, "tag": ["demo_reading"], "dataset_path": "evalbars/demo_boolq",
               "training_split": "train", "validation_split": "validation",
               "doc_to_text": "{{passage}}\nQuestion: {{question}}?\nAnswer:", "doc_to_target": "label",
               "unsafe_code": False, "doc_to_choice": ["no", "yes"], "description": "",
               "target_delimiter": " ", "fewshot_delimiter": "\n\n", "num_fewshot": n_shot,
               "metric_list": [{"metric": "acc"}], "output_type": "multiple_choice", "repeats": 1,
               "should_decontaminate": True, "doc_to_decontamination_query": "passage"}
    elif name == "reading_demo":
        cfg = {"task": name, "tag": ["demo_reading"], "dataset_path": "evalbars/demo_reading",
               "test_split": "test",
               "doc_to_text": "Article: {{article}}\n\nQuestion: {{question}}\nAnswer:",
               "doc_to_target": "{{['A', 'B', 'C', 'D'].index(answer)}}", "unsafe_code": False,
               "doc_to_choice": "{{options}}", "description": "", "target_delimiter": " ",
               "fewshot_delimiter": "\n\n", "num_fewshot": n_shot,
               "metric_list": [{"metric": "acc", "aggregation": "mean", "higher_is_better": True}],
               "output_type": "multiple_choice", "repeats": 1, "should_decontaminate": False}
    else:
        cfg = {"task": name, "tag": ["math_word_problems"], "dataset_path": "evalbars/demo_gsm",
               "dataset_name": "main", "training_split": "train", "test_split": "test",
               "fewshot_split": "train", "doc_to_text": "Question: {{question}}\nAnswer:",
               "doc_to_target": "{{answer}}", "unsafe_code": False, "description": "",
               "target_delimiter": " ", "fewshot_delimiter": "\n\n", "num_fewshot": n_shot,
               "metric_list": [{"metric": "exact_match", "aggregation": "mean", "higher_is_better": True,
                                "ignore_case": True, "ignore_punctuation": False,
                                "regexes_to_ignore": [",", "\\$", "(?s).*#### ", "\\.$"]}],
               "output_type": "generate_until", "generation_kwargs": dict(GSM_GEN_KWARGS),
               "repeats": 1,
               "filter_list": [
                   {"name": "strict-match", "filter": [
                       {"function": "regex", "regex_pattern": "#### (\\-?[0-9\\.\\,]+)"},
                       {"function": "take_first"}]},
                   {"name": "flexible-extract", "filter": [
                       {"function": "regex", "group_select": -1,
                        "regex_pattern": "(-?[$0-9.,]{2,})|(-?[0-9]+)"},
                       {"function": "take_first"}]}],
               "should_decontaminate": False}
    cfg.update(common_tail)
    return cfg


def build_tasks() -> dict[str, LmTask]:
    arc = build_arc(N_ARC, DemoRng("items", "arc"), NAMES, "DemoSci")
    arc, _ = demo_items.plant_label_errors(arc, DemoRng("items", "arc-label-errors"))
    arc_shots = build_arc(40, DemoRng("items", "arc-train"), SHOT_NAMES, "DemoSciTrain")
    boolq = build_boolq(N_BOOLQ, DemoRng("items", "boolq"))
    gsm = build_gsm(N_GSM, DemoRng("items", "gsm"), NAMES)
    gsm_shots = build_gsm(40, DemoRng("items", "gsm-train"), SHOT_NAMES)
    reading = build_reading(N_PASSAGES, PER_PASSAGE, DemoRng("items", "reading"))
    return {
        "arc_easy_demo": LmTask("arc_easy_demo", "mc", ("acc", "acc_norm"), tuple(arc), tuple(arc_shots), 2376),
        "boolq_demo": LmTask("boolq_demo", "mc", ("acc",), tuple(boolq), (), 3270),
        "gsm8k_demo": LmTask("gsm8k_demo", "gen", ("exact_match",), tuple(gsm), tuple(gsm_shots), 1319),
        "reading_demo": LmTask("reading_demo", "mc", ("acc",), tuple(reading), (), 4934),
    }


# ---------------------------------------------------------------------------------------
# lm_eval run simulation and writing
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LmRun:
    model: DemoModel
    timestamp: str                   # "2026-03-02T09-14-07.412305"
    tasks: tuple[str, ...]
    n_shot: int = 0
    chat_template: bool = False
    seed_offset: int = 0             # 0 for the first pass, 1 for the rerun
    batch_sizes: tuple[int, ...] = (64,)
    label: str = "main"              # "main", "rerun", "protocol"


def lm_runs() -> list[LmRun]:
    """The seven lm_eval invocations: one per model, a rerun, a protocol variant."""
    all_tasks = ("arc_easy_demo", "boolq_demo", "gsm8k_demo", "reading_demo")
    stamps = ["2026-03-02T09-14-07.412305", "2026-03-02T10-02-51.087113", "2026-03-02T10-47-33.550921",
              "2026-03-02T11-31-18.264470", "2026-03-02T12-05-42.918356"]
    runs = [LmRun(m, ts, all_tasks) for m, ts in zip(MODELS, stamps)]
    runs.append(LmRun(MODEL_BY_NAME[RERUN_MODEL], "2026-03-03T08-21-09.733208", RERUN_TASKS,
                      seed_offset=1, batch_sizes=(32,), label="rerun"))
    runs.append(LmRun(MODEL_BY_NAME[PROTOCOL_MODEL], "2026-03-03T14-40-26.301577", PROTOCOL_TASKS,
                      n_shot=PROTOCOL_SHOTS, chat_template=True, label="protocol"))
    return runs


def _fewshot_context(task: LmTask, item_index: int, run: LmRun) -> list[tuple[str, str]]:
    """(question text, answer text) pairs lm_eval's default sampler would draw for this doc."""
    if run.n_shot == 0:
        return []
    rng = DemoRng("fewshot", task.name, 1234, item_index)
    return [(doc_to_text(task.name, s), doc_to_target_text(task.name, s))
            for s in rng.sample(task.shots, run.n_shot)]


def build_context(task: LmTask, item_index: int, item: Item, run: LmRun) -> str:
    """The exact context string lm_eval sends (plain few-shot text or chat-formatted turns)."""
    shots = _fewshot_context(task, item_index, run)
    question = doc_to_text(task.name, item)
    if run.chat_template:
        turns = []
        for q, a in shots:   # fewshot_as_multiturn: one user/assistant pair per example
            turns.append(f"<|im_start|>user\n{q}<|im_end|>\n<|im_start|>assistant\n{a}<|im_end|>\n")
        turns.append(f"<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n")
        return "".join(turns)
    parts = [f"{q} {a}" for q, a in shots] + [question]
    return "\n\n".join(parts)


def _theta(run: LmRun, task: str) -> float:
    theta = theta_for(run.model, task)
    if run.label == "protocol":
        theta += PROTOCOL_SHIFT.get(task, 0.0)
    return theta


def simulate_outcomes(run: LmRun, task: LmTask) -> list[bool]:
    """Latent correctness per item. A rerun redraws a share of items from the same P(correct)."""
    chance = 1.0 / task.n_choices if task.kind == "mc" else 0.0
    theta = _theta(run, task.name)
    first_label = "protocol" if run.label == "protocol" else "main"
    rng = DemoRng("outcome", run.model.name, task.name, first_label)
    probs = [p_correct(theta, it.difficulty, chance) for it in task.items]
    outcomes = [rng.bernoulli(p) for p in probs]
    if run.seed_offset:
        rr = DemoRng("rerun", run.model.name, task.name, run.seed_offset)
        share = RERUN_RESAMPLE[task.name]
        outcomes = [rr.bernoulli(p) if rr.bernoulli(share) else o for o, p in zip(outcomes, probs)]
    return outcomes


def _fmt_ll(x: float) -> str:
    """lm_eval's JSONL writer stringifies resps: -9.8125 -> "-9.8125"."""
    return str(float(x))


def mc_loglikelihoods(task: LmTask, item: Item, correct: bool, rng: DemoRng) -> list[float]:
    """Per-choice log-likelihoods whose argmax encodes the simulated outcome.

    The simulated choice ``b`` (gold when ``correct``) is the one with the best
    length-normalised log-likelihood (what ``acc_norm`` scores; for acc-only tasks also the
    raw argmax). For tasks with ``acc_norm``, the raw argmax ``a`` (what ``acc`` scores) equals
    ``b`` on most items; on about ACC_SPLIT of them (the same items for every model) it is a
    shorter option, which is only possible when len(a) < len(b): then ll_a > ll_b while
    ll_a/len(a) < ll_b/len(b).
    The metrics written to the files are recomputed from the rounded values, so they always
    agree with ``resps``.
    """
    k = len(item.choices)
    right = item.gold if item.truth < 0 else item.truth   # what a model that knows picks
    b = right if correct else rng.choice([j for j in range(k) if j != right])
    lengths = [float(len(c)) for c in item.choices]
    rate_b = rng.uniform(0.3, 0.9)                     # nats per character of the chosen option
    a = b
    # whether raw and normalised choices can part is a property of the item (its option
    # lengths), shared by all models, so acc correlates between models as acc_norm does
    split = DemoRng("acc-split", task.name, item.doc.get("id", item.question)).bernoulli(ACC_SPLIT)
    if "acc_norm" in task.metrics and split:
        shorter = [j for j in range(k) if lengths[j] < lengths[b]]
        if shorter:
            a = rng.choice(shorter)
    lls = [0.0] * k
    lls[b] = -rate_b * lengths[b]
    if a != b:
        lls[a] = lls[b] + rng.uniform(0.25, 0.75) * rate_b * (lengths[b] - lengths[a])
    top_raw = max(lls[a], lls[b])
    top_norm = min(lls[a] / lengths[a], lls[b] / lengths[b])
    for j in range(k):
        if j in (a, b):
            continue
        lls[j] = min(top_raw - rng.uniform(0.3, 4.0), (top_norm - rng.uniform(0.05, 0.5)) * lengths[j])
    return [bf16_round(x) for x in lls]


def argmax_first(values: Sequence[float]) -> int:
    """numpy.argmax semantics: the first index of the maximum."""
    best = 0
    for j, v in enumerate(values):
        if v > values[best]:
            best = j
    return best


def mc_sample(task: LmTask, item: Item, run: LmRun, correct: bool, rng: DemoRng,
              context: str) -> tuple[dict[str, Any], dict[str, float]]:
    """The loglikelihood part of a multiple-choice JSONL line (stringified like lm_eval's writer)
    and the per-item metrics recomputed from it (acc: raw argmax; acc_norm: argmax of ll/len)."""
    lls = mc_loglikelihoods(task, item, correct, rng)
    greedy_pick = rng.bernoulli(0.15)
    delim = "" if run.chat_template else " "
    arguments = {f"gen_args_{j}": {"arg_0": context, "arg_1": f"{delim}{c}"}
                 for j, c in enumerate(item.choices)}
    top = argmax_first(lls)
    pairs = [[_fmt_ll(ll), str(bool(greedy_pick and j == top))] for j, ll in enumerate(lls)]
    metrics = {"acc": 1.0 if top == item.gold else 0.0}
    if "acc_norm" in task.metrics:
        lengths = [float(len(c)) for c in item.choices]
        metrics["acc_norm"] = 1.0 if argmax_first([ll / n for ll, n in zip(lls, lengths)]) == item.gold else 0.0
    sample = {"arguments": arguments, "resps": [[p] for p in pairs], "filtered_resps": pairs}
    return sample, metrics


def gsm_generation(item: Item, correct: bool, follows_format: bool, rng: DemoRng) -> str:
    """A model's raw generation for a word problem."""
    steps = [ln for ln in item.solution.split("\n") if not ln.startswith("####")]
    steps = [ln.split("<<")[0] + ln.split(">>")[-1] if "<<" in ln else ln for ln in steps]
    answer = item.answer if correct else item.wrong_answer
    if not correct:
        steps = steps[:-1] + [f"So the result is {answer}."]
    body = " " + " ".join(steps)
    if follows_format:
        return f"{body}\n#### {answer}\n\n"
    return f"{body} The answer is {answer}.\n\n" if rng.bernoulli(0.7) else f"{body}\n\n"


def gsm_filters(text: str) -> tuple[str, str]:
    """strict-match and flexible-extract results as the gsm8k filter_list computes them."""
    strict = re.findall(r"#### (\-?[0-9\.\,]+)", text)
    strict_value = strict[0] if strict else "[invalid]"
    flex_matches = re.findall(r"(-?[$0-9.,]{2,})|(-?[0-9]+)", text)
    if flex_matches:
        last = flex_matches[-1]
        flex_value = last[0] or last[1]
    else:
        flex_value = "[invalid]"
    return strict_value, flex_value


def gsm_exact_match(pred: str, item: Item) -> float:
    """exact_match with ignore_case and regexes_to_ignore [",", "$", "(?s).*#### ", "\\.$"]."""
    def norm(s: str) -> str:
        for rx in [",", "\\$", "(?s).*#### ", "\\.$"]:
            s = re.sub(rx, "", s)
        return s.lower()
    return 1.0 if norm(pred) == norm(item.target) else 0.0


def doc_hash(doc: dict[str, Any]) -> str:
    """lm_eval's doc_hash: sha256 of json.dumps(doc, indent=2, ensure_ascii=False)."""
    return sha256_hex(json.dumps(doc, indent=2, default=str, ensure_ascii=False))


ITEM_SCORES: dict[tuple[str, str, str, str], list[float]] = {}   # (model, label, task, metric)


def exact_mcnemar_p(b: int, c: int) -> float:
    """Exact two-sided McNemar p: min(1, 2 * BinomCDF(min(b, c); b + c, 1/2)), in exact integers."""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1))
    return min(1.0, 2.0 * tail / 2.0 ** n)


def pair_rows(first: tuple[str, str], second: tuple[str, str]) -> list[dict[str, Any]]:
    """Per (task, metric) paired summary of two simulated runs: means, b, c, exact McNemar p."""
    rows = []
    for (model, label, task, metric), xs in sorted(ITEM_SCORES.items()):
        if (model, label) != first:
            continue
        ys = ITEM_SCORES.get((second[0], second[1], task, metric))
        if ys is None:
            continue
        b = sum(1 for x, y in zip(xs, ys) if x == 1.0 and y == 0.0)
        c = sum(1 for x, y in zip(xs, ys) if x == 0.0 and y == 1.0)
        rows.append({"task": task, "metric": metric.removesuffix(",none"), "a": sum(xs) / len(xs), "b_mean": sum(ys) / len(ys),
                     "only_a": b, "only_b": c, "p": exact_mcnemar_p(b, c)})
    return rows


COMPARISONS = (   # (first run, second run, what the simulation built in)
    (("demo-org/atlas-13b", "main"), ("demo-org/cirrus-3b", "main"),
     "a large true gap on every task; clearly different."),
    (("demo-org/boreal-8b", "main"), ("demo-org/atlas-7b", "main"),
     "nearly equal; with a few hundred items the paired difference is not "
     "significant (no difference detected; the comparison page says what gap this design could "
     "have detected)."),
    (("demo-org/cirrus-3b-instruct", "main"), ("demo-org/cirrus-3b", "main"),
     "nearly equal on the multiple-choice tasks; on gsm8k_demo the instruct model is better, far "
     "more so on strict-match (it follows the answer format)."),
    (("demo-org/atlas-7b", "main"), ("demo-org/atlas-7b", "rerun"),
     "the same model and protocol twice: every difference is rerun noise."),
    (("demo-org/boreal-8b", "main"), ("demo-org/boreal-8b", "protocol"),
     "0-shot vs few-shot + chat template: prompt hashes differ on every item (not the same "
     "instrument); the protocol diff lists num_fewshot, chat_template, fewshot_as_multiturn."),
)


def write_lm_run(run: LmRun, tasks: dict[str, LmTask], out_dir: Path) -> dict[str, Any]:
    """Write one lm_eval invocation (results JSON + one samples JSONL per task)."""
    sanitized = run.model.name.replace("/", "__")
    folder = out_dir / "lm_eval" / sanitized
    folder.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {}
    task_hashes: dict[str, str] = {}
    observed: dict[str, dict[str, float]] = {}
    for tname in run.tasks:
        task = tasks[tname]
        outcomes = simulate_outcomes(run, task)
        # Per-item streams shared by both passes of a rerun: items whose latent outcome did not
        # change render identically; the protocol variant gets its own streams.
        render_label = "protocol" if run.label == "protocol" else "main"
        fmt_p = PROTOCOL_GSM_FORMAT if run.chat_template else run.model.gsm_format
        lines: list[dict[str, Any]] = []
        metric_values: dict[str, list[float]] = {}
        by_filter: dict[str, list[dict[str, Any]]] = {"strict-match": [], "flexible-extract": []}
        for idx, (item, correct) in enumerate(zip(task.items, outcomes)):
            rng = DemoRng("render", run.model.name, tname, render_label, idx, correct)
            context = build_context(task, idx, item, run)
            head = {"doc_id": idx, "doc": item.doc, "target": str(item.target)}
            hashes = {"doc_hash": doc_hash(item.doc), "prompt_hash": sha256_hex(context),
                      "target_hash": sha256_hex(str(item.target))}
            if task.kind == "mc":
                body, metrics = mc_sample(task, item, run, correct, rng, context)
                line = {**head, **body, "filter": "none", "metrics": list(task.metrics), **hashes, **metrics}
                lines.append(line)
                for k, v in metrics.items():
                    metric_values.setdefault(f"{k},none", []).append(v)
            else:
                follows = DemoRng("format", run.model.name, tname, render_label, idx).bernoulli(fmt_p)
                text = gsm_generation(item, correct, follows, rng)
                strict_v, flex_v = gsm_filters(text)
                args = {"gen_args_0": {"arg_0": context, "arg_1": dict(GSM_GEN_KWARGS)}}
                for filt, value in (("strict-match", strict_v), ("flexible-extract", flex_v)):
                    em = gsm_exact_match(value, item)
                    by_filter[filt].append({**head, "arguments": args, "resps": [[text]],
                                            "filtered_resps": [value], "filter": filt,
                                            "metrics": ["exact_match"], **hashes, "exact_match": em})
                    metric_values.setdefault(f"exact_match,{filt}", []).append(em)
        if task.kind == "gen":
            lines = by_filter["strict-match"] + by_filter["flexible-extract"]
        sample_file = folder / f"samples_{tname}_{run.timestamp}.jsonl"
        with sample_file.open("w", encoding="utf-8", newline="\n") as fh:
            for line in lines:
                fh.write(json.dumps(line, ensure_ascii=False) + "\n")
        task_hashes[tname] = sha256_hex("".join(s["doc_hash"] + s["prompt_hash"] + s["target_hash"]
                                                for s in lines))
        entry: dict[str, Any] = {"name": tname, "alias": tname, "sample_len": len(task.items)}
        for key, vals in metric_values.items():
            metric, filt = key.split(",")
            entry[key] = sum(vals) / len(vals)
            entry[f"{metric}_stderr,{filt}"] = mean_stderr(vals)
        results[tname] = entry
        observed[tname] = {k: sum(v) / len(v) for k, v in metric_values.items()}
        for k, v in metric_values.items():
            ITEM_SCORES[(run.model.name, run.label, tname, k)] = v
    _write_results_json(run, tasks, results, task_hashes, folder)
    return observed


def _write_results_json(run: LmRun, tasks: dict[str, LmTask], results: dict[str, Any],
                        task_hashes: dict[str, str], folder: Path) -> None:
    model = run.model
    ts = datetime.strptime(run.timestamp, "%Y-%m-%dT%H-%M-%S.%f").replace(tzinfo=timezone.utc)
    n_items = sum(len(tasks[t].items) for t in run.tasks)
    seeds = (0, 1234, 1234, 1234) if run.seed_offset == 0 else (1, 4321, 4321, 4321)
    sha_rng = DemoRng("model-sha", model.name)
    higher = {}
    for t in run.tasks:
        higher[t] = {m: True for m in tasks[t].metrics}
    doc = {
        "results": results,
        "group_subtasks": {t: [] for t in run.tasks},
        "configs": {t: _task_config(t, run.n_shot, model.name) for t in run.tasks},
        "versions": {t: 1.0 for t in run.tasks},
        "n-shot": {t: run.n_shot for t in run.tasks},
        "higher_is_better": higher,
        "n-samples": {t: {"original": tasks[t].original, "effective": len(tasks[t].items)}
                      for t in run.tasks},
        "config": {
            "model": "hf",
            "model_args": {"pretrained": model.name, "dtype": "bfloat16"},
            "model_num_parameters": model.params,
            "model_dtype": "torch.bfloat16",
            "model_revision": "main",
            "model_sha": sha_rng.hexstr(40),
            "batch_size": "auto",
            "batch_sizes": list(run.batch_sizes),
            "device": "cuda:0",
            "use_cache": None,
            "limit": None,
            "bootstrap_iters": 100000,
            "gen_kwargs": {},
            "random_seed": seeds[0],
            "numpy_seed": seeds[1],
            "torch_seed": seeds[2],
            "fewshot_seed": seeds[3],
        },
        "git_hash": "4c1e7d2",
        "date": ts.timestamp(),
        "pretty_env_info": ("PyTorch version: 2.9.1+cu128\nIs debug build: False\nCUDA used to build "
                            "PyTorch: 12.8\n\nOS: Ubuntu 24.04.3 LTS (x86_64)\nPython version: 3.12.11 "
                            "(64-bit runtime)\nIs CUDA available: True\nGPU models and configuration: "
                            "GPU 0: NVIDIA A100-SXM4-80GB\n\n(simulated environment: evalbars demo)"),
        "transformers_version": "4.57.3",
        "lm_eval_version": LM_EVAL_VERSION,
        "upper_git_hash": None,
        "tokenizer_pad_token": ["<|endoftext|>", "0"],
        "tokenizer_eos_token": ["<|im_end|>", "2"],
        "tokenizer_bos_token": [None, "None"],
        "eot_token_id": 2,
        "max_length": 4096,
        "task_hashes": task_hashes,
        "model_source": "hf",
        "model_name": model.name,
        "model_name_sanitized": model.name.replace("/", "__"),
        "system_instruction": None,
        "system_instruction_sha": None,
        "fewshot_as_multiturn": bool(run.chat_template),
        "chat_template": CHAT_TEMPLATE if run.chat_template else None,
        "chat_template_sha": sha256_hex(CHAT_TEMPLATE) if run.chat_template else None,
        "total_evaluation_time_seconds": str(round(40.0 + 0.9 * n_items * (1 + run.n_shot / 2) +
                                                   model.params / 1e8, 6)),
    }
    path = folder / f"results_{run.timestamp}.json"
    path.write_text(json.dumps(doc, indent=2, default=str, ensure_ascii=False), encoding="utf-8")


# ---------------------------------------------------------------------------------------
# inspect_ai .eval logs
# ---------------------------------------------------------------------------------------

INSPECT_TASK = "trivia_demo"
INSPECT_EPOCHS = 5
INSPECT_SYSTEM = "Answer the question with just the answer: no explanation, no full sentence."
CATEGORY_EFFECT = {"geography": -1.1, "chemistry": 0.2, "arithmetic": 0.9, "literature": -0.4,
                   "science": -0.9, "history": 0.3}
TRIVIA_WITHIN_SD = 0.9        # question-level difficulty sd around the category effect
INSPECT_THETA_SHIFT = -0.2     # short-answer recall is a little harder than the lm_eval tasks


@dataclass(frozen=True)
class TriviaItem:
    sample_id: int
    category: str
    question: str
    target: str
    wrong: str
    difficulty: float


def build_trivia() -> list[TriviaItem]:
    rng = DemoRng("items", "trivia")
    return [TriviaItem(k + 1, cat, q, t, w, CATEGORY_EFFECT[cat] + rng.normal(0.0, TRIVIA_WITHIN_SD))
            for k, (cat, q, t, w) in enumerate(TRIVIA)]


def _iso(dt: datetime, micro: bool = True) -> str:
    return dt.isoformat(timespec="microseconds" if micro else "seconds")


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, indent=2, ensure_ascii=False).encode("utf-8")


def _zip_write(zf: zipfile.ZipFile, name: str, data: bytes, when: datetime) -> None:
    info = zipfile.ZipInfo(name, date_time=when.timetuple()[:6])
    info.compress_type = zipfile.ZIP_DEFLATED
    info.create_system = 3
    info.external_attr = 0o600 << 16
    zf.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=6)


def write_inspect_log(model: DemoModel, index: int, items: list[TriviaItem], out_dir: Path
                      ) -> dict[str, float]:
    """One inspect_ai ``.eval`` log of ``trivia_demo`` (epochs=5, scorer ``match``)."""
    rng = DemoRng("inspect", model.name)
    created = datetime(2026, 3, 4, 9, 0, 0, tzinfo=timezone.utc) + timedelta(minutes=47 * index)
    task_id, run_id, eval_id = rng.shortuuid(), rng.shortuuid(), rng.shortuuid()
    short_model = model.name.split("/")[-1]
    model_id = f"hf/{model.name}"
    theta = model.theta + INSPECT_THETA_SHIFT
    eval_spec = {
        "eval_id": eval_id, "run_id": run_id, "created": _iso(created, micro=False),
        "task": INSPECT_TASK, "task_id": task_id, "task_version": 0,
        "task_file": "evals/trivia_demo.py", "task_display_name": INSPECT_TASK,
        "task_registry_name": INSPECT_TASK, "task_attribs": {}, "task_args": {}, "task_args_passed": {},
        "dataset": {"name": "trivia_demo", "location": "evals/trivia_demo.jsonl", "samples": len(items),
                    "sample_ids": [it.sample_id for it in items], "shuffled": False},
        "model": model_id, "model_generate_config": {"temperature": 0.7, "max_tokens": 32},
        "model_args": {}, "model_roles": {},
        "config": {"epochs": INSPECT_EPOCHS, "epochs_reducer": ["mean"], "fail_on_error": True,
                   "continue_on_fail": False, "sandbox_cleanup": True, "log_samples": True,
                   "log_realtime": True, "log_images": True, "log_shared": 0, "score_display": True},
        "revision": {"type": "git", "origin": "https://github.com/evalbars/demo-evals.git",
                     "commit": "9f3b2a1", "dirty": False},
        "packages": {"inspect_ai": INSPECT_VERSION},
        "scorers": [{"name": "match", "options": {},
                     "metrics": [{"name": "inspect_ai/accuracy", "options": {}},
                                 {"name": "inspect_ai/stderr", "options": {}}],
                     "metadata": {}}],
    }
    plan = {"name": "plan",
            "steps": [{"solver": "system_message", "params": {"template": INSPECT_SYSTEM},
                       "params_passed": {"template": INSPECT_SYSTEM}},
                      {"solver": "generate", "params": {}, "params_passed": {}}],
            "config": {"temperature": 0.7, "max_tokens": 32}}

    # Simulate: every epoch is an independent draw at the item's P(correct).
    outs = []
    for it in items:
        p = p_correct(theta, it.difficulty, 0.0)
        for epoch in range(1, INSPECT_EPOCHS + 1):
            outs.append((it, epoch, rng.bernoulli(p)))
    order = rng.shuffled(range(len(outs)))            # completion order (concurrent samples)

    buf = io.BytesIO()
    summaries: list[dict[str, Any]] = []
    usage_total = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    clock = created + timedelta(seconds=1)
    with zipfile.ZipFile(buf, "w") as zf:
        _zip_write(zf, "_journal/start.json", _dumps({"version": 2, "eval": eval_spec, "plan": plan}),
                   created)
        chunk: list[dict[str, Any]] = []
        chunk_no = 0
        for pos in order:
            it, epoch, correct = outs[pos]
            answer = it.target if correct else it.wrong
            started = clock
            dur = round(rng.uniform(0.25, 1.9), 3)
            clock = clock + timedelta(seconds=0.37)
            completed_at = started + timedelta(seconds=dur)
            n_in = 38 + len(it.question) // 4
            n_out = 2 + len(answer) // 4
            usage = {"input_tokens": n_in, "output_tokens": n_out, "total_tokens": n_in + n_out}
            for k in usage_total:
                usage_total[k] += usage[k]
            score = {"value": "C" if correct else "I", "answer": answer, "explanation": answer,
                     "history": []}
            msg_ids = [rng.shortuuid() for _ in range(3)]
            assistant = {"id": msg_ids[2], "content": answer, "source": "generate", "role": "assistant",
                         "model": short_model}
            output = {"model": short_model,
                      "choices": [{"message": assistant, "stop_reason": "stop"}],
                      "completion": answer, "usage": usage, "time": dur}
            span = rng.hexstr(32)
            sample = {
                "id": it.sample_id, "epoch": epoch, "input": it.question, "target": it.target,
                "messages": [
                    {"id": msg_ids[0], "content": INSPECT_SYSTEM, "role": "system"},
                    {"id": msg_ids[1], "content": it.question, "source": "input", "role": "user"},
                    assistant],
                "output": output,
                "scores": {"match": score},
                "metadata": {"category": it.category},
                "store": {},
                "events": [
                    {"uuid": rng.shortuuid(), "span_id": span, "timestamp": _iso(started),
                     "working_start": 0.0, "event": "sample_init",
                     "sample": {"input": it.question, "target": it.target, "id": it.sample_id,
                                "metadata": {"category": it.category}}},
                    {"uuid": rng.shortuuid(), "span_id": span,
                     "timestamp": _iso(started + timedelta(seconds=dur * 0.9)),
                     "working_start": round(dur * 0.9, 6), "event": "model", "model": model_id,
                     "input": sample_messages_ref(msg_ids, it.question), "tools": [],
                     "tool_choice": "none", "config": {"temperature": 0.7, "max_tokens": 32},
                     "output": output},
                    {"uuid": rng.shortuuid(), "span_id": span, "timestamp": _iso(completed_at),
                     "working_start": dur, "event": "score", "score": score, "target": it.target,
                     "intermediate": False}],
                "model_usage": {model_id: usage},
                "started_at": _iso(started), "completed_at": _iso(completed_at),
                "total_time": dur, "working_time": round(dur - 0.002, 3),
                "uuid": rng.shortuuid(), "error_retries": [], "attachments": {},
            }
            _zip_write(zf, f"samples/{it.sample_id}_epoch_{epoch}.json", _dumps(sample), completed_at)
            summary = {"id": it.sample_id, "epoch": epoch, "input": it.question, "target": it.target,
                       "metadata": {"category": it.category}, "scores": {"match": score},
                       "model_usage": {model_id: usage}, "started_at": _iso(started),
                       "completed_at": _iso(completed_at), "total_time": dur,
                       "working_time": round(dur - 0.002, 3), "uuid": sample["uuid"], "retries": 0,
                       "completed": True, "message_count": 3}
            chunk.append(summary)
            summaries.append(summary)
            if len(chunk) == 100:
                chunk_no += 1
                _zip_write(zf, f"_journal/summaries/{chunk_no}.json", _dumps(chunk), completed_at)
                chunk = []
        end = clock + timedelta(seconds=2)
        if chunk:
            chunk_no += 1
            _zip_write(zf, f"_journal/summaries/{chunk_no}.json", _dumps(chunk), end)
        _zip_write(zf, "summaries.json", _dumps(summaries), end)

        # mean reducer over epochs (C -> 1.0, I -> 0); accuracy and stderr over reduced values
        per_item: dict[int, list[float]] = {}
        for it, _, correct in outs:
            per_item.setdefault(it.sample_id, []).append(1.0 if correct else 0.0)
        reduced = [{"value": sum(v) / len(v), "sample_id": sid} for sid, v in per_item.items()]
        _zip_write(zf, "reductions.json", _dumps([{"scorer": "match", "samples": reduced}]), end)
        values = [r["value"] for r in reduced]
        accuracy = sum(values) / len(values)
        header = {
            "version": 2, "status": "success", "eval": eval_spec, "plan": plan,
            "results": {"total_samples": len(outs), "completed_samples": len(outs),
                        "scores": [{"name": "match", "scorer": "match", "scored_samples": len(items),
                                    "unscored_samples": 0, "params": {},
                                    "metrics": {"accuracy": {"name": "accuracy", "value": accuracy,
                                                             "params": {}},
                                                "stderr": {"name": "stderr",
                                                           "value": mean_stderr(values), "params": {}}}}]},
            "stats": {"started_at": _iso(created + timedelta(seconds=1), micro=False),
                      "completed_at": _iso(end, micro=False),
                      "model_usage": {model_id: usage_total}},
            "invalidated": False,
        }
        _zip_write(zf, "header.json", _dumps(header), end)
    stamp = created.strftime("%Y-%m-%dT%H-%M-%S+00-00")
    folder = out_dir / "inspect"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{stamp}_{INSPECT_TASK.replace('_', '-')}_{task_id}.eval").write_bytes(buf.getvalue())
    per_answer = [1.0 if c else 0.0 for _, _, c in outs]
    return {"accuracy": accuracy, "per_answer_mean": sum(per_answer) / len(per_answer)}


def sample_messages_ref(msg_ids: list[str], question: str) -> list[dict[str, Any]]:
    """The model event's input messages (system prompt + user question)."""
    return [{"id": msg_ids[0], "content": INSPECT_SYSTEM, "role": "system"},
            {"id": msg_ids[1], "content": question, "source": "input", "role": "user"}]


# ---------------------------------------------------------------------------------------
# Truth table and README
# ---------------------------------------------------------------------------------------

def expected_scores(tasks: dict[str, LmTask], trivia: list[TriviaItem]) -> dict[str, Any]:
    """Expected accuracy of each model on each task's item set (mean of P(correct) over items)."""
    out: dict[str, Any] = {}
    for m in MODELS:
        row = {}
        for t in tasks.values():
            chance = 1.0 / t.n_choices if t.kind == "mc" else 0.0
            th = theta_for(m, t.name)
            row[t.name] = round(sum(p_correct(th, it.difficulty, chance) for it in t.items) / len(t.items), 6)
        th = m.theta + INSPECT_THETA_SHIFT
        # rounded so that last-ulp differences between platforms' exp/log cannot change the file
        row[INSPECT_TASK] = round(sum(p_correct(th, it.difficulty, 0.0) for it in trivia) / len(trivia), 6)
        out[m.name] = row
    return out


def _sd(xs: Sequence[float]) -> float:
    """Population sd of the drawn difficulties (what the README reports)."""
    mu = sum(xs) / len(xs)
    return math.sqrt(sum((x - mu) ** 2 for x in xs) / len(xs))


def write_truth(tasks: dict[str, LmTask], trivia: list[TriviaItem], observed: dict[str, Any],
                data_dir: Path) -> dict[str, Any]:
    truth = {
        "seed": SEED,
        "model": "P(correct) = chance + (1 - chance) * sigmoid(theta - difficulty)",
        "models": {m.name: {"theta": m.theta, "task_shift": m.task_shift,
                            "gsm8k_format_compliance": m.gsm_format} for m in MODELS},
        "chance": {t.name: (1.0 / t.n_choices if t.kind == "mc" else 0.0) for t in tasks.values()}
        | {INSPECT_TASK: 0.0},
        "items": {t.name: len(t.items) for t in tasks.values()} | {INSPECT_TASK: len(trivia)},
        "inspect": {"task": INSPECT_TASK, "epochs": INSPECT_EPOCHS, "theta_shift": INSPECT_THETA_SHIFT,
                    "category_effect": CATEGORY_EFFECT},
        "reading_demo": {"passages": N_PASSAGES, "questions_per_passage": PER_PASSAGE,
                         "difficulty_mean": READING_MU,
                         "passage_effect_mixture": DIFFICULTY_MIX["reading_demo"],
                         "within_passage_sd": READING_WITHIN_SD, "cluster_key": "doc.passage_id"},
        "rerun": {"model": RERUN_MODEL, "resample_share": RERUN_RESAMPLE},
        "protocol_variant": {"model": PROTOCOL_MODEL, "tasks": list(PROTOCOL_TASKS), "num_fewshot": PROTOCOL_SHOTS,
                             "apply_chat_template": True, "theta_shift": PROTOCOL_SHIFT,
                             "gsm8k_format_compliance": PROTOCOL_GSM_FORMAT},
        "difficulty_mixture": {t: [list(c) for c in comps] for t, comps in DIFFICULTY_MIX.items()},
        "difficulty_sd": {t.name: round(_sd([it.difficulty for it in t.items]), 6) for t in tasks.values()},
        "expected_accuracy": expected_scores(tasks, trivia),
        "observed": observed,
    }
    (data_dir / "demo_truth.json").write_text(json.dumps(truth, indent=2, sort_keys=True) + "\n",
                                              encoding="utf-8")
    return truth


def _pearson(xs: Sequence[float], ys: Sequence[float]) -> float:
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else float("nan")


def correlation_rows() -> list[str]:
    """README rows: between-model per-item correlations of the main runs, per task and metric."""
    rows = []
    keys = sorted({(t, k) for (_, label, t, k) in ITEM_SCORES if label == "main"})
    for task, metric in keys:
        vecs = [ITEM_SCORES[(m.name, "main", task, metric)] for m in MODELS]
        rs = [_pearson(vecs[i], vecs[j]) for i in range(len(vecs)) for j in range(i + 1, len(vecs))]
        rows.append(f"| `{task}` | `{metric.removesuffix(',none')}` | {min(rs):.2f} | "
                    f"{sum(rs) / len(rs):.2f} | {max(rs):.2f} |")
    return rows


def write_readme(truth: dict[str, Any], data_dir: Path) -> None:
    exp = truth["expected_accuracy"]
    obs = truth["observed"]
    task_names = ["arc_easy_demo", "boolq_demo", "gsm8k_demo", "reading_demo", INSPECT_TASK]
    difficulty_rows = []
    for t, comps in DIFFICULTY_MIX.items():
        cells = [f"{w:.2f}, {mu:+.1f}, {sd:.1f}" for w, mu, sd in comps]
        sd_total = truth["difficulty_sd"][t]
        label = f"`{t}`" + (" (passage effect)" if t == "reading_demo" else "")
        difficulty_rows.append(f"| {label} | " + " | ".join(cells) + f" | {sd_total:.2f} |")
    lines = [
        "# The bundled demo",
        "",
        "`data/demo/` holds **simulated** evaluation logs written in the real formats of",
        "lm-evaluation-harness (0.4.x results JSON + `samples_<task>_<ts>.jsonl`) and inspect_ai",
        "(`.eval` zip logs), so the demo goes through exactly the same ingest path as your own files.",
        "Nothing in it is a real model or a real benchmark result: the models (`demo-org/...`) and the",
        "`*_demo` tasks are invented, the texts are short synthetic questions (the inspect task",
        "uses real, checkable trivia facts), and every score is drawn from a known model.",
        "",
        "Regenerate it (byte-identical; `tests/test_demo.py` checks this):",
        "",
        "```",
        "python scripts/make_demo.py",
        "```",
        "",
        "## Layout",
        "",
        "```",
        "data/demo/lm_eval/<model_name_sanitized>/results_<ts>.json",
        "data/demo/lm_eval/<model_name_sanitized>/samples_<task>_<ts>.jsonl",
        "data/demo/inspect/<created>_trivia-demo_<task_id>.eval",
        "data/demo_truth.json   # the simulation's true parameters and expected scores",
        "```",
        "",
        "Ingest `data/demo/` (not `data/`): the truth file and this README are not harness output.",
        "",
        "## What is simulated",
        "",
        "Each answer is correct with probability (item response theory with a guessing floor)",
        "",
        "    P(correct) = chance + (1 - chance) * sigmoid(theta_model,task - difficulty_item)",
        "",
        "with chance = 1/(number of options) for multiple-choice tasks, 0 for generation and",
        "short-answer tasks. Item difficulties are drawn once and shared by all models, so runs",
        "are correlated item by item (which is why paired comparisons pay off). As in real",
        "benchmarks the difficulties are spread widely: a skewed mixture of many easy items",
        "(nearly every model right), a minority of very hard ones (every model near chance) and a",
        "middle band that separates the models (weight, mean, sd on the logit scale):",
        "",
        "| task | easy | hard | middle | sd of difficulty |",
        "|---|---|---|---|---:|",
        *difficulty_rows,
        "",
        "Correlation of per-item correctness between two models (Pearson, main runs), min / mean / max",
        "over the 10 model pairs:",
        "",
        "| task | metric | min | mean | max |",
        "|---|---|---:|---:|---:|",
        *correlation_rows(),
        "",
        "| task | harness | items | kind | metrics | chance |",
        "|---|---|---:|---|---|---:|",
        f"| `arc_easy_demo` | lm_eval | {N_ARC} | 4-option MC (loglikelihood) | `acc`, `acc_norm` | 0.25 |",
        f"| `boolq_demo` | lm_eval | {N_BOOLQ} | yes/no about a passage | `acc` | 0.50 |",
        f"| `gsm8k_demo` | lm_eval | {N_GSM} | generation, two filters | `exact_match,strict-match`, "
        "`exact_match,flexible-extract` | 0 |",
        f"| `reading_demo` | lm_eval | {N_PASSAGES * PER_PASSAGE} = {N_PASSAGES} passages x {PER_PASSAGE} "
        "| 4-option MC | `acc` | 0.25 |",
        f"| `{INSPECT_TASK}` | inspect_ai | 60 x 5 epochs | short answer, scorer `match` (C/I) | "
        "`accuracy` | 0 |",
        "",
        "- **Clusters.** `reading_demo` items share passages: `doc[\"passage_id\"]`",
        f"  (`p001`..`p{N_PASSAGES:03d}`) is the cluster key; a passage effect drawn from the",
        f"  mixture above (within-passage sd {READING_WITHIN_SD}) makes clustered SEs wider than iid ones",
        "  (easy passages, hard passages).",
        f"  `{INSPECT_TASK}` samples carry `metadata.category` (6 categories of 10 questions) with",
        "  category effects on difficulty.",
        f"- **Several answers per item.** `{INSPECT_TASK}` ran with `epochs=5` at temperature 0.7;",
        "  each epoch is an independent draw at the item's P(correct). `reductions.json` holds the",
        "  per-sample means (inspect's `mean` reducer); the header's `accuracy`/`stderr` are computed",
        "  over those reduced values, as inspect does.",
        f"- **Reruns.** `{RERUN_MODEL}` was run a second time on `arc_easy_demo` and `gsm8k_demo` with",
        "  the same protocol (other seeds and batch size). Prompts and hashes are identical; a share",
        f"  of items ({RERUN_RESAMPLE['arc_easy_demo']:.0%} on arc, {RERUN_RESAMPLE['gsm8k_demo']:.0%} on gsm8k) "
        "is redrawn at the same P(correct), so roughly 5-10% of",
        "  items flip.",
        f"- **Protocol change.** `{PROTOCOL_MODEL}` was also run on `arc_easy_demo` and `gsm8k_demo`",
        f"  with `num_fewshot={PROTOCOL_SHOTS}` and a chat template (`fewshot_as_multiturn`): same docs and",
        "  `doc_hash`, different `prompt_hash` and config. Its true ability is higher there",
        f"  (+{PROTOCOL_SHIFT['arc_easy_demo']} and +{PROTOCOL_SHIFT['gsm8k_demo']} logit) and it",
        "  follows the `#### n` answer format far more often, so strict-match rises most. The",
        "  comparison page should warn that these two runs did not use the same instrument.",
        "- **Metric variants.** `acc` vs `acc_norm` on `arc_easy_demo` (length-normalised choice),",
        "  strict-match vs flexible-extract on `gsm8k_demo` (flexible rescues answers given without",
        "  `#### n`; how often a model uses the format is a per-model setting below).",
        "",
        "## True abilities",
        "",
        "theta on the logit scale (task shifts added where listed), format compliance = probability",
        "of ending a `gsm8k_demo` answer with `#### n` at 0-shot.",
        "",
        "| model | theta | task shifts | gsm8k format compliance |",
        "|---|---:|---|---:|",
    ]
    for m in MODELS:
        shifts = ", ".join(f"{k} {v:+.2f}" for k, v in sorted(m.task_shift.items())) or "none"
        lines.append(f"| `{m.name}` | {m.theta:.2f} | {shifts} | {m.gsm_format:.2f} |")
    lines += [
        "",
        f"For `{INSPECT_TASK}` every model's theta is shifted by {INSPECT_THETA_SHIFT:+.1f}.",
        "",
        "## Expected vs observed scores",
        "",
        "Expected = mean over this task's items of P(correct) (for `gsm8k_demo` that is the chance of",
        "a right answer, i.e. flexible-extract; strict-match is lower by the format compliance).",
        "Observed = what the demo files contain (`acc_norm` for `arc_easy_demo`, whose simulated",
        "choice is the length-normalised one, `acc` for the other multiple-choice tasks,",
        "`exact_match,flexible-extract`, inspect `accuracy` over epoch means).",
        "",
        "| model | " + " | ".join(f"`{t}` exp / obs" for t in task_names) + " |",
        "|---|" + "---:|" * len(task_names),
    ]
    for m in MODELS:
        cells = []
        for t in task_names:
            key = {"gsm8k_demo": "exact_match,flexible-extract", INSPECT_TASK: "accuracy",
                   "arc_easy_demo": "acc_norm,none"}.get(t, "acc,none")
            o = obs["lm_eval"][m.name]["main"][t][key] if t != INSPECT_TASK else obs["inspect"][m.name][key]
            cells.append(f"{exp[m.name][t]:.3f} / {o:.3f}")
        lines.append(f"| `{m.name}` | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## What the dashboard should conclude",
        "",
        "Paired comparisons built into the simulation, with what the files actually show: A and B",
        "are the two runs' scores, `A only`/`B only` the discordant items, p the exact two-sided",
        "McNemar p-value (unadjusted). These are the numbers the Compare page should reproduce.",
        "",
    ]
    for first, second, story in COMPARISONS:
        name_a = f"{first[0]} ({first[1]})"
        name_b = f"{second[0]} ({second[1]})"
        theta_a, theta_b = MODEL_BY_NAME[first[0]].theta, MODEL_BY_NAME[second[0]].theta
        lines += [f"### `{name_a}` vs `{name_b}`", "",
                  f"True theta {theta_a:.2f} vs {theta_b:.2f} (before task shifts): {story}", "",
                  "| task | metric | A | B | A only | B only | McNemar p |",
                  "|---|---|---:|---:|---:|---:|---:|"]
        for r in pair_rows(first, second):
            lines.append(f"| `{r['task']}` | `{r['metric']}` | {r['a']:.3f} | {r['b_mean']:.3f} | "
                         f"{r['only_a']} | {r['only_b']} | {r['p']:.2g} |")
        lines.append("")
    lines += demo_items.readme_lines()
    lines.append("")
    (data_dir / "README.md").write_text("\n".join(lines), encoding="utf-8")


# ---------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------

def generate(data_dir: Path) -> dict[str, Any]:
    """Write the whole demo under ``data_dir`` (``data_dir/demo``, truth JSON, README)."""
    demo = data_dir / "demo"
    if demo.exists():
        shutil.rmtree(demo)
    demo.mkdir(parents=True)
    ITEM_SCORES.clear()
    tasks = build_tasks()
    observed: dict[str, Any] = {"lm_eval": {}, "inspect": {}}
    for run in lm_runs():
        obs = write_lm_run(run, tasks, demo)
        observed["lm_eval"].setdefault(run.model.name, {})[run.label] = obs
    trivia = build_trivia()
    for i, m in enumerate(MODELS):
        observed["inspect"][m.name] = write_inspect_log(m, i, trivia, demo)
    # seeds and checkpoint series for the Noise page (issue 12): scripts/demo_noise.py
    import importlib.util
    spec = importlib.util.spec_from_file_location("demo_noise", Path(__file__).with_name("demo_noise.py"))
    demo_noise = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo_noise)
    demo_noise.write_noise_demo(sys.modules[__name__], tasks, demo, data_dir)
    truth = write_truth(tasks, trivia, observed, data_dir)
    arc, reading = tasks["arc_easy_demo"].items, tasks["reading_demo"].items
    demo_items.write_corpus(arc, reading, [i for i, it in enumerate(arc) if it.truth >= 0],
                            lambda it: doc_to_text("arc_easy_demo", it),
                            lambda it: doc_to_text("reading_demo", it),
                            NAMES + JOBS + PLACES + PETS + TOWNS + PRODUCTS + DAYS,
                            DemoRng("items", "corpus"), data_dir)
    write_readme(truth, data_dir)
    return truth


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "data",
                        help="data folder to write (default: the repository's data/)")
    args = parser.parse_args(argv)
    generate(args.out)
    total = sum(p.stat().st_size for p in (args.out / "demo").rglob("*") if p.is_file())
    print(f"wrote {args.out / 'demo'} ({total / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
