"""The random number generators' state (torch's CPU and CUDA, NumPy's global, Python's random) as a
picklable dict, for ElasticState(rng=True): a joiner, and a job resumed from a checkpoint, draw what rank 0
would have drawn next. CUDA's state is taken only where this process already uses CUDA (asking would
initialise it) and is given back to as many devices as both sides have."""
from __future__ import annotations

import random
from typing import Any, Dict

import numpy as np
import torch


def get_rng_state() -> Dict[str, Any]:
    return {"torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else [],
            "numpy": np.random.get_state(), "python": random.getstate()}


def set_rng_state(state: Dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    cuda = list(state.get("cuda") or [])
    if cuda and torch.cuda.is_available():
        for device, s in enumerate(cuda[:torch.cuda.device_count()]):
            torch.cuda.set_rng_state(s, device)
    np.random.set_state(state["numpy"])
    random.setstate(state["python"])
