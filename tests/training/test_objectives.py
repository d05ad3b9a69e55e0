"""The loss kernels: masked means that agree with torch's own losses on the present rows, and that
leave missing targets out (never treated as 0), for the regression and classification heads of
Sellam et al. (2020, §4.3). Oracles: ``torch.nn.functional.mse_loss`` / ``cross_entropy`` on the
rows that have a target (float32; compared at 1e-6)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from transformers import BertConfig, BertModel

from assay.errors import UsageError
from assay.workers.checkpoint import LearnedMetricModel
from assay.workers.training.model import MultiTaskModel, new_head
from assay.workers.training.objectives import Objective, check_objectives, masked_loss_sum

NAN = math.nan


def test_regression_masks_missing_targets() -> None:
    outputs = torch.tensor([[0.5], [1.0], [-2.0], [3.0]], requires_grad=True)
    targets = torch.tensor([[0.0], [NAN], [-1.0], [NAN]])
    total, n = masked_loss_sum(Objective("bleu", "bleu"), outputs, targets)
    present = torch.tensor([0, 2])
    assert n.item() == 2
    expected = F.mse_loss(outputs[present, 0], targets[present, 0], reduction="sum")
    assert total.item() == pytest.approx(expected.item(), abs=1e-6)
    # 0-filling would have added (1-0)^2 + (3-0)^2 = 10
    assert total.item() == pytest.approx(0.25 + 1.0, abs=1e-6)
    total.backward()
    assert outputs.grad is not None
    assert outputs.grad[1, 0].item() == 0 and outputs.grad[3, 0].item() == 0
    assert torch.isfinite(outputs.grad).all()


def test_classification_with_indices_and_probabilities() -> None:
    torch.manual_seed(0)
    logits = torch.randn(5, 3)
    labels = torch.tensor([[2.0], [NAN], [0.0], [1.0], [NAN]])
    hard = Objective("entail", "entail", kind="classification", n_classes=3)
    total, n = masked_loss_sum(hard, logits, labels)
    present = torch.tensor([0, 2, 3])
    expected = F.cross_entropy(logits[present], labels[present, 0].long(), reduction="sum")
    assert n.item() == 3 and total.item() == pytest.approx(expected.item(), abs=1e-6)

    probs = torch.tensor([[0.8, 0.1, 0.1], [NAN, NAN, NAN], [0.2, 0.3, 0.5], [0.0, 1.0, 0.0], [0.5, NAN, 0.5]])
    soft = Objective("entail", ("p0", "p1", "p2"), kind="classification", n_classes=3)
    assert soft.soft and soft.out_dim == 3
    total, n = masked_loss_sum(soft, logits, probs)
    present = torch.tensor([0, 2, 3])  # a row with any missing probability is missing
    expected = F.cross_entropy(logits[present], probs[present], reduction="sum")
    assert n.item() == 3 and total.item() == pytest.approx(expected.item(), abs=1e-6)


def test_multitask_loss_is_the_weighted_sum_of_masked_means() -> None:
    """Σ_k γ_k ℓ_k (eq. 1) with ℓ_k the mean over the rows that have target k."""
    encoder = BertModel(BertConfig(vocab_size=25, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                   intermediate_size=64, max_position_embeddings=16))
    objectives = [Objective("rating", "h"), Objective("bleu", "b", weight=0.5),
                  Objective("entail", "e", kind="classification", n_classes=3, weight=2.0)]
    heads = {"bleu": new_head(32, 1, 0.02, 1, "bleu"), "entail": new_head(32, 3, 0.02, 1, "entail")}
    model = MultiTaskModel(LearnedMetricModel(encoder, torch.nn.Linear(32, 1), "cls", heads), objectives).eval()
    logits = torch.randn(4, 5)
    labels = torch.tensor([[0.1, NAN, 1.0], [NAN, 0.3, NAN], [0.2, 0.4, 2.0], [0.3, NAN, 0.0]])
    rating = F.mse_loss(logits[[0, 2, 3], 0], labels[[0, 2, 3], 0])
    bleu = F.mse_loss(logits[[1, 2], 1], labels[[1, 2], 1])
    entail = F.cross_entropy(logits[[0, 2, 3], 2:5], labels[[0, 2, 3], 2].long())
    expected = rating + 0.5 * bleu + 2.0 * entail
    assert model.loss(logits, labels).item() == pytest.approx(expected.item(), abs=1e-6)
    # a task with no target in the batch contributes 0, not NaN
    only_rating = labels.clone()
    only_rating[:, 1:] = NAN
    assert model.loss(logits, only_rating).item() == pytest.approx(
        F.mse_loss(logits[[0, 2, 3], 0], labels[[0, 2, 3], 0]).item(), abs=1e-6)


def test_new_heads_are_seeded_and_bert_initialised() -> None:
    a = new_head(32, 3, 0.02, seed=7, name="entail")
    assert torch.equal(a.weight, new_head(32, 3, 0.02, seed=7, name="entail").weight)
    assert not torch.equal(a.weight, new_head(32, 3, 0.02, seed=8, name="entail").weight)
    assert not torch.equal(a.weight[:1], new_head(32, 1, 0.02, seed=7, name="bleu").weight)
    assert torch.equal(a.bias, torch.zeros(3))
    assert 0.01 < float(a.weight.detach().std()) < 0.03


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Objective("rating", "h", kind="classification", n_classes=3), "must be a regression"),
        (lambda: Objective("x.y", "h"), "objective name 'x.y'"),
        (lambda: Objective("keys", "h"), "objective name 'keys'"),
        (lambda: Objective("bleu", "b", weight=-1.0), "weight -1.0"),
        (lambda: Objective("bleu", "b", kind="ranking"), "kind 'ranking'"),
        (lambda: Objective("entail", ("p0", "p1"), kind="classification", n_classes=3), "not 2"),
        (lambda: Objective("entail", "e", kind="classification"), "n_classes >= 2"),
    ],
)
def test_bad_objectives_are_refused(make: object, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        make()  # type: ignore[operator]


def test_objective_sets_are_checked() -> None:
    with pytest.raises(UsageError, match="primary objective 'rating' is not one of"):
        check_objectives([Objective("bleu", "b")], "rating")
    with pytest.raises(UsageError, match="must be a regression objective"):
        check_objectives([Objective("e", "e", kind="classification", n_classes=3)], "e")
    with pytest.raises(UsageError, match="repeated: bleu"):
        check_objectives([Objective("bleu", "b"), Objective("bleu", "c")], "bleu")
    with pytest.raises(UsageError, match="at least one objective"):
        check_objectives([], "rating")
