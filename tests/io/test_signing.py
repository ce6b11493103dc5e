"""worker.io.signing: Ed25519 (RFC 8032) and HMAC-SHA256 (RFC 2104) signatures of config
records, carried in the ``contract-gate-signature`` header (pure: no broker)."""

from __future__ import annotations

import base64
import hashlib
import hmac
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ec import SECP256R1, generate_private_key
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from worker.core.errors import SigningKeyError
from worker.io.signing import (
    SIGNATURE_HEADER,
    RecordSigning,
    load_signing_key,
    load_verify_key,
    signed_bytes,
)

TOPIC, KEY, VALUE = "gis.contracts", b"admin_boundaries/v1.0/abc", b"\x02avro-bytes"
SECRET = b"0123456789abcdef0123456789abcdef-shared"


def ed25519_pair(tmp_path: Path, name: str) -> tuple[str, str]:
    """(private key PEM path, public key PEM path), as `openssl genpkey -algorithm ed25519`."""
    key = Ed25519PrivateKey.generate()
    private, public = tmp_path / f"{name}.pem", tmp_path / f"{name}.pub.pem"
    private.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    public.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return str(private), str(public)


def hmac_file(tmp_path: Path, secret: bytes = SECRET, name: str = "hmac.secret") -> str:
    path = tmp_path / name
    path.write_bytes(secret + b"\n")  # as `openssl rand -hex 32 > file` leaves it
    return str(path)


def test_the_signed_bytes_bind_topic_key_and_value_unambiguously() -> None:
    assert signed_bytes("t", b"k", b"v") == (
        b"contract-gate/config-record/v1\x00"
        b"\x01\x00\x00\x00\x00\x00\x00\x00\x01t"
        b"\x01\x00\x00\x00\x00\x00\x00\x00\x01k"
        b"\x01\x00\x00\x00\x00\x00\x00\x00\x01v"
    )
    assert signed_bytes("t", "k", None).endswith(b"k\x00")  # a tombstone differs from b""
    assert signed_bytes("t", b"k", None) != signed_bytes("t", b"k", b"")
    assert signed_bytes("t", b"ab", b"c") != signed_bytes("t", b"a", b"bc")


def test_ed25519_good_signature_passes(tmp_path: Path) -> None:
    private, public = ed25519_pair(tmp_path, "a")
    signer, verifier = load_signing_key(private), load_verify_key(public)
    name, value = signer.header(TOPIC, KEY, VALUE)
    assert name == SIGNATURE_HEADER == "contract-gate-signature"
    assert value.startswith(b"ed25519:")
    assert len(base64.b64decode(value[len(b"ed25519:") :])) == 64  # RFC 8032 section 5.1.6
    assert verifier.check(TOPIC, KEY, VALUE, [("other", b"x"), (name, value)]) is None
    assert (signer.algorithm, verifier.algorithm) == ("ed25519", "ed25519")


def test_hmac_good_signature_is_hmac_sha256_of_the_signed_bytes(tmp_path: Path) -> None:
    path = hmac_file(tmp_path)
    signer, verifier = load_signing_key(path), load_verify_key(path)
    name, value = signer.header(TOPIC, KEY, VALUE)
    expected = hmac.new(SECRET, signed_bytes(TOPIC, KEY, VALUE), hashlib.sha256).digest()
    assert value == b"hmac-sha256:" + base64.b64encode(expected)
    assert verifier.check(TOPIC, KEY, VALUE, [(name, value)]) is None


