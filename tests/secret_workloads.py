"""A workload that leaks secrets the way real ones do: in its exception and on stderr (H-35).

``KeyInException`` raises ``ValueError("key " + 64 hex digits)`` from ``predict`` after
printing a PEM private key one line at a time and a seed phrase one word per line to
stderr. The values are fixed and made up.
"""

from __future__ import annotations

import sys
from typing import Any

HEX_KEY = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
PEM_BODY = ["MIIEowIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi7Zq8Pq4Y1C0Bq8X1ZxKk7mQ1d",
            "qJg2b3pWcVn8Hk4tYxR9sL0aZ5eN6uF7iD2oM1wE3rT4yU8iO9pA0sD5fG6hJ7kL",
            "8zX9cV0bN1mQ2wE3rT4yU8iO9pA0sD5fG6hJ7kL8zX9cV0bN1mQ2wE3rT4yU8iO9"]
SEED = ("legal winner thank year wave sausage worth useful legal winner thank yellow").split()


class KeyInException:
    """Predicts ``a``; on the first call prints the PEM and the seed to stderr, then raises."""

    classes = ["a", "b"]

    def __init__(self, **_: Any) -> None:
        self.calls = 0

    def revisions(self) -> dict[str, str]:
        return {"model_revision": "leaky-1", "tokenizer_revision": "split-1"}

    def load(self, device: str, precision: str, context_limit: int | None) -> None:
        print("-----BEGIN RSA PRIVATE KEY-----", file=sys.stderr, flush=True)
        for line in PEM_BODY:
            print(line, file=sys.stderr, flush=True)
        print("-----END RSA PRIVATE KEY-----", file=sys.stderr, flush=True)
        for word in SEED:
            print(word, file=sys.stderr, flush=True)

    def predict(self, texts: list[str]) -> list[str]:
        raise ValueError("key " + HEX_KEY)
