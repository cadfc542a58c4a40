"""JSON-like 1 KiB values: varied enough that lz4 has real work, compressible like real JSON."""

from __future__ import annotations

import json
import random

VALUE_SIZE = 1024
DISTINCT_VALUES = 1000
WORDS = [f"{stem}{n}" for stem in ("alpha", "beta", "gamma", "delta", "omega") for n in range(40)]


def json_value(rng: random.Random, size: int = VALUE_SIZE) -> bytes:
    record = {
        "id": rng.randrange(10**12),
        "user": f"user-{rng.randrange(10**6)}",
        "event": rng.choice(["click", "view", "purchase", "signup", "logout"]),
        "amount": round(rng.random() * 1000, 2),
        "tags": [rng.choice("abcdefghij") * rng.randrange(1, 8) for _ in range(6)],
        "payload": "",
    }
    text = json.dumps(record)
    filler = " ".join(rng.choice(WORDS) for _ in range(size // 4))
    record["payload"] = filler[: size - len(text)]
    return json.dumps(record).encode()[:size]


def json_values(count: int = DISTINCT_VALUES, seed: int = 7) -> list[bytes]:
    rng = random.Random(seed)
    return [json_value(rng) for _ in range(count)]
