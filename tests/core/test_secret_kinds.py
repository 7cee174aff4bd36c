"""Each kind of secret is found in a whole text and masked alone; ordinary text is kept (H-35).

One test per kind of :func:`gpusession.core.files.detectors.token_kinds` and seed list,
through :func:`find_secret` (the refusal) and :func:`mask_text` (what a program wrote).
"""

from __future__ import annotations

import sys
import time
import unicodedata
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from secret_payloads import HEX64, ORDINARY, PAYLOADS  # noqa: E402

from gpusession.core.files import detectors  # noqa: E402
from gpusession.core.files.detectors import FORMAT_CHARS_RE  # noqa: E402
from gpusession.core.files.secrets import (  # noqa: E402
    find_secret,
    format_characters,
    mask_record,
    mask_text,
)
from gpusession.core.files.textio import printable  # noqa: E402


@pytest.mark.parametrize("kind", sorted(PAYLOADS))
def test_h35_every_kind_is_refused_and_masked_alone(kind: str) -> None:
    text, never = PAYLOADS[kind]
    reason = find_secret(text)
    assert reason is not None, kind
    for part in never:
        assert part not in reason
    wrapped = f"0042:\n{text}\n:0042 /x/y.z"  # no list word beside it (a seed run takes those)
    masked, kinds = mask_text(wrapped)
    assert kinds and "[HIDDEN: " in masked
    for part in never:
        assert part not in masked, (kind, part)
    assert masked.startswith("0042:\n") and masked.endswith(":0042 /x/y.z")
    assert mask_text(masked) == (masked, [])  # masking twice changes nothing


@pytest.mark.parametrize("text", ORDINARY)
def test_h35_ordinary_text_is_neither_refused_nor_masked(text: str) -> None:
    assert find_secret(text) is None
    assert mask_text(text) == (text, [])
    assert printable(text) == text


def test_h35_every_table_kind_has_a_payload() -> None:
    kinds = {k for k, *_ in detectors.token_kinds()}
    found = {mask_text(t)[1][0] for t, _ in PAYLOADS.values()}
    assert kinds <= found | {"private key"}, kinds - found


def test_h35_a_pem_body_and_a_seed_split_over_lines_are_found_as_a_whole() -> None:
    pem, never = PAYLOADS["pem-rsa"]
    lines = pem.splitlines()
    # each line alone: the body lines hold nothing a line-by-line check would see
    assert find_secret(lines[1]) is None
    rec = mask_record({"event": "worker_stderr", "lines": ["loading", *lines, "done"]})
    assert rec["lines"][0] == "loading" and rec["lines"][-1] == "done"
    assert not any(part in line for part in never for line in rec["lines"])
    seed_lines, never = PAYLOADS["bip39-24-one-per-line"]
    assert all(find_secret(w) is None for w in seed_lines.splitlines())
    rec = mask_record({"lines": ["1:", *seed_lines.splitlines(), "2:"]})
    assert rec["lines"] == ["1:", "[HIDDEN: seed phrase]", "2:"]


def test_h35_a_list_of_identifiers_is_not_read_as_one_text() -> None:
    drawn = ["batch-1", "batch-4", "batch-8"] * 6
    assert mask_record({"drawn_order": drawn}) == {"drawn_order": drawn}


def test_h35_digest_fields_keep_their_hex() -> None:
    rec = mask_record({"sha256": HEX64, "code_revision": HEX64, "note": HEX64})
    assert rec == {"sha256": HEX64, "code_revision": HEX64, "note": "[HIDDEN: private key]"}


def test_h35_masking_a_megabyte_of_stderr_never_hangs() -> None:
    big = "\n".join(f"step {i}: loss 0.{i % 97:02d} at /srv/data/shard-{i}.jsonl ok"
                    for i in range(20_000))
    text = big + "\n" + PAYLOADS["hex-64"][0]
    start = time.perf_counter()
    masked, kinds = mask_text(text)
    elapsed_s = time.perf_counter() - start
    assert kinds == ["private key"] and HEX64 not in masked
    # a hang catcher only (a pattern that backtracks takes minutes on 1 MB), never a speed
    # goal: the machine may be loaded (A6)
    assert elapsed_s < 60.0, elapsed_s


