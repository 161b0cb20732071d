"""The shard files of a sharded checkpoint, as its index lists them (their names carry the
save's id, so tests read them from the index instead of spelling them out)."""

from __future__ import annotations

import json
from pathlib import Path


def index_of(directory: Path, prefix: str = "model") -> dict:
    return json.loads((Path(directory) / f"{prefix}.safetensors.index.json").read_text())


def shard_names(directory: Path, prefix: str = "model") -> list[str]:
    """The index's shard file names, first to last."""
    return list(dict.fromkeys(index_of(directory, prefix)["weight_map"].values()))


def save_id(directory: Path, prefix: str = "model") -> str:
    return index_of(directory, prefix)["metadata"]["spx_save_id"]
