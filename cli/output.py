"""Printing helpers shared by the commands."""

from __future__ import annotations

import json
from typing import Any

import click


def emit_json(payload: Any) -> None:
    click.echo(json.dumps(payload, indent=2, ensure_ascii=False, default=str))
