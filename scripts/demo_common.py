"""Demo generator, shared part: deterministic randomness, the simulation's constants and
helpers, and the simulated models with their true abilities (see make_demo.py)."""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

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
