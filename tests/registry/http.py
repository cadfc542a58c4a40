"""Plain HTTP calls to the Schema Registry (urllib: no client library between the test and the
wire), with Confluent's request content type unless told otherwise."""

from __future__ import annotations

import json
from dataclasses import dataclass
from http.client import HTTPConnection
from typing import Any
from urllib.error import HTTPError
from urllib.parse import urlsplit
from urllib.request import Request, urlopen

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


@dataclass
class Answer:
    status: int
    content_type: str
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def error_code(self) -> int:
        code = self.json["error_code"]
        assert isinstance(code, int)
        return code

    @property
    def message(self) -> str:
        message = self.json["message"]
        assert isinstance(message, str)
        return message


class Registry:
    def __init__(self, base: str) -> None:
        self.base = base.rstrip("/")

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        raw: bytes | None = None,
        content_type: str | None = CONTENT_TYPE,
        headers: dict[str, str] | None = None,
    ) -> Answer:
        data = raw if raw is not None else None if body is None else json.dumps(body).encode()
        sent = dict(headers or {})
        if data is not None and content_type is not None:
            sent["Content-Type"] = content_type
        request = Request(self.base + path, data=data, method=method, headers=sent)
        try:
            with urlopen(request, timeout=30) as response:
                return Answer(response.status, response.headers["Content-Type"], response.read())
        except HTTPError as error:
            with error:
                return Answer(error.code, error.headers["Content-Type"], error.read())

    def without_content_type(
        self, method: str, path: str, body: bytes, headers: dict[str, str] | None = None
    ) -> Answer:
        """A request with a body and no Content-Type at all (urllib would add one), as a
        page's fetch of an untyped Blob sends it."""
        address = urlsplit(self.base)
        connection = HTTPConnection(address.hostname or "", address.port, timeout=30)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            return Answer(response.status, response.headers["Content-Type"], response.read())
        finally:
            connection.close()

    def get(self, path: str) -> Answer:
        return self.call("GET", path)

    def post(self, path: str, body: Any) -> Answer:
        return self.call("POST", path, body)

    def put(self, path: str, body: Any) -> Answer:
        return self.call("PUT", path, body)

    def delete(self, path: str) -> Answer:
        return self.call("DELETE", path)

    def register(self, subject: str, schema: Any, **extra: Any) -> Answer:
        text = schema if isinstance(schema, str) else json.dumps(schema)
        return self.post(f"/subjects/{subject}/versions", {"schema": text, **extra})
