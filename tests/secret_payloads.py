"""Secrets of every kind gpusession must never store or show, and ordinary text it must keep.

``PAYLOADS``: ``{kind id: (text as a person or a workload would write it, [parts that must
never appear])}``. Shared by the tests of the detectors and of every field that stores or
shows text. The values are made up (random from a fixed seed), never real credentials.
"""

from __future__ import annotations

import random

from mnemonic import Mnemonic

_rng = random.Random(20261201)
_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_B64 = _ALNUM + "+/"


def _pick(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def _hex(n: int) -> str:
    return _pick("0123456789abcdef", n)


def _words(path: str, n: int) -> list[str]:
    from importlib import resources

    words = (resources.files("gpusession") / "data" / "wordlists" / path).read_text().split()
    return [_rng.choice(words) for _ in range(n)]


HEX64 = _hex(64)
_pem_body = [_pick(_B64, 64) for _ in range(6)]
_seed = Mnemonic("english").to_mnemonic(bytes(range(16)))  # 12 words, fixed
_seed24 = Mnemonic("english").to_mnemonic(bytes(range(32)))
_fr = Mnemonic("french").to_mnemonic(bytes(range(1, 17)))
_ja = Mnemonic("japanese").to_mnemonic(bytes(range(2, 18)))
_monero = " ".join(_words("monero-english.txt", 25))
_slip39 = " ".join(_words("slip39-english.txt", 20))

_gh = "ghp_" + _pick(_ALNUM, 36)
_ghpat = "github_pat_" + _pick(_ALNUM + "_", 82)
_aws = "AKIA" + _pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
_hf = "hf_" + _pick(_ALNUM, 34)
_openai = "sk-proj-" + _pick(_ALNUM, 20) + "T3BlbkFJ" + _pick(_ALNUM, 20)
_anthropic = "sk-ant-api03-" + _pick(_ALNUM + "_-", 80) + "Z9"
_slack = "xoxb-" + "1234567890123-1234567890123-" + _pick(_ALNUM, 24)
_stripe = "sk_live_" + _pick(_ALNUM, 24)
_google = "AIza" + _pick(_ALNUM + "_-", 35)
_jwt = "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0." + _pick(_ALNUM + "_-", 43)
_glpat = "glpat-" + _pick(_ALNUM, 20)
_pw = "Tr0ub4dor&3-" + _pick(_ALNUM, 6)
_age = "AGE-SECRET-KEY-1" + _pick(_BECH32, 58).upper()
_nsec = "nsec1" + _pick(_BECH32, 58)
_xprv = "xprv9s21ZrQH143K" + _pick(_B58, 95)
_wif = "5" + _pick("HJK", 1) + _pick(_B58, 49)
_b58key = _pick(_B58, 88)

PAYLOADS: dict[str, tuple[str, list[str]]] = {
    "github-token": (f"push failed with token {_gh}", [_gh[4:]]),
    "github-fine-grained": (f"GITHUB auth {_ghpat}", [_ghpat[11:]]),
    "gitlab-token": (f"remote: {_glpat}", [_glpat[6:]]),
    "aws-access-key": (f"aws configure: {_aws}", [_aws]),
    "aws-secret-assignment": (f"AWS_SECRET_ACCESS_KEY={_pick(_ALNUM, 40)}", []),
    "hugging-face-token": (f"login with {_hf} failed", [_hf[3:]]),
    "hf-token-assignment": (f"HF_TOKEN={_hf}", [_hf[3:]]),
    "openai-key": (f"openai.AuthenticationError: Incorrect API key provided: {_openai}", [_openai[8:]]),
    "anthropic-key": (f"client = Anthropic(api_key) # {_anthropic}", [_anthropic[13:]]),
    "slack-token": (f"slack {_slack}", [_slack[5:]]),
    "slack-webhook": ("posting to https://hooks.slack.com/services/T00000000/B00000000/"
                      "XXXXXXXXXXXXXXXXXXXXXXXX", ["XXXXXXXXXXXXXXXXXXXXXXXX"]),
    "stripe-key": (f"stripe.api_key {_stripe}", [_stripe[8:]]),
    "google-api-key": (f"maps key {_google}", [_google[4:]]),
    "jwt": (f"Authorization: Bearer {_jwt}", [_jwt[-43:]]),
    "url-credentials": (f"git clone https://alice:{_pw}@git.example.com/repo.git", [_pw]),
    "db-password-assignment": (f"DB_PASSWORD={_pw}", [_pw]),
    "password-colon": (f"password: {_pw}", [_pw]),
    "pem-rsa": ("-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(_pem_body)
                + "\n-----END RSA PRIVATE KEY-----", _pem_body),
    "openssh-key": ("-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(_pem_body[:4])
                    + "\n-----END OPENSSH PRIVATE KEY-----", _pem_body[:4]),
    "pgp-key": ("-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n" + "\n".join(_pem_body[2:])
                + "\n-----END PGP PRIVATE KEY BLOCK-----", _pem_body[2:]),
    "pem-body-without-header": ("\n".join(_pem_body[:4]), _pem_body[:4]),
    "putty-key": ("PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: me\n"
                  f"Public-Lines: 2\n{_pem_body[0]}\n{_pem_body[1]}\nPrivate-Lines: 1\n"
                  f"{_pem_body[2]}\nPrivate-MAC: {HEX64}", [_pem_body[2], HEX64]),
    "age-key": (f"# created\n{_age}", [_age[16:]]),
    "nostr-nsec": (f"my nostr {_nsec}", [_nsec[5:]]),
    "hex-64": (f"ValueError: key {HEX64}", [HEX64]),
    "hex-64-0x": (f"key=0x{HEX64}", [HEX64]),
    "hex-128": (f"ed25519 secret {_hex(128)}", []),
    "hex-64-split": (f"{HEX64[:32]}\n{HEX64[32:]}", [HEX64[:32], HEX64[32:]]),
    "base58-key": (f"solana key {_b58key}", [_b58key]),
    "wif-key": (f"wif {_wif}", [_wif]),
    "xprv": (f"backup {_xprv}", [_xprv[4:]]),
    "bip39-12": (_seed, [_seed]),
    "bip39-24-one-per-line": ("\n".join(_seed24.split()), [" ".join(_seed24.split()[3:9])]),
    "bip39-numbered": (" ".join(f"{i}. {w}" for i, w in enumerate(_seed.split(), 1)),
                       [_seed.split()[5]]),
    "bip39-without-spaces": ("".join(_seed.split()), ["".join(_seed.split())]),
    "bip39-capitals": (_seed.upper(), [_seed.upper()]),
    "bip39-french": (_fr, [_fr]),
    "bip39-japanese": (_ja, [_ja]),
    "monero-25": (_monero, [_monero]),
    "slip39-20": (_slip39, [_slip39]),
}
# a kind with no "never" parts is checked by its value: everything after the first "=" or
# the last space
for _k, (_text, _parts) in list(PAYLOADS.items()):
    if not _parts:
        PAYLOADS[_k] = (_text, [_text.split("=", 1)[1] if "=" in _text else _text.split()[-1]])

#: Text the product or a person writes that holds no secret: kept exactly.
ORDINARY = [
    "/srv/work/my model/checkpoint-500/pytorch_model.bin",
    f"sha256: {HEX64}",
    "code revision 3f2c1a9e8b7d6c5f4e3d2c1b0a9f8e7d6c5b4a39",
    "max_tokens=512 temperature=0.7 token_count=3",
    "PWD=/home/me",
    "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 23.69 GiB total capacity)",
    "Check that the GPU is visible with nvidia-smi before you start any run, then copy "
    "the results home and verify the copy; it is the last step of the day.",
    "https://huggingface.co/bert-base-uncased/resolve/main/config.json",
    "uses sk-learn-compatibility helpers",
    "run 550e8400-e29b-41d4-a716-446655440000 ended",
    "batch batch batch batch batch batch batch batch batch batch batch batch batch",
    "classes 体育新闻, 财经新闻",
]
