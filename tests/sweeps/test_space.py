"""Search-space files for ``assay sweep``: what a valid file gives, and one clear error (file, line,
what was expected) for each mistake the issue names: an unknown parameter, an empty range, a wrong
type; and the named differences that refuse a resumed sweep with a changed space."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.errors import InputError
from assay.sweeps.space import changes, load_space

GOOD = """\
[trial]
stage = "finetune"
data = ["wmt16"]
exclude = ["wmt17"]

[trial.config]
epochs = 2
eval_every = 20

[params.learning_rate]
low = 1e-5
high = 1e-4
log = true

[params.head_input]
choices = ["cls", "mean"]

[pruner]
kind = "median"
startup_trials = 1
"""


def _write(tmp_path: Path, text: str, name: str = "space.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_valid_toml_space(tmp_path: Path) -> None:
    space = load_space(_write(tmp_path, GOOD))
    assert space.stage == "finetune" and space.data == ("wmt16",) and space.exclude == ("wmt17",)
    [lr, pooling] = space.params
    assert (lr.kind, lr.low, lr.high, lr.log) == ("float", 1e-5, 1e-4, True)
    assert (pooling.kind, pooling.choices) == ("categorical", ("cls", "mean"))
    assert (space.pruner, space.startup_trials, space.warmup_evaluations) == ("median", 1, 1)
    assert space.trial_config({"learning_rate": 3e-5}) == {"epochs": 2, "eval_every": 20, "learning_rate": 3e-5}
    # the digest is the search, not the file's place or layout
    moved = load_space(_write(tmp_path, "\n\n" + GOOD, "elsewhere.toml"))
    assert moved.digest == space.digest


def test_the_same_space_in_yaml(tmp_path: Path) -> None:
    yaml_text = """\
trial:
  stage: finetune
  data: [wmt16]
  exclude: [wmt17]
  config: {epochs: 2, eval_every: 20}
params:
  learning_rate: {low: 1.0e-5, high: 1.0e-4, log: true}
  head_input: {choices: [cls, mean]}
