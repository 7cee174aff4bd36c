"""Secrets and free text at the write boundary (seed 003 §8).

One test per kind of secret (every BIP-39 wordlist the ``mnemonic`` package ships, a
64-hex key split across two tokens, base58 keys of 87–88 characters), the one check at
the write boundary reached from every way in (experiment ``--param`` and ``--command``,
``new --gpu``, ``package --gpu``, ``validate --name``, notes), the length limit, the
value never printed back, and a secret already in a hand-edited file hidden and not
written back.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from helpers import cli, digest, one_line
from mnemonic import Mnemonic

from gpusession.core.files.errors import BadInput
from gpusession.core.files.secrets import (
    HIDDEN,
    TEXT_MAX_BYTES,
    check_free_text,
    find_secret,
    mask_free_text,
)
from gpusession.core.folder import journal

HEX_KEY = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def _base58(n: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(_B58) for _ in range(n))


# -- kinds -------------------------------------------------------------------------------------
@pytest.mark.parametrize("language", Mnemonic.list_languages())
def test_secrets_bip39_every_shipped_wordlist_is_refused(language: str) -> None:
    phrase = Mnemonic(language).generate(128)
    reason = find_secret(f"wallet: {phrase}")
    assert reason is not None and "seed phrase" in reason
    words = phrase.split()
    numbered = "\n".join(f"{i}. {w}" for i, w in enumerate(words, 1))
    assert find_secret(numbered) is not None
    assert find_secret(" ".join(words[:11])) is None  # 11 words are not a phrase


@pytest.mark.parametrize("language", ["french", "spanish", "czech", "portuguese", "turkish"])
def test_secrets_bip39_without_accents_or_in_capitals_is_refused(language: str) -> None:
    import unicodedata

    phrase = Mnemonic(language).generate(256)
    bare = "".join(c for c in unicodedata.normalize("NFKD", phrase) if not unicodedata.combining(c))
    assert find_secret(bare.upper()) is not None
    assert find_secret(unicodedata.normalize("NFC", phrase)) is not None


def test_secrets_bip39_ordinary_text_in_other_languages_passes() -> None:
    for text in ("le fournisseur confirme le paiement demain matin après vérification du réseau",
                 "el proveedor dice que la GPU estará lista una hora después del pago",
                 "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处理府研质",
                 ""):
        assert find_secret(text) is None, text


def test_secrets_hex_key_split_across_two_tokens_is_refused_and_never_echoed() -> None:
    for text in (f"{HEX_KEY[:32]} {HEX_KEY[32:]}", f"0x{HEX_KEY[:20]}\n{HEX_KEY[20:]}",
                 f"{HEX_KEY[:40]} - {HEX_KEY[40:]}", f"{HEX_KEY[:8]}:{HEX_KEY[8:]}"):
        reason = find_secret(text)
        assert reason is not None and "split in two" in reason, text
        with pytest.raises(BadInput) as exc:
            check_free_text({"note": text}, "order.toml")
        assert HEX_KEY[:8] not in str(exc.value) and HEX_KEY[-8:] not in str(exc.value)
    for text in ("tx 4c0883a6…3f362318", "commits 8f14e45fceea167a5a36dedd4bea2543 and "
                 "c9f0f895fb98ab9159f51fd0297e236d5", "GPU-5b1c7a2e-9d1f-4e3a-8c6b-2f4d1a9e7c30",
                 "a6e1b2c3d4e5f60718293a4b5c6d7e8f9a0b1c2d 1234"):
        assert find_secret(text) is None, text


@pytest.mark.parametrize("length", [87, 88])
def test_secrets_base58_private_key_of_87_or_88_characters_is_refused(length: int) -> None:
    key = _base58(length)
    reason = find_secret(f"solana key {key}")
    assert reason is not None and "base58" in reason
    with pytest.raises(BadInput) as exc:
        check_free_text({"payment": {"asset": key}}, "order.toml")
    assert key[:10] not in str(exc.value) and "payment.asset" in str(exc.value)


def test_secrets_base58_addresses_and_shorter_strings_pass() -> None:
    for text in (_base58(44), _base58(32), _base58(86), "TXyzDestinationAddr1234567890abcdef"):
        assert find_secret(text) is None, text


def test_secrets_digest_fields_keep_their_64_hex_a_destination_does_not() -> None:
    check_free_text({"demo": {"corpus_revision": HEX_KEY}, "environment": {"gpu_uuid": HEX_KEY}},
                    "session.toml")
    for key in (HEX_KEY, "0x" + HEX_KEY):  # refused everywhere, an address too
        with pytest.raises(BadInput, match="payment.destination: refused"):
            check_free_text({"payment": {"destination": key}}, "order.toml")
    with pytest.raises(BadInput, match="experiments.e.params.key: refused"):
        check_free_text({"experiments": {"e": {"params": {"key": HEX_KEY}}}}, "session.toml")
    with pytest.raises(BadInput, match=r"events\[1\]\.note"):
        check_free_text({"events": [{"note": "ok"}, {"note": HEX_KEY}]}, "order.toml")
    with pytest.raises(BadInput, match="refused"):  # a table key is text too
        check_free_text({"items": {HEX_KEY: {"done": True}}}, "checklist.toml")


# -- the write boundary, from every way in -----------------------------------------------------
@pytest.fixture
def base(capsys: pytest.CaptureFixture[str], sessions_root: Path) -> Path:
    code, _, err = cli(capsys, sessions_root, "new", "base", "--gpu", "RTX A5000",
                       "--lots", "1", "--days", "7", "--start", "2026-11-29T10:00:00Z")
    assert code == 0, err
    return sessions_root / "base"


def _refused(capsys: pytest.CaptureFixture[str], root: Path, folder: Path, secret: str,
             *args: str) -> str:
    before = digest(folder)
    code, out, err = cli(capsys, root, *args)
    line = one_line(err)
    assert code == 2, err
    for part in (secret[:10], secret[-10:]):
        assert part not in out + err
    assert digest(folder) == before, "something was written"
    return line


def test_secrets_experiment_param_and_command_are_checked_at_the_write_boundary(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path
) -> None:
    phrase = Mnemonic("italian").generate(128)
    define = ["experiment", "base", "define", "--id", "e", "--workload", "command", "--values", "1"]
    line = _refused(capsys, sessions_root, base, HEX_KEY, *define, "--command", "true {batch}",
                    "--param", f"key={HEX_KEY}", "--param-via-env")
    assert "session.toml: experiments.e.params.key: refused" in line and "private key" in line
    line = _refused(capsys, sessions_root, base, phrase, *define,
                    "--command", f"tool --seed '{phrase}' {{batch}}")
    assert "experiments.e.params.command[2]: refused" in line and "seed phrase" in line


def test_secrets_new_and_package_gpu_are_checked(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path
) -> None:
    phrase = Mnemonic("english").generate(128)
    code, out, err = cli(capsys, sessions_root, "new", "other", "--gpu", phrase, "--lots", "1",
                         "--days", "7")
    # no run of the phrase is echoed (one word alone may be a word of the path or the message)
    words = phrase.split()
    assert code == 2 and "seed phrase" in one_line(err)
    assert not any(" ".join(words[i:i + 2]) in out + err for i in range(len(words) - 1)), err
    assert not (sessions_root / "other").exists()
    key = _base58(88)
    line = _refused(capsys, sessions_root, base, key, "package", "base", "--gpu", key)
    assert "package.gpu_model: refused" in line and "base58" in line


def test_secrets_validate_name_is_checked_before_anything_is_written(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path, tmp_path: Path
) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"id": "a", "text": "x", "label": "p"}\n', encoding="utf-8")
    output = tmp_path / "out.jsonl"
    output.write_text('{"id": "a", "label": "p"}\n', encoding="utf-8")
    line = _refused(capsys, sessions_root, base, HEX_KEY, "validate", "--threshold", "0.9", "--session", "base",
                    "--corpus", str(corpus), "--predictions", str(output), "--name", HEX_KEY)
    assert "--name: refused" in line and "private key" in line
    assert not (base / "validation").exists() or not any((base / "validation").iterdir())


def test_secrets_refused_value_is_never_printed_back_by_the_control_character_check(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path
) -> None:
    phrase = Mnemonic("french").generate(128)
    for args in (["order", "base", "set", "--number", f"{HEX_KEY}\t", "--gpu", "RTX A5000",
                  "--lots", "1", "--days", "7"],
                 ["order", "base", "event", "payment-sent", "--note", f"{phrase}\x1b[2J"],
                 ["package", "base", "--gpu", f"{phrase}\n"],
                 ["checklist", "base", "add", "2", f"{HEX_KEY}\x1b"]):
        before = digest(base)
        code, out, err = cli(capsys, sessions_root, *args)
        assert code == 2, err
        one_line(err)
        assert HEX_KEY[:10] not in out + err and phrase.split()[0] not in out + err
        assert digest(base) == before


# -- length -------------------------------------------------------------------------------------
def test_a_100_kb_order_note_is_refused_naming_field_and_limit(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path
) -> None:
    before = digest(base)
    code, _, err = cli(capsys, sessions_root, "order", "base", "event", "payment-sent",
                       "--note", "x" * 100_000)
    line = one_line(err)
    assert code == 2 and "error: the note for events[0] is 100,000 bytes" in line
    assert f"{TEXT_MAX_BYTES:,} bytes" in line and line.endswith("nothing was written to order.toml")
    assert "x" * 50 not in line and digest(base) == before
    code, _, err = cli(capsys, sessions_root, "order", "base", "event", "payment-sent",
                       "--note", "é" * (TEXT_MAX_BYTES // 2))  # exactly 4 KiB of UTF-8
    assert code == 0, err


def test_long_checklist_note_and_param_are_refused(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path
) -> None:
    code, _, err = cli(capsys, sessions_root, "checklist", "base", "note", "g1.one-sentence",
                       "y" * 5000)
    assert code == 2 and "the note for g1.one-sentence is 5,000 bytes" in one_line(err)
    assert "4 KiB" in err
    code, _, err = cli(capsys, sessions_root, "experiment", "base", "define", "--id", "e",
                       "--workload", "command", "--values", "1", "--command", "true {batch}",
                       "--param", "p=" + "z" * 5000, "--param-via-env")
    assert code == 2 and "p=the value (5000 characters, not shown)" in one_line(err)  # a command's plain value
    code, _, err = cli(capsys, sessions_root, "experiment", "base", "define", "--id", "e",
                       "--workload", "fake_workloads:Echo", "--values", "1", "--param", "p=" + "z" * 5000)
    assert code == 2 and "the p for experiments.e.params" in one_line(err)  # the field's bound


# -- a secret already in a hand-edited file -------------------------------------------------------
def test_secrets_pasted_in_order_toml_is_hidden_by_order_show_and_not_written_back(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path
) -> None:
    code, _, err = cli(capsys, sessions_root, "order", "base", "event", "payment-sent",
                       "--note", "clicked")
    assert code == 0, err
    phrase = Mnemonic("korean").generate(128)
    toml = base / "order.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace('"clicked"', json.dumps(phrase)),
                    encoding="utf-8")
    for args in (["order", "base", "show"], ["order", "base", "show", "--json"]):
        code, out, err = cli(capsys, sessions_root, *args)
        assert code == 0, err
        assert phrase.split()[0] not in out + err and HIDDEN in out
        assert "order.toml: events[0].note: hidden, it looked like a seed phrase" in err
    code, _, err = cli(capsys, sessions_root, "order", "base", "event", "access-received",
                       "--source", "tracking")
    assert code == 0, err
    text = toml.read_text(encoding="utf-8")
    assert phrase.split()[0] not in text and HIDDEN in text  # not carried over on rewrite


def test_secrets_pasted_in_a_checklist_note_is_hidden_and_not_written_back(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path
) -> None:
    toml = base / "checklist.toml"
    toml.write_text(f'schema = 1\n[items."g1.one-sentence"]\nnote = "{HEX_KEY}"\n', encoding="utf-8")
    code, out, err = cli(capsys, sessions_root, "checklist", "base")
    assert code == 0, err
    assert HEX_KEY not in out + err and HIDDEN in out
    assert "items.g1.one-sentence.note: hidden, it looked like a private key" in err
    code, _, err = cli(capsys, sessions_root, "checklist", "base", "done", "g1.approver")
    assert code == 0, err
    assert HEX_KEY not in toml.read_text(encoding="utf-8")


def test_secrets_never_reach_the_journal(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    journal.append(path, journal.record("worker_stderr", {
        "lines": ["loading", f"debug key={HEX_KEY}"], "code_revision": HEX_KEY}))
    rec = journal.read(path)[0]
    assert rec["lines"] == ["loading", "debug key=[HIDDEN: private key]"]
    assert rec["code_revision"] == HEX_KEY


def test_secrets_mask_free_text_names_field_and_kind_never_the_value() -> None:
    doc, warnings = mask_free_text({"events": [{"note": HEX_KEY}]}, "order.toml")
    assert doc == {"events": [{"note": HIDDEN}]}
    assert warnings == ["order.toml: events[0].note: hidden, it looked like a private key; remove "
                        "it from the file (it will not be written back)"]


def test_secrets_pasted_in_session_toml_is_hidden_and_dropped_by_the_next_update(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path
) -> None:
    code, _, err = cli(capsys, sessions_root, "experiment", "base", "define", "--id", "e",
                       "--workload", "command", "--values", "1", "--command", "true {batch}",
                       "--param", "token=abc", "--param-via-env")
    assert code == 0, err
    toml = base / "session.toml"
    key = _base58(87)
    toml.write_text(toml.read_text(encoding="utf-8").replace('"abc"', f'"{key}"'), encoding="utf-8")
    code, out, err = cli(capsys, sessions_root, "experiment", "base", "list", "--json")
    assert code == 0, err
    assert key not in out + err and HIDDEN in out
    assert "session.toml: experiments.e.params.token: hidden, it looked like a private key" in err
    code, _, err = cli(capsys, sessions_root, "package", "base", "--lots", "2")
    assert code == 0, err
    assert key not in toml.read_text(encoding="utf-8")


def test_observed_text_may_be_longer_than_a_note_but_is_still_checked() -> None:
    long = "pid 1234 on GPU 0 (1000 bytes), " * 200  # a busy server's concurrent load
    check_free_text({"environment": {"concurrent_load": long},
                     "items": {"g6.device-check": {"evidence": long}}}, "session.toml")
    with pytest.raises(BadInput, match="the note for x "):
        check_free_text({"items": {"x": {"note": long}}}, "checklist.toml")
    with pytest.raises(BadInput, match="refused"):
        check_free_text({"environment": {"concurrent_load": long + HEX_KEY}}, "session.toml")


# -- the note's size, addresses, word forms, assignments ---------------
def test_a_10_kb_note_names_the_field_first_and_the_file_as_the_destination(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path
) -> None:
    before = digest(base)
    code, _, err = cli(capsys, sessions_root, "checklist", "base", "note", "g1.approver",
                       "n" * 10_240)
    assert code == 2, err
    assert one_line(err).endswith("error: the note for g1.approver is 10,240 bytes; at most 4,096 bytes "
                             "(4 KiB); nothing was written to checklist.toml")
    assert digest(base) == before


PAYMENT = ["--asset", "USDT", "--network", "TRC20", "--amount", "12.50",
           "--expires", "2099-01-01T00:00:00Z"]


@pytest.mark.parametrize("key", [HEX_KEY, "0x" + HEX_KEY, HEX_KEY.upper()])
def test_a_64_hex_destination_is_refused_like_a_private_key(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path, key: str
) -> None:
    line = _refused(capsys, sessions_root, base, key, "order", "base", "payment", *PAYMENT,
                    "--destination", key)
    assert "destination" in line and "private key" in line


@pytest.mark.parametrize("address", [
    "0x52908400098527886E0F7030069857D2E4169EE7",  # Ethereum, 40 hex
    "1BoatSLRHtKNngkdXEeobR76b53LETtpyT",  # Bitcoin base58
    "3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy",  # Bitcoin P2SH
    "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq",  # Bitcoin bech32
    "bc1p5d7rjq7g6rdk2yhzks9smlaqtedr4dekq08ge8ztwac72sfr9rusxg3297",  # bech32m (taproot)
    "7EcDhSYGxXyscszYEp35KHN8vvw3svAuLKTzXwCFLtV",  # Solana, 43 base58
    "So11111111111111111111111111111111111111112",  # Solana, 43
    "4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4T",  # Solana, 44
    "DRpbCBMxVnDK7maPM5tGv6MvB3v1sRMC86PZ8okm21hy",  # 44
    _base58(32, seed=7),
])
def test_real_destination_addresses_are_accepted(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path, address: str
) -> None:
    assert find_secret(address, address=True) is None
    code, _, err = cli(capsys, sessions_root, "order", "base", "payment", *PAYMENT,
                       "--destination", address)
    assert code == 0, err


def test_bip39_words_by_their_four_letter_prefixes_are_refused() -> None:
    words = Mnemonic("english").generate(128).split()
    short = " ".join(w[:4] for w in words)
    reason = find_secret(short)
    assert reason is not None and "seed phrase" in reason
    assert find_secret("aban abil able abou abov abse abso abst absu abus acce acci") is not None
    assert find_secret(" ".join(w[:4] for w in words[:11])) is None


@pytest.mark.parametrize("language", ["english", "spanish", "italian", "french", "czech"])
def test_bip39_words_written_together_are_refused(language: str) -> None:
    import unicodedata

    # Fixed entropy: some runs of 11 random words split into 12 list words when joined
    # (a list word can be two others), which the detector rightly refuses.
    words = Mnemonic(language).to_mnemonic(bytes(range(16))).split()
    joined = "".join(c for c in unicodedata.normalize("NFKD", "".join(words))
                     if not unicodedata.combining(c))
    assert find_secret(joined) is not None
    assert find_secret(f"seed: {joined.upper()} (keep safe)") is not None
    assert find_secret("".join(words[:11])) is None


def test_long_ordinary_words_written_together_pass() -> None:
    for text in ("thequickbrownfoxjumpsoverthelazydogwhilethecatsleeps" * 2,
                 "supercalifragilisticexpialidociousantidisestablishmentarianism",
                 "a" * 400, "abandon" * 11):
        assert find_secret(text) is None, text[:30]


@pytest.mark.parametrize("text", [
    "pw=Tr0ub4dor&3xyz", "pwd: hunter2hunter", "passwd=s3cr3t!", "token=ghp_0123456789abcdef",
    "api_key=sk-abcdefghijklmnop", "secret: correct-horse", "API-KEY: zzz", "Password : x",
    "login as root, PWD=Tr0ub4dor&3",
])
def test_password_and_token_assignments_are_refused_never_echoed(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path, text: str
) -> None:
    reason = find_secret(text)
    assert reason is not None and "password" in reason
    value = text.split("=")[-1].split(":")[-1].strip()
    line = _refused(capsys, sessions_root, base, value * 3, "order", "base", "event",
                    "payment-sent", "--note", text)
    assert value not in line


@pytest.mark.parametrize("text", ["max_tokens=512", "context tokens: 4096", "the secret is kept",
                                  "pwd is /home/me", "passes: 3", "tokens=5"])
def test_ordinary_text_near_those_words_passes(text: str) -> None:
    assert find_secret(text) is None


def test_secrets_a_phrase_with_the_russian_list_word_stored_with_replacement_characters_is_refused() -> None:
    """One word of mnemonic's Russian list holds two U+FFFD: a phrase with it is still one phrase."""
    words = Mnemonic("russian").wordlist
    odd = next((w for w in words if "\ufffd" in w), None)
    if odd is None:
        pytest.skip("this mnemonic's Russian list no longer stores a word with U+FFFD")
    phrase = " ".join([odd] + [w for w in words if "\ufffd" not in w][:11])
    assert find_secret(f"wallet: {phrase}") is not None
