"""Server TLS material, loaded and checked once: the same code for every listener and for `check-config`."""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path


class TlsLoadError(ValueError):
    """The cert/key pair cannot serve TLS (unreadable, not PEM, or the key does not match the certificate)."""


@dataclass(frozen=True, slots=True)
class ServerTls:
    """A checked cert/key pair: `ssl_context()` for asyncio servers, `key`/`cert` PEM bytes for grpc."""

    cert_file: str
    key_file: str
    cert: bytes
    key: bytes
    context: ssl.SSLContext  # the one the pair was checked with

    def ssl_context(self) -> ssl.SSLContext:
        return self.context


def load_server_tls(cert_file: str, key_file: str) -> ServerTls:
    """Read and check a PEM certificate chain and its private key; TlsLoadError says what is wrong."""
    try:
        cert, key = Path(cert_file).read_bytes(), Path(key_file).read_bytes()
    except OSError as exc:
        raise TlsLoadError(f"cannot read {exc.filename}: {exc.strerror}") from None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(cert_file, key_file)
    except ssl.SSLError as exc:
        reason = exc.reason or str(exc)
        hint = " (are cert_file and key_file swapped?)" if b"PRIVATE KEY" in cert or b"CERTIFICATE" in key else ""
        problem = f"cert_file {cert_file} and key_file {key_file} do not form a TLS pair: {reason}{hint}"
        raise TlsLoadError(problem) from None
    return ServerTls(cert_file, key_file, cert, key, context)
