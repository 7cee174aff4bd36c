"""A private key's body without its BEGIN and END lines is hidden, in a stream and in a mask (H-75)."""

from __future__ import annotations

import base64
import hashlib
import json
import random

from gpusession.core.files.detectors import is_der_key_start, is_key_body_line, is_key_tail_line
from gpusession.core.files.secretgate import may_hold_secret
from gpusession.core.files.secrets import KEY_LINE, KeyBlockFilter, mask_text
from gpusession.core.validation.accept_rule import reason_line

#: A PKCS#8 RSA key's DER start (SEQUENCE of 1,214 bytes, INTEGER 0 …) and a fixed body:
#: 26 lines of 64 base64 characters and a short last line, as `openssl genpkey` writes it.
_RNG = random.Random(75)
_DER = bytes.fromhex("308204be020100300d06092a864886f70d0101010500048204a8") + bytes(
    _RNG.randrange(256) for _ in range(1214 - 26))
_B64 = base64.b64encode(_DER).decode()
BODY = [_B64[i:i + 64] for i in range(0, len(_B64), 64)]

#: Ordinary stderr: a traceback, a progress bar, digests, base64 of small JSON, words.
ORDINARY = [
    "Traceback (most recent call last):",
    '  File "/home/me/train.py", line 12, in <module>',
    "    model = load(path)",
    "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "100%|██████████| 64/64 [00:03<00:00, 19.32it/s]",
    "epoch 3/10 loss=0.1234 acc=0.98",
    hashlib.sha256(b"a").hexdigest(),
    hashlib.sha256(b"b").hexdigest(),
    hashlib.sha256(b"c").hexdigest(),
    base64.b64encode(json.dumps({"run": 3, "batch": 8, "ok": True}).encode()).decode(),
    base64.b64encode(json.dumps({"model": "bert-base", "precision": "fp16", "n": 1000}).encode()).decode(),
    "Done",
    "Finished",
    "ModuleNotFoundError",
    "WARNING:root:slow",
]


def _stream(lines: list[str]) -> list[str]:
    keys = KeyBlockFilter()
    kept = [k for ln in lines for k in keys.lines(ln)]
    return kept + keys.end()


def test_h75_key_body_lines_without_armour_are_hidden_as_the_stream_is_read() -> None:
    assert len(BODY) == 26 and len(BODY[-1]) < 64 and BODY[0].startswith("MII")
    kept = _stream(["starting", *BODY, "Done", "aws ok"])
    assert kept == ["starting", KEY_LINE, "Done", "aws ok"]
    tail = _stream([*BODY[-4:], "done"])  # only the last lines reached the reader
    assert tail == [KEY_LINE, "done"]
    assert not any(line in kept + tail for line in BODY)


def test_h75_the_stream_of_bytes_hides_the_body_and_releases_a_held_line_at_the_end() -> None:
    keys = KeyBlockFilter()
    raw = [ln.encode() for ln in ["x", *BODY, "-----END PRIVATE KEY-----", "y"]]
    kept = [k for ln in raw for k in keys.bytes_lines(ln)] + keys.bytes_end()
    assert kept == [b"x", KEY_LINE.encode(), b"y"]
    one = KeyBlockFilter()  # one line of 64 alone is not a run: it comes out, one line late
    assert one.bytes_lines(BODY[1].encode()) == [] and one.bytes_end() == [BODY[1].encode()]


def test_h75_mask_text_hides_a_body_joined_by_lines_or_by_a_notes_separator() -> None:
    for sep in ("\n", " | "):
        text = sep.join(["its stderr ended: x", *BODY[-4:], "aws ok"])
        masked, kinds = mask_text(text)
        assert kinds == ["private key"] and "aws ok" in masked and "stderr ended: x" in masked
        assert not any(line in masked for line in BODY[-4:]), masked
    cut = "…" + BODY[-5][20:] + " | " + " | ".join(BODY[-4:])  # a tail cut mid-line
    assert mask_text(cut)[0] == "…[HIDDEN: private key]"


def test_h75_a_single_line_that_starts_a_der_key_is_hidden_alone() -> None:
    assert is_der_key_start(BODY[0]) and mask_text(BODY[0])[0] == "[HIDDEN: private key]"
    ed25519 = "MC4CAQAwBQYDK2VwBCIEIBuWD2rUMhEFkNoXzYxbHh5aEmR3BpHGo8mC4k2TS6xa"  # PKCS#8, 48 bytes
    assert mask_text(f"reason: {ed25519}")[0] == "reason: [HIDDEN: private key]"
    assert not is_der_key_start(base64.b64encode(b"M" * 60).decode())


def test_h75_ordinary_stderr_passes_the_stream_and_the_mask_unchanged() -> None:
    assert _stream(ORDINARY) == ORDINARY
    plain = [ln for ln in ORDINARY if len(ln) != 64]  # 64 hex digits outside a digest field: H-60
    text = "\n".join(plain)
    assert mask_text(text) == (text, []) and mask_text(" | ".join(plain)) == (" | ".join(plain), [])
    digests = "\n".join(ORDINARY[6:9])
    assert mask_text(digests, digest=True)[0] == digests  # a digest field keeps them


def test_h75_random_base64_words_are_rarely_taken_for_a_der_key() -> None:
    rng = random.Random(1)
    words = [base64.b64encode(bytes(rng.randrange(256) for _ in range(48))).decode() for _ in range(3000)]
    assert sum(is_der_key_start(w) for w in words) <= 1
    assert not any(is_key_body_line(h) for h in ORDINARY[6:9])  # hex only: a digest
    assert not any(is_key_tail_line(w) for w in ("Done", "Finished", "RuntimeError"))


def test_h75_the_gate_lets_every_body_and_der_key_through() -> None:
    for text in (" | ".join(BODY[-3:]), "\n".join(BODY[:2]), BODY[0], f"x {BODY[0][:40]}"):
        assert may_hold_secret(text)


def test_h75_an_accept_rule_printing_a_key_body_keeps_no_line_of_it_as_its_reason() -> None:
    said = reason_line(("\n".join(BODY) + "\n").encode())  # `sed -n 2,27p key.pem; exit 1`
    assert said == "[HIDDEN: private key]" and BODY[0] not in said
