"""Demo generator: the item banks (short synthetic texts) and the item builders of every
demo task (see make_demo.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from demo_common import READING_MU, READING_WITHIN_SD, DemoRng, mixture_difficulty

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
