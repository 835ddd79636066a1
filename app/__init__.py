"""Attention Lab: transformer self-attention, computed stage by stage on the server."""

import os
from pathlib import Path

# One BLAS thread per process, set before numpy loads (the environment may still override
# it): the server runs in parallel through its uvicorn workers, and BLAS threads fighting
# them for the same cores made the trained model's forward pass several times slower
# (bench/bench_model.py measures both).
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES_DIR = ROOT / "templates"
STATIC_DIR = ROOT / "static"
