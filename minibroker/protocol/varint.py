"""Unsigned varints, as the flexible versions' compact lengths and tagged fields use them."""


def encode_uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
