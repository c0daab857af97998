"""TLS and bearer-token settings, shared by the receivers (`receivers.tls`, `receivers.auth`) and the API (`api.tls`,
`api.auth`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field, PrivateAttr, field_validator, model_validator

from .locate import LocatedError
from .units import Section


def _existing_file(value: str | None) -> str | None:
    if value is not None and not Path(value).is_file():
        raise ValueError(f"file not found: {value}")
    return value


class TlsConfig(Section):
    """Serve a listener over TLS when both files are set (paths relative to the working directory)."""

    cert_file: str | None = None
    key_file: str | None = None

    _check_files = field_validator("cert_file", "key_file")(_existing_file)

    @model_validator(mode="after")
    def _both_or_neither(self) -> TlsConfig:
        if (self.cert_file is None) != (self.key_file is None):
            missing = "key_file" if self.key_file is None else "cert_file"
            raise LocatedError([((missing,), "cert_file and key_file must be set together")])
        return self

    @property
    def enabled(self) -> bool:
        return self.cert_file is not None


class AuthConfig(Section):
    """Require `Authorization: Bearer <token>` when a token is configured."""

    bearer_token: Annotated[str, Field(min_length=1)] | None = Field(default=None, repr=False)
    bearer_token_file: str | None = None
    _file_token: str | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _one_source(self) -> AuthConfig:
        if self.bearer_token is not None and self.bearer_token_file is not None:
            raise LocatedError([(("bearer_token_file",), "set bearer_token or bearer_token_file, not both")])
        self._file_token = None
        if self.bearer_token_file is not None:
            try:
                token = Path(self.bearer_token_file).read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError) as exc:
                problem = f"cannot read {self.bearer_token_file}: {getattr(exc, 'strerror', None) or exc}"
                raise LocatedError([(("bearer_token_file",), problem)]) from None
            if not token:
                raise LocatedError([(("bearer_token_file",), f"{self.bearer_token_file} is empty")])
            self._file_token = token
        return self

    def token(self) -> str | None:
        """The configured token (read from bearer_token_file at load time), or None for no auth."""
        return self.bearer_token if self.bearer_token is not None else self._file_token
