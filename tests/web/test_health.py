"""/healthz (liveness) and /readyz (readiness) as the app answers them; the server's own
"busy" is tested over real sockets in tests/server/."""

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from tests.conftest import TEST_SETTINGS


@pytest.mark.parametrize(
    ("model", "decoder", "ready", "retry_after"),
    [
        ("ready", "ready", 200, None),
        ("not loaded yet", "missing", 200, None),
        ("loading", "ready", 503, "1"),
        ("ready", "loading", 503, "1"),
    ],
)
def test_readyz_is_ready_unless_a_model_is_being_read_and_healthz_stays_ok(
    model: str, decoder: str, ready: int, retry_after: str | None
) -> None:
    app = create_app(Settings(**TEST_SETTINGS))
    app.state.model_state = lambda: model
    with TestClient(app) as client:
        app.state.decoder_state = lambda: decoder
        readyz, healthz = client.get("/readyz"), client.get("/healthz")
    status = "ready" if ready == 200 else "loading"
    assert (readyz.status_code, readyz.json()) == (ready, {"status": status})
    assert readyz.headers.get("retry-after") == retry_after
    assert (healthz.status_code, healthz.json()) == (
        200,
        {"status": "ok", "model": model, "decoder": decoder},
    )


def test_both_answer_head(client: TestClient) -> None:
    assert [client.head(path).status_code for path in ("/healthz", "/readyz")] == [200, 200]
