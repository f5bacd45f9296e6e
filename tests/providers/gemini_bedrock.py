"""Shared by the Gemini and Bedrock tests: their agents' configs, the keys
and AWS credentials the host is given, and a check of a recorded request's
SigV4 signature by botocore's own signer (not oma-host's)."""

from __future__ import annotations

import re
from typing import Any

from oma_host.testing.script import RecordedRequest
from oma_host.testing.simulator import Simulator

GEMINI_KEY = "AIzaSy-test-gemini-key-DO-NOT-LEAK-5555"
AWS_ACCESS_KEY = "AKIAOMATESTDONOTLEAK1"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY-DO-NOT-LEAK-secret"
AWS_TOKEN = "IQoJb3JpZ2luX2VjEDoaCXVzLWVhc3QtMSJHMEUCIQ-DO-NOT-LEAK-session"
AWS_REGION = "eu-west-3"
GB_PROVIDERS = ["gemini", "bedrock"]
MODELS = {"gemini": "gemini-3-pro-preview", "bedrock": "anthropic.claude-sonnet-4-5-20250929-v1:0"}


def host_env(**extra: str) -> dict[str, str]:
    """The environment of a host that talks to both: a Gemini key and AWS
    session credentials, and no shared AWS files of the machine's own."""
    return {
        "GEMINI_API_KEY": GEMINI_KEY,
        "GOOGLE_API_KEY": "",
        "AWS_ACCESS_KEY_ID": AWS_ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": AWS_SECRET,
        "AWS_SESSION_TOKEN": AWS_TOKEN,
        "AWS_REGION": AWS_REGION,
        "AWS_DEFAULT_REGION": "",
        "AWS_PROFILE": "",
        "AWS_BEARER_TOKEN_BEDROCK": "",
        "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/oma-test/credentials",
        "AWS_CONFIG_FILE": "/nonexistent/oma-test/config",
        **extra,
    }


def gb_config(sim: Simulator, provider: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": f"{provider}-agent",
        "provider": provider,
        "model": MODELS[provider],
        "baseURL": sim.base_url,
        **extra,
    }


def signature_is_valid(
    request: RecordedRequest, secret: str = AWS_SECRET, region: str = AWS_REGION
) -> bool:
    """Whether botocore, given the secret, computes the signature the request carries."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    auth = request.headers["authorization"]
    found = re.fullmatch(
        r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/bedrock/aws4_request, "
        r"SignedHeaders=([^,]+), Signature=([0-9a-f]{64})",
        auth,
    )
    assert found is not None, auth
    access, date, signed_region, names, signature = found.groups()
    assert signed_region == region and request.headers["x-amz-date"].startswith(date)
    headers = {name: request.headers[name] for name in names.split(";")}
    url = f"http://{request.headers['host']}{request.path}"
    aws_request = AWSRequest(method=request.method, url=url, data=request.raw, headers=headers)
    aws_request.context["timestamp"] = request.headers["x-amz-date"]
    token = request.headers.get("x-amz-security-token")
    signer = SigV4Auth(Credentials(access, secret, token), "bedrock", region)
    canonical = signer.canonical_request(aws_request)
    expected = signer.signature(signer.string_to_sign(aws_request, canonical), aws_request)
    return bool(expected == signature)