pruner: {kind: median, startup_trials: 1}
"""
    assert load_space(_write(tmp_path, yaml_text, "space.yaml")).digest == load_space(_write(tmp_path, GOOD)).digest


@pytest.mark.parametrize(("old", "new", "line", "message"), [
    ("[params.head_input]", "[params.pooling_kind]", 15, "unknown parameter 'pooling_kind'"),
    ("high = 1e-4", "high = 1e-6", 12, "the range of 'learning_rate' is empty: low 1e-05 >= high 1e-06"),
    ("low = 1e-5", 'low = "small"', 11, "'params.learning_rate.low' is 'small' (expected a finite float)"),
    ('choices = ["cls", "mean"]', 'choices = ["cls", "max"]', 16, "holds 'max' (expected one of cls, pooler, mean)"),
    ('choices = ["cls", "mean"]', "choices = []", 16, "'params.head_input.choices' is empty"),
    ("epochs = 2", "epochs = -2", 7, "the trainer refuses"),
    ("eval_every = 20", "eval_evry = 20", 8, "unknown key 'trial.config.eval_evry'"),
    ('data = ["wmt16"]', "data = []", 3, "key 'trial.data' is []"),
    ('kind = "median"', 'kind = "hyperband"', 19, "key 'pruner.kind' is 'hyperband'"),
    ("low = 1e-5\n", "low = 1e-5\nstep = 1e-6\n", 12, "'params.learning_rate.step'"),
])
def test_each_mistake_is_one_error_naming_the_file_and_line(
        tmp_path: Path, old: str, new: str, line: int, message: str) -> None:
    assert old in GOOD
    path = _write(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(InputError) as caught:
        load_space(path)
    assert str(caught.value).startswith(f"{path}:{line}: "), str(caught.value)
    assert message in str(caught.value)


def test_not_toml_and_not_a_known_format(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"space.toml:2: not valid TOML"):
        load_space(_write(tmp_path, "[trial]\nstage = \n"))
    with pytest.raises(InputError, match=r"space.json: unknown search-space format '.json'"):
        load_space(_write(tmp_path, "{}", "space.json"))


def test_changes_name_what_differs(tmp_path: Path) -> None:
    old = load_space(_write(tmp_path, GOOD)).canonical()
    new = load_space(_write(tmp_path, GOOD.replace("high = 1e-4", "high = 1e-3").replace(
        '["cls", "mean"]', '["cls"]'))).canonical()
    assert changes(old, new) == ['params.head_input.choices: ["cls", "mean"] -> ["cls"]',
                                 "params.learning_rate.high: 0.0001 -> 0.001"]
    assert changes(old, old) == []


def test_enqueued_values_are_checked_and_kept_in_the_canonical_space(tmp_path: Path) -> None:
    """``[[enqueue]]``: values tried first (e.g. the recipe's defaults), each inside its parameter's
    range or choices; the study keeps them in the canonical space it resumes from."""
    from assay.sweeps.space import SearchSpace

    good = GOOD + '\n[[enqueue]]\nlearning_rate = 3e-5\nhead_input = "mean"\n'
    space = load_space(_write(tmp_path, good))
    assert space.enqueue == ({"learning_rate": 3e-5, "head_input": "mean"},)
    assert SearchSpace.from_canonical(space.canonical()).digest == space.digest
    assert "enqueue" not in load_space(_write(tmp_path, GOOD, "plain.toml")).canonical()  # digest as before
    cases = [
        ('learning_rate = 3e-3\nhead_input = "mean"', 23, "gives learning_rate = 0.003",
         "a float in [1e-05, 0.0001]"),
        ('learning_rate = 3e-5\nhead_input = "max"', 24, "gives head_input = 'max'", "one of ['cls', 'mean']"),
        ('learning_rate = 3e-5\nhead_input = "mean"\nbatch_size = 8', 25, "names 'batch_size', which is not searched",
         "values for the searched parameters"),
        ("learning_rate = 3e-5", 22, "has no value for 'head_input'", "a value for every searched parameter"),
    ]
    for body, line, problem, expected in cases:
        path = _write(tmp_path, GOOD + "\n[[enqueue]]\n" + body + "\n", "bad.toml")
        with pytest.raises(InputError) as info:
            load_space(path)
        message = str(info.value)
        assert message.startswith(f"{path}:{line}: ") and problem in message and expected in message, message


def test_successive_halving_pruner(tmp_path: Path) -> None:
    """``kind = "halving"``: Optuna's asynchronous successive halving (Li et al., 2020), its first
    rung after ``warmup_evaluations`` validations, keeping the top 1/``reduction_factor``; the
    factor is part of the search only for this pruner, and must be >= 2."""
    import optuna

    from assay.workers.training.sweep_trials import pruner_for

    text = GOOD.replace('kind = "median"', 'kind = "halving"\nreduction_factor = 2\nwarmup_evaluations = 1')
    space = load_space(_write(tmp_path, text))
    assert space.canonical()["reduction_factor"] == 2
    assert "reduction_factor" not in load_space(_write(tmp_path, GOOD, "median.toml")).canonical()
    pruner = pruner_for(space)
    assert isinstance(pruner, optuna.pruners.SuccessiveHalvingPruner)
    # rungs at 1, 2, 4 validations: with two earlier trials, a trial in the lower half at a rung stops
    study = optuna.create_study(direction="maximize", pruner=pruner)
    for taus in ([0.30, 0.35, 0.40], [0.32, 0.36, 0.41]):
        trial = study.ask()
        for step, tau in enumerate(taus, 1):
            trial.report(tau, step)
            assert not trial.should_prune()
        study.tell(trial, taus[-1])
    weak = study.ask()
    weak.report(0.10, 1)
    assert weak.should_prune()
    bad = _write(tmp_path, text.replace("reduction_factor = 2", "reduction_factor = 1"), "bad.toml")
    expected = r"bad\.toml:\d+: key 'pruner.reduction_factor' is 1 \(expected an integer >= 2\)"
    with pytest.raises(InputError, match=expected):
        load_space(bad)
