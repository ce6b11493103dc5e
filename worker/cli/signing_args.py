"""``--signing-key`` and ``--verify-key``: config-record signatures (:mod:`worker.io.signing`).

The flags name files, never keys: a key on a command line would be in the shell history
and the process list. Each flag overrides its environment variable (a file path too).
"""

from __future__ import annotations

import argparse

__all__ = ["add_signing_args"]

SIGNING_HELP = (
    "sign the config records this command writes (header contract-gate-signature over topic, "
    "key and value): an Ed25519 private key in PEM, or a file holding an HMAC-SHA256 secret "
    "of at least 32 bytes (env CONTRACT_GATE_SIGNING_KEY_FILE; default: unsigned)"
)
VERIFY_HELP = (
    "accept only config records signed with this key; unsigned or wrongly signed ones are "
    "refused and their layer fails closed: an Ed25519 public key in PEM, or the HMAC-SHA256 "
    "secret file (env CONTRACT_GATE_VERIFY_KEY_FILE; default: signatures are not checked)"
)


def add_signing_args(p: argparse.ArgumentParser, *, sign: bool) -> None:
    """Add ``--verify-key`` (and with ``sign``, ``--signing-key``) to ``p``."""
    g = p.add_argument_group("Config-record signatures (files; flags override the environment)")
    if sign:
        g.add_argument("--signing-key", metavar="FILE", help=SIGNING_HELP)
    g.add_argument("--verify-key", metavar="FILE", help=VERIFY_HELP)
