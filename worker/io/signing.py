"""Signatures of config-topic records: Ed25519 (RFC 8032) or HMAC-SHA256 (RFC 2104).

Issue 30: a worker given a verify key accepts a record of ``gis.contracts`` only when it
carries a valid signature by the publisher's key, so a principal that can write the topic
but does not hold the key cannot make a contract record that compaction turns into truth.

Where the signature travels
    In the Kafka record header :data:`SIGNATURE_HEADER` (``contract-gate-signature``),
    value ``<algorithm>:<base64 signature>`` (ASCII), e.g. ``ed25519:3q2+7w...``. A header
    leaves the Avro ``ContractRecord`` unchanged (every reader and every stored record keeps
    decoding as before) and lets the signature cover the exact key and value bytes on the
    wire, not a re-encoding of a decoded record.

What is signed
    :func:`signed_bytes`: a domain tag, then the topic, the key and the value, each as a
    presence byte and an 8-byte big-endian length before its bytes. Binding the topic and
    the key means a signed record cannot be replayed under another key (a v1 document as
    the v2 record) nor onto another topic; the lengths make the encoding unambiguous.

Algorithms
    ``ed25519`` (recommended): the publisher holds the private key (PEM, PKCS#8), workers
    the public key (PEM, SubjectPublicKeyInfo); a worker cannot sign. ``hmac-sha256``: one
    shared secret of at least :data:`MIN_HMAC_SECRET_BYTES` bytes (RFC 2104 section 3: not
    shorter than the hash output), held by publisher and workers alike: any holder signs.

Key material is never logged, printed or put in a message: errors name the file and flag.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from worker.core.errors import SigningKeyError

__all__ = [
    "MIN_HMAC_SECRET_BYTES",
    "SIGNATURE_HEADER",
    "RecordSigning",
    "SigningKey",
    "VerifyKey",
    "load_signing_key",
    "load_verify_key",
    "signed_bytes",
]

#: Kafka record header holding a config record's signature.
SIGNATURE_HEADER = "contract-gate-signature"
#: Domain separation: these bytes are signed for no other purpose.
DOMAIN = b"contract-gate/config-record/v1\x00"
#: Shortest HMAC secret accepted, bytes (the SHA-256 output length, RFC 2104 section 3).
MIN_HMAC_SECRET_BYTES = 32
#: Largest key file read, bytes (a PEM key is a few hundred).
MAX_KEY_FILE_BYTES = 64 * 1024
ED25519_FIX = (
    "make a key pair with `openssl genpkey -algorithm ed25519 -out publisher.pem` and "
    "`openssl pkey -in publisher.pem -pubout -out publisher.pub.pem`"
)
HMAC_FIX = "make a secret with `openssl rand -hex 32 > config-hmac.secret`"

Headers = Iterable[tuple[str, bytes | str | None]] | None


def _field(data: bytes | None) -> bytes:
    if data is None:
        return b"\x00"
    return b"\x01" + len(data).to_bytes(8, "big") + data


def signed_bytes(topic: str, key: bytes | str | None, value: bytes | None) -> bytes:
    """The canonical bytes a config record's signature covers.

    Parameters
    ----------
    topic : str
        The config topic's name (``gis.contracts``).
    key : bytes or str or None
        The record key as written (a str is taken as its UTF-8 bytes).
    value : bytes or None
        The record value as written (None: a tombstone).

    Returns
    -------
    bytes
        ``DOMAIN || f(topic) || f(key) || f(value)``, where ``f(None) = 0x00`` and
        ``f(b) = 0x01 || len(b) as 8 bytes big-endian || b``.
    """
    raw_key = key.encode("utf-8") if isinstance(key, str) else key
    return DOMAIN + _field(topic.encode("utf-8")) + _field(raw_key) + _field(value)


@dataclass(frozen=True)
class SigningKey:
    """A publisher's key: signs config records (:meth:`header`).

    ``algorithm`` is ``ed25519`` (RFC 8032) or ``hmac-sha256`` (RFC 2104); ``source`` names
    the file (never the key). The key itself is kept out of ``repr``.
    """

    algorithm: str
    source: str
    _sign: Callable[[bytes], bytes] = field(repr=False, compare=False)

    def sign(self, topic: str, key: bytes | str | None, value: bytes | None) -> bytes:
        """The raw signature (64 bytes Ed25519, 32 bytes HMAC) of :func:`signed_bytes`."""
        return self._sign(signed_bytes(topic, key, value))

    def header(self, topic: str, key: bytes | str | None, value: bytes | None) -> tuple[str, bytes]:
        """The record header ``(SIGNATURE_HEADER, b"<algorithm>:<base64>")`` to produce with
        the record."""
        text = base64.b64encode(self.sign(topic, key, value))
        return SIGNATURE_HEADER, self.algorithm.encode("ascii") + b":" + text


@dataclass(frozen=True)
class VerifyKey:
    """A worker's key: checks config records' signatures (:meth:`check`)."""

    algorithm: str
    source: str
    _verify: Callable[[bytes, bytes], bool] = field(repr=False, compare=False)

    def check(
        self, topic: str, key: bytes | str | None, value: bytes | None, headers: Headers
    ) -> tuple[str, str] | None:
        """None when the record carries exactly one valid signature by this key, else
        ``(reason, message)``: reason ``unsigned_record`` (no signature header) or
        ``bad_signature`` (several, malformed, another algorithm, or not by this key, or
        not over these topic, key and value bytes)."""
        found = [v for k, v in headers or () if k == SIGNATURE_HEADER]
        if not found:
            return "unsigned_record", (
                f"no {SIGNATURE_HEADER} header: this worker accepts only config records "
                f"signed with the {self.algorithm} key of {self.source}"
            )
        if len(found) > 1:
            return "bad_signature", f"{len(found)} {SIGNATURE_HEADER} headers (one is written)"
        raw = found[0].encode("utf-8", "replace") if isinstance(found[0], str) else found[0] or b""
        algorithm, sep, text = raw.partition(b":")
        if not sep or algorithm.decode("ascii", "replace") != self.algorithm:
            shown = algorithm.decode("ascii", "replace")[:20] if sep else "no algorithm"
            return "bad_signature", (
                f"signature is {shown!r}, this worker verifies {self.algorithm} "
                f"signatures ({self.source})"
            )
        try:
            signature = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            return "bad_signature", "the signature is not base64"
        if not self._verify(signature, signed_bytes(topic, key, value)):
            return "bad_signature", (
                f"{self.algorithm} signature does not match this topic, key and value under "
                f"the key of {self.source} (signed by another key, or altered)"
            )
        return None


@dataclass(frozen=True)
class RecordSigning:
    """What a process does with config-record signatures: sign what it writes (``signer``,
    publishers) and refuse what is not signed by ``verifier`` (workers, and the CLI's reads
    of the config topic). Both None: signatures are neither written nor checked."""

    signer: SigningKey | None = None
    verifier: VerifyKey | None = None

    @classmethod
    def from_files(cls, signing_key: str | None, verify_key: str | None) -> RecordSigning:
        """Load the keys named (None or empty: none).

        Raises
        ------
        SigningKeyError
            A key file cannot be read or holds no usable key (the message names the flag).
        """
        return cls(
            load_signing_key(signing_key) if signing_key else None,
            load_verify_key(verify_key) if verify_key else None,
        )


SIGNING_FLAG = "--signing-key / CONTRACT_GATE_SIGNING_KEY_FILE"
VERIFY_FLAG = "--verify-key / CONTRACT_GATE_VERIFY_KEY_FILE"


def _read(path: str, flag: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_KEY_FILE_BYTES + 1)
    except OSError as exc:
        raise SigningKeyError(
            f"{flag}: cannot read key file {path}: {exc.strerror or exc}; give the path of "
            "an Ed25519 PEM key or an HMAC secret file"
        ) from None
    if len(data) > MAX_KEY_FILE_BYTES:
        raise SigningKeyError(
            f"{flag}: {path} has more than {MAX_KEY_FILE_BYTES} bytes: not a key file; "
            "give an Ed25519 PEM key or an HMAC secret"
        )
    return data


def _hmac_secret(data: bytes, path: str, flag: str) -> bytes:
    secret = data[:-2] if data.endswith(b"\r\n") else data[:-1] if data.endswith(b"\n") else data
    if len(secret) < MIN_HMAC_SECRET_BYTES:
        raise SigningKeyError(
            f"{flag}: {path} is not a PEM key and, as an HMAC-SHA256 secret, has "
            f"{len(secret)} bytes, fewer than {MIN_HMAC_SECRET_BYTES}; {HMAC_FIX}, or "
            f"use Ed25519: {ED25519_FIX}"
        )
    return secret


def _is_pem(data: bytes) -> bool:
    return data.lstrip().startswith(b"-----BEGIN")


def load_signing_key(path: str, flag: str = SIGNING_FLAG) -> SigningKey:
    """A publisher's key from ``path``: an unencrypted Ed25519 private key in PEM, or
    else (any other bytes) an HMAC-SHA256 secret (one trailing newline dropped).

    Raises
    ------
    SigningKeyError
        Unreadable; a PEM that is not an unencrypted Ed25519 private key; a secret shorter
        than :data:`MIN_HMAC_SECRET_BYTES`.
    """
    data = _read(path, flag)
    if not _is_pem(data):
        secret = _hmac_secret(data, path, flag)
        return SigningKey(
            "hmac-sha256", path, lambda m: hmac.new(secret, m, hashlib.sha256).digest()
        )
    from cryptography.exceptions import UnsupportedAlgorithm  # here: 70 ms of every start-up
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    try:
        private = serialization.load_pem_private_key(data, password=None)
    except (TypeError, ValueError, UnsupportedAlgorithm) as exc:
        why = "encrypted (give an unencrypted key)" if isinstance(exc, TypeError) else None
        raise SigningKeyError(
            f"{flag}: {path} is not a usable PEM private key "
            f"({why or 'a public key, or not PEM'}); the publisher signs with an Ed25519 "
            f"private key: {ED25519_FIX}"
        ) from None
    if not isinstance(private, Ed25519PrivateKey):
        raise SigningKeyError(
            f"{flag}: {path} is a private key of another algorithm, not Ed25519; {ED25519_FIX}"
        )
    return SigningKey("ed25519", path, private.sign)


def load_verify_key(path: str, flag: str = VERIFY_FLAG) -> VerifyKey:
    """A worker's key from ``path``: an Ed25519 public key in PEM, or else (any other
    bytes) the HMAC-SHA256 secret the publisher signs with.

    Raises
    ------
    SigningKeyError
        Unreadable; a private key (workers get the public key only); a PEM that is not an
        Ed25519 public key; a secret shorter than :data:`MIN_HMAC_SECRET_BYTES`.
    """
    data = _read(path, flag)
    if not _is_pem(data):
        secret = _hmac_secret(data, path, flag)

        def check_mac(signature: bytes, message: bytes) -> bool:
            expected = hmac.new(secret, message, hashlib.sha256).digest()
            return hmac.compare_digest(signature, expected)

        return VerifyKey("hmac-sha256", path, check_mac)
    if b"PRIVATE KEY" in data:
        raise SigningKeyError(
            f"{flag}: {path} is a private key; give workers the public key only "
            "(`openssl pkey -in publisher.pem -pubout -out publisher.pub.pem`)"
        )
    from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        public = serialization.load_pem_public_key(data)
    except (ValueError, UnsupportedAlgorithm):
        public = None
    if not isinstance(public, Ed25519PublicKey):
        raise SigningKeyError(f"{flag}: {path} is not an Ed25519 public key in PEM; {ED25519_FIX}")
    ed_key = public

    def check_ed25519(signature: bytes, message: bytes) -> bool:
        with contextlib.suppress(InvalidSignature):
            return ed_key.verify(signature, message) is None  # raises when it does not verify
        return False

    return VerifyKey("ed25519", path, check_ed25519)
