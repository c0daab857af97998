"""SourceHttp against a local aiohttp server: whole bodies however large, retries, clear errors, tokens."""

from __future__ import annotations

import asyncio
import json
import ssl
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from monitor.config.sources import TempoSourceConfig
from monitor.sources.base import SourceError
from monitor.sources.http import SourceHttp
from tests.monitor.sources.serving import answering, serving


def client(url: str, **options: Any) -> SourceHttp:
    config = TempoSourceConfig.model_validate({"type": "tempo", "name": "t", "url": url, **options})

    async def no_sleep(_: float) -> None:
        return None

    return SourceHttp(config, sleep=no_sleep)


@pytest.mark.integration
def test_a_large_body_arrives_whole() -> None:
    document = {"items": ["x" * 1000 for _ in range(5000)]}  # 5 MB, sent in many chunks

    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        data = json.dumps(document).encode()
        for start in range(0, len(data), 100_000):
            await response.write(data[start : start + 100_000])
            await asyncio.sleep(0)
        await response.write_eof()
        return response

    async def main() -> Any:
        async with serving(answering(handler)) as url:
            http = client(url)
            try:
                return await http.get_json("/big")
            finally:
                await http.close()

    assert asyncio.run(main()) == document


@pytest.mark.integration
def test_retries_then_clear_errors_without_the_token(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("file-token-123\n")
    answers = [503, 200, 401, 404, 500, 500, 500]
    seen: list[str | None] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization"))
        status = answers.pop(0)
        return web.json_response({"ok": status == 200}, status=status)

    async def main() -> list[Any]:
        async with serving(answering(handler)) as url:
            http = client(url, token_file=str(token_file), retries=2, headers={"X-Org": "acme"})
            found: list[Any] = [await http.get_json("/api/search", {"q": "{}"})]
            for _ in range(3):
                with pytest.raises(SourceError) as caught:
                    await http.get_json("/api/search")
                found.append(caught.value)
            await http.close()
            return found

    ok, auth, missing, server = asyncio.run(main())
    assert ok == {"ok": True} and seen[0] == seen[1] == "Bearer file-token-123"
    assert auth.kind == "auth" and "401 Unauthorized" in str(auth) and "/api/search" in str(auth)
    assert "file-token-123" not in str(auth)
    assert missing.kind == "client" and "404" in str(missing)
    assert server.kind == "server" and len(seen) == 7  # 500 tried 1 + 2 retries


def test_a_refused_connection_and_a_missing_token_variable() -> None:
    async def main() -> SourceError:
        http = client("http://127.0.0.1:9", retries=1)
        with pytest.raises(SourceError) as caught:
            await http.get_json("/x")
        await http.close()
        return caught.value

    assert asyncio.run(main()).kind == "connection"
    with pytest.raises(ValueError, match=r"\$NO_SUCH_TOKEN_VAR is not set"):
        client("http://127.0.0.1:9", token_env="NO_SUCH_TOKEN_VAR")


@pytest.mark.integration
def test_https_with_a_private_ca_and_a_clear_error_without_it(tmp_path: Path) -> None:
    key, cert = _certificate(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)

    async def handler(request: web.Request) -> web.Response:
        return web.json_response({"secure": request.secure})

    async def main() -> tuple[Any, SourceError, Any]:
        app = web.Application()
        app.router.add_get("/x", handler)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
        await site.start()
        url = f"https://127.0.0.1:{runner.addresses[0][1]}"
        try:
            trusted = client(url, tls={"ca_file": str(cert)})
            untrusted = client(url, retries=0)
            unchecked = client(url, tls={"insecure_skip_verify": True})
            ok = await trusted.get_json("/x")
            with pytest.raises(SourceError) as caught:
                await untrusted.get_json("/x")
            skipped = await unchecked.get_json("/x")
            for http in (trusted, untrusted, unchecked):
                await http.close()
            return ok, caught.value, skipped
        finally:
            await runner.cleanup()

    ok, refused, skipped = asyncio.run(main())
    assert ok == {"secure": True} and skipped == {"secure": True}
    assert refused.kind == "connection" and "certificate" in str(refused).lower()


def _certificate(directory: Path) -> tuple[Path, Path]:
    import subprocess

    key, cert = directory / "key.pem", directory / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert), "-days",
         "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return key, cert
