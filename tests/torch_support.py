"""What the tests of tiny torch models share: one intra-op thread, and the words of their vocabularies.

The fixture is module-scoped and autouse where a module or conftest imports it
(``from tests.torch_support import one_torch_thread``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

WORDS = ["the", "cat", "dog", "sat", "on", "a", "mat", "ran", "to", "red", "big", "old", "one", "two", "three",
         "four", "five", "six", "seven", "."]
"""A small English vocabulary for tiny randomly initialised tokenizers (the words of the test sentences)."""


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread() -> Iterator[None]:
    """Tiny models on a shared 2-core machine: one intra-op thread is faster and deterministic."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