def test_h24_format_characters_match_unicode_category_cf() -> None:
    cf = [chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) == "Cf"]
    assert all(FORMAT_CHARS_RE.fullmatch(c) for c in cf)
    assert FORMAT_CHARS_RE.fullmatch("\u2028") and FORMAT_CHARS_RE.fullmatch("\u2029")
    assert not FORMAT_CHARS_RE.search("café 体育新闻 a-b_c.d")


def test_h24_printable_shows_format_characters_escaped() -> None:
    assert printable("pay abc\u202edcba") == "pay abc\\u202edcba"
    assert printable("x\u200by\u200dz\ufeff") == "x\\u200by\\u200dz\\ufeff"
    assert printable("tag \U000e0041") == "tag \\U000e0041"
    assert format_characters("a\u202eb\u200b") == ["U+202E RIGHT-TO-LEFT OVERRIDE",
                                                   "U+200B ZERO WIDTH SPACE"]


def test_h35_an_error_line_cut_to_its_gist_keeps_no_part_of_a_key() -> None:
    from gpusession.bench.ranks import error_gist

    gist = error_gist("ValueError: " + "x" * 270 + " key " + HEX64)
    assert gist is not None and HEX64[:8] not in gist and gist.endswith("…")
    assert error_gist(f"RuntimeError: token {HEX64}") == "RuntimeError: token [HIDDEN: private key]"


def test_s6_a_pattern_is_skipped_only_where_it_cannot_match() -> None:
    """Each kind's cheap gate (a literal every match holds, or its shortest length) is
    true wherever its pattern matches: skipping a pattern never lets a secret through."""
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from secret_payloads import ORDINARY, PAYLOADS

    texts = [text for text, _parts in PAYLOADS.values()] + list(ORDINARY)
    for text in texts:
        for i in range(len(detectors._TOKEN_TABLE)):
            if detectors._compiled(i).search(text):
                assert detectors._GATES[i](text), (detectors._TOKEN_TABLE[i][0], text[:40])

    @settings(max_examples=300, deadline=None)
    @given(st.sampled_from(texts), st.text(max_size=20), st.text(max_size=20))
    def wrapped(core: str, before: str, after: str) -> None:
        text = before + core + after
        for i in range(len(detectors._TOKEN_TABLE)):
            if detectors._compiled(i).search(text):
                assert detectors._GATES[i](text)

    wrapped()


def test_h35_a_digest_labelled_sha256_is_kept_an_unlabelled_64_hex_is_masked() -> None:
    """A validated row's notes name its output by ``output sha256:<hex>``: a digest, not a key."""
    from gpusession.core.files.secrets import check_no_secret

    labelled = f"corpus rejected: quality; output sha256:{HEX64}"
    assert find_secret(labelled) is None
    assert mask_text(labelled) == (labelled, [])
    assert mask_record({"notes": labelled}) == {"notes": labelled}
    check_no_secret(labelled, field="notes")  # the write boundary lets it through
    for unlabelled in (f"output {HEX64}", f"output: {HEX64}", f"sha256 of nothing, then {HEX64}"):
        masked, kinds = mask_text(unlabelled)
        assert HEX64 not in masked and kinds == ["private key"], unlabelled


@pytest.mark.parametrize("kind", ["github-token", "github-fine-grained", "gitlab-token", "hugging-face-token",
                                  "slack-token", "stripe-key", "google-api-key", "jwt", "nostr-nsec",
                                  "age-key", "aws-access-key"])
def test_h46_a_token_glued_to_the_word_before_it_is_found_and_masked(kind: str) -> None:
    """A paste that lost its separator (``mytokenghp_…``, ``--param 'keyghp_…=1'``) still holds the token."""
    text, never = PAYLOADS[kind]
    token = max(text.split(), key=len)
    for glued in (f"mytoken{token}", f"x{token}=1", f"see:key{token}."):
        assert find_secret(glued) is not None, (kind, glued)
        masked, kinds = mask_text(glued)
        assert kinds, (kind, glued)
        for part in never:
            assert part not in masked, (kind, glued)


@pytest.mark.parametrize("text", ["task-AbCdEfGh1234567890abcdef", "disk-Q1w2E3r4T5y6U7i8O9p0Asdf",
                                  "shelf_abcdefghijklmnopqrstuvwxyz0123456789", "weights_hf_" + "a1" * 16])
def test_h46_words_that_end_in_a_token_prefix_stay_words(text: str) -> None:
    assert find_secret(text) is None and mask_text(text) == (text, [])
