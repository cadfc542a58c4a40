"""A raw Kafka-protocol test client: hand-built frames in, decoded responses out."""

from __future__ import annotations

import socket
import struct
from typing import Any

from kafka.protocol.api_message import ApiMessage

from minibroker.protocol.codec import is_flexible, request_class, response_class


def request_frame(
    api_key: int, api_version: int, correlation_id: int, body: bytes, client_id: str = "wire"
) -> bytes:
    header = struct.pack(">hhih", api_key, api_version, correlation_id, len(client_id))
    header += client_id.encode()
    if is_flexible(api_key, api_version):
        header += b"\x00"
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def _with_structs(cls: Any, fields: dict[str, Any]) -> dict[str, Any]:
    """Turn nested dicts (and lists of dicts) into the message's nested struct objects."""
    built = {}
    for name, value in fields.items():
        field = cls.fields[name]
        if field.is_struct_array() and value is not None:
            value = [
                field.data_class(**_with_structs(field.data_class, item))
                if isinstance(item, dict)
                else item
                for item in value
            ]
        elif field.is_struct() and isinstance(value, dict):
            value = field.data_class(**_with_structs(field.data_class, value))
        built[name] = value
    return built


# What every real client sends in ApiVersions v3+ (the broker refuses an empty name, as Kafka).
_CLIENT_SOFTWARE = {"client_software_name": "minibroker-wire", "client_software_version": "1"}


def encode_request(api_key: int, api_version: int, **fields: Any) -> bytes:
    cls = request_class(api_key)
    assert cls is not None
    if api_key == 18 and api_version >= 3:
        fields = {**_CLIENT_SOFTWARE, **fields}
    message: ApiMessage = cls(version=api_version, **_with_structs(cls, fields))
    return bytes(message.encode(version=api_version))


class WireClient:
    def __init__(self, bootstrap: str, timeout: float = 10.0) -> None:
        host, _, port = bootstrap.partition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, api_key: int, api_version: int, **fields: Any) -> int:
        self.correlation_id += 1
        body = encode_request(api_key, api_version, **fields)
        self.send_raw(request_frame(api_key, api_version, self.correlation_id, body))
        return self.correlation_id

    def recv_frame(self) -> bytes:
        size = struct.unpack(">i", self._recv_exactly(4))[0]
        return self._recv_exactly(size)

    def _recv_exactly(self, size: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < size:
            chunk = self.sock.recv(size - len(chunks))
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            chunks += chunk
        return bytes(chunks)

    def recv(self, api_key: int, api_version: int) -> tuple[int, Any]:
        frame = self.recv_frame()
        correlation_id = struct.unpack_from(">i", frame)[0]
        pos = 4
        if api_key != 18 and is_flexible(api_key, api_version):
            assert frame[pos] == 0, "non-empty tagged fields in the response header"
            pos += 1
        cls = response_class(api_key)
        body = cls.decode(frame[pos:], version=api_version)
        return correlation_id, body

    def call(self, api_key: int, api_version: int, **fields: Any) -> Any:
        sent = self.send(api_key, api_version, **fields)
        correlation_id, body = self.recv(api_key, api_version)
        assert correlation_id == sent
        return body

    def is_closed_by_peer(self) -> bool:
        self.sock.settimeout(5)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True
