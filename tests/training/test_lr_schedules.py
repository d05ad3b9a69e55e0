"""The learning-rate schedules of TrainConfig.lr_schedule, as the engine hands them to transformers'
Trainer (``workers/training/engine.py``'s training arguments, then Trainer's own ``get_scheduler``):
the rate at every step against the closed form of each schedule."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import get_scheduler

from assay.training.config import LR_SCHEDULES, WSD_DECAY_RATIO, TrainConfig
from assay.workers.training.engine import _training_arguments

STEPS, PEAK, WARMUP = 100, 1e-3, 0.1
#: the run's epochs have 30 steps (hold-epoch holds the peak to step 30); one-epoch runs are below
EPOCH = 30


def _rates(schedule: str, tmp_path: Path, epoch: int = EPOCH) -> list[float]:
    config = TrainConfig(learning_rate=PEAK, warmup_ratio=WARMUP, lr_schedule=schedule, max_steps=STEPS)
    args = _training_arguments(config, tmp_path, STEPS, 8, 0, True, False, 1, steps_per_epoch=epoch)
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=args.learning_rate)
    scheduler = get_scheduler(args.lr_scheduler_type, optimizer, num_warmup_steps=args.warmup_steps,
                              num_training_steps=STEPS, scheduler_specific_kwargs=args.lr_scheduler_kwargs)
    rates = []
    for _ in range(STEPS + 1):
        rates.append(scheduler.get_last_lr()[0])
        optimizer.step()
        scheduler.step()
    return rates


def _expected(schedule: str, step: int) -> float:
    warm = round(WARMUP * STEPS)
    if step < warm:
        return PEAK * step / warm
    if schedule == "constant":
        return PEAK
    if schedule == "linear":
        return PEAK * (STEPS - step) / (STEPS - warm)
    if schedule == "hold-epoch":  # the peak to the end of the first epoch, then linear to 0
        return PEAK if step < EPOCH else PEAK * (STEPS - step) / (STEPS - EPOCH)
    decay = round(WSD_DECAY_RATIO * STEPS)  # wsd: the peak until the last 20 %, then linear to 0
    return PEAK if step < STEPS - decay else PEAK * (STEPS - step) / decay


@pytest.mark.parametrize("schedule", LR_SCHEDULES)
def test_each_schedule_is_its_closed_form(schedule: str, tmp_path: Path) -> None:
    rates = _rates(schedule, tmp_path)
    assert rates == pytest.approx([_expected(schedule, step) for step in range(STEPS + 1)], abs=1e-9)


def test_wsd_keeps_more_of_the_peak_than_linear_and_ends_at_zero(tmp_path: Path) -> None:
    # the reason for wsd (docs/RECIPE.md): within one epoch, a linear decay halves the average rate
    linear, wsd = (sum(_rates(s, tmp_path)[:STEPS]) / STEPS / PEAK for s in ("linear", "wsd"))
    assert linear == pytest.approx(0.05 + 0.45, abs=0.01) and wsd == pytest.approx(0.05 + 0.7 + 0.1, abs=0.01)
    assert _rates("wsd", tmp_path)[STEPS] == 0.0


def test_one_epoch_of_hold_epoch_is_wsd(tmp_path: Path) -> None:
    # a run no longer than its first epoch (or a little longer) still ends with wsd's 20 % decay
    assert _rates("hold-epoch", tmp_path, epoch=STEPS) == _rates("wsd", tmp_path)
    assert _rates("hold-epoch", tmp_path, epoch=90) == _rates("wsd", tmp_path)
