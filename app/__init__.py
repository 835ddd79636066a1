"""Attention Lab: transformer self-attention, computed stage by stage on the server."""

import os
from pathlib import Path

# The matrices here have at most a few hundred rows: a BLAS thread pool cannot speed them up,
# and under load (several workers on a shared machine) its spinning threads made the numpy
# work 5–7× slower in bench/bench_api.py. One BLAS thread per process unless the environment
# says otherwise; this runs before anything imports numpy.
for _threads in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_threads, "1")

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES_DIR = ROOT / "templates"
STATIC_DIR = ROOT / "static"