@pytest.mark.parametrize("kind", ["ed25519", "hmac"])
def test_wrong_key_tampered_key_value_topic_and_missing_are_refused(
    tmp_path: Path, kind: str
) -> None:
    if kind == "ed25519":
        (a_private, a_public), (b_private, _) = (
            ed25519_pair(tmp_path, "a"),
            ed25519_pair(tmp_path, "b"),
        )
    else:
        a_private = a_public = hmac_file(tmp_path)
        b_private = hmac_file(tmp_path, b"another-secret-of-at-least-32-bytes!", "b.secret")
    verifier = load_verify_key(a_public)
    header = load_signing_key(a_private).header(TOPIC, KEY, VALUE)
    forged = load_signing_key(b_private).header(TOPIC, KEY, VALUE)
    algorithm = verifier.algorithm
    mismatch = f"{algorithm} signature does not match this topic, key and value"
    cases = {
        "wrong key": (TOPIC, KEY, VALUE, [forged]),
        "other key": (TOPIC, b"admin_boundaries/v1.1/abc", VALUE, [header]),
        "other value": (TOPIC, KEY, VALUE + b"x", [header]),
        "other topic": ("gis.contracts.copy", KEY, VALUE, [header]),
        "tombstone": (TOPIC, KEY, None, [header]),
    }
    for what, (topic, key, value, headers) in cases.items():
        fault = verifier.check(topic, key, value, headers)
        assert fault is not None and fault[0] == "bad_signature", what
        assert mismatch in fault[1], what
    assert verifier.check(TOPIC, KEY, VALUE, []) == (
        "unsigned_record",
        f"no contract-gate-signature header: this worker accepts only config records signed "
        f"with the {algorithm} key of {a_public}",
    )
    assert verifier.check(TOPIC, KEY, VALUE, None)[0] == "unsigned_record"  # type: ignore[index]
    assert verifier.check(TOPIC, KEY, VALUE, [header, header]) == (
        "bad_signature",
        "2 contract-gate-signature headers (one is written)",
    )
    bad_b64 = (SIGNATURE_HEADER, algorithm.encode() + b":***")
    assert verifier.check(TOPIC, KEY, VALUE, [bad_b64]) == (
        "bad_signature",
        "the signature is not base64",
    )
    other = "hmac-sha256" if algorithm == "ed25519" else "ed25519"
    swapped = (SIGNATURE_HEADER, other.encode() + b":" + header[1].split(b":")[1])
    assert verifier.check(TOPIC, KEY, VALUE, [swapped]) == (
        "bad_signature",
        f"signature is {other!r}, this worker verifies {algorithm} signatures ({a_public})",
    )


def test_key_files_that_cannot_be_used_name_the_flag_and_the_fix(tmp_path: Path) -> None:
    private, public = ed25519_pair(tmp_path, "a")
    with pytest.raises(SigningKeyError) as err:
        load_verify_key(private)
    assert str(err.value) == (
        f"--verify-key / CONTRACT_GATE_VERIFY_KEY_FILE: {private} is a private key; give "
        "workers the public key only (`openssl pkey -in publisher.pem -pubout -out "
        "publisher.pub.pem`)"
    )
    with pytest.raises(SigningKeyError, match="--signing-key / CONTRACT_GATE_SIGNING_KEY_FILE: "):
        load_signing_key(public)
    short = hmac_file(tmp_path, b"password", "short.secret")
    with pytest.raises(SigningKeyError) as err:
        load_signing_key(short)
    assert "has 8 bytes, fewer than 32; make a secret with `openssl rand -hex 32" in str(err.value)
    assert "password" not in str(err.value)  # the secret is never echoed
    with pytest.raises(SigningKeyError, match=r"cannot read key file .*missing\.pem"):
        load_verify_key(str(tmp_path / "missing.pem"))
    ec = tmp_path / "ec.pem"
    ec.write_bytes(
        generate_private_key(SECP256R1()).private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    with pytest.raises(
        SigningKeyError, match=r"ec\.pem is a private key of another algorithm, not Ed25519"
    ):
        load_signing_key(str(ec))
    encrypted = tmp_path / "enc.pem"
    encrypted.write_bytes(
        Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"pw"),
        )
    )
    with pytest.raises(SigningKeyError, match=r"encrypted \(give an unencrypted key\)"):
        load_signing_key(str(encrypted))


def test_keys_stay_out_of_repr(tmp_path: Path) -> None:
    path = hmac_file(tmp_path)
    signing = RecordSigning.from_files(path, path)
    assert SECRET.decode() not in repr(signing)
    assert repr(signing.signer) == f"SigningKey(algorithm='hmac-sha256', source='{path}')"
    assert RecordSigning.from_files(None, "") == RecordSigning(None, None)
