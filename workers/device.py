"""Which torch device a worker computes on.

Workers pick CUDA when the machine has it and the CPU otherwise; a caller (a flow parameter, a
work-pool variable, a test) can name a device explicitly instead: ``"cpu"``, ``"cuda"``,
``"cuda:1"``, ``"mps"`` or a :class:`torch.device`. ``None`` and ``"auto"`` mean "pick".
"""

from __future__ import annotations

import torch

from assay.errors import UsageError

__all__ = ["DeviceLike", "pick_device"]

DeviceLike = str | torch.device | None


def pick_device(device: DeviceLike = None) -> torch.device:
    """The device to compute on: ``device`` when given, else CUDA when available, else the CPU.

    An explicit CUDA device on a machine without one is refused here, with the fix in the
    message, rather than failing later inside a model's forward pass.
    """
    if device is None or (isinstance(device, str) and device.strip().lower() in ("", "auto")):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        chosen = torch.device(device.strip() if isinstance(device, str) else device)
    except (RuntimeError, TypeError) as exc:
        raise UsageError(f"unknown device {device!r} (expected 'auto', 'cpu', 'cuda' or 'cuda:N')") from exc
    if chosen.type == "cuda":
        if not torch.cuda.is_available():
            raise UsageError(
                f"device {device!r} was asked for but this machine has no CUDA device; use 'cpu' or 'auto'"
            )
        if chosen.index is not None and chosen.index >= torch.cuda.device_count():
            raise UsageError(
                f"device {device!r} does not exist: this machine has {torch.cuda.device_count()} CUDA device(s)"
            )
    return chosen
