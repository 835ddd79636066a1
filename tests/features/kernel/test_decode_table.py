"""The kernel page's key-by-key table for the new query keeps the scaled score and the mask
apart: a hidden key's ÷ √d_k cell shows its scaled number, its mask cell −∞."""

import re

from fastapi.testclient import TestClient


def test_a_hidden_key_shows_its_scaled_score_and_the_mask_shows_minus_infinity(
    client: TestClient,
) -> None:
    # The worked example with a causal window of 1: "sleeps" (the last step) sees only itself.
    html = client.get("/kernel", params={"mask": "window", "window": "1", "decode_step": "2"}).text
    table = re.search(r'<table class="matrix[^"]*" id="decode-row">.*?</table>', html, re.S)
    assert table is not None
    rows = [
        [
            re.sub(r"<[^>]+>", "", cell).strip()
            for cell in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)
        ]
        for row in re.findall(r"<tr>(.*?)</tr>", table.group(0).split("<tbody>")[1], re.S)
    ]
    # key, q·k, ÷ √2, + M, weight (q = k of "sleeps" = [1.5, 1]; scores 2, 1, 3)
    assert rows == [
        ["The (0)", "2.000", "1.414", "−∞", "0.000"],
        ["cat (1)", "1.000", "0.707", "−∞", "0.000"],
        ["sleeps (2)", "3.000", "2.121", "0", "1.000"],
    ]
