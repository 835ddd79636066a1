"""The floor of bench/bench_load.py's distinct states: Attention Lab served as `python -m app`
serves it, every layer and the request's validation kept, but /api/attention answering fixed
bytes of the size of its real answer (BENCH_API_BYTES) instead of computing it. What the app
costs per request before any attention is computed: `bench_load.py --floor` measures it beside
the app and the bare endpoint, in the same run.

    python -m bench.floor_app     (HOST, PORT, WORKERS and the app's settings from the environment)
"""

import os

from starlette.responses import Response

from app.features.lab import routes
from app.features.lab.service import HeadInputs
from app.server.run import AttentionLab, raise_open_file_limit
from app.settings import Settings, environment_settings


def main() -> None:
    body = b"x" * int(os.environ["BENCH_API_BYTES"])

    def fixed_answer(inputs: HeadInputs, settings: Settings) -> Response:
        return Response(body, media_type="application/json")

    routes.answer = fixed_answer  # the endpoint looks `answer` up when it is called
    raise_open_file_limit()
    AttentionLab(environment_settings()).run()  # the workers are forked with the patch in


if __name__ == "__main__":
    main()
