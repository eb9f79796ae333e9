"""The guard: only botocore clients reach a handler, in tests and in the demo alike."""

import boto3
import pytest

from lambdas.shared.aws_clients import ClientCache, NotABotocoreClientError


class Wrapper:
    def __init__(self, client: object) -> None:
        self._client = client

    def __getattr__(self, name: str) -> object:
        return getattr(self._client, name)


def test_a_wrapped_client_is_refused_however_it_is_put_in() -> None:
    real = boto3.client("s3", region_name="us-east-1")
    cache = ClientCache()
    with pytest.raises(NotABotocoreClientError, match="the s3 client is a Wrapper"):
        cache["s3"] = Wrapper(real)
    with pytest.raises(NotABotocoreClientError):
        cache.update(s3=Wrapper(real))
    with pytest.raises(NotABotocoreClientError):
        cache.update({"s3": Wrapper(real)})
    with pytest.raises(NotABotocoreClientError):
        cache.setdefault("s3", Wrapper(real))
    assert cache == {}
    cache.update(s3=real)
    assert cache("s3") is real
