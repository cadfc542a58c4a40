"""Unsigned varints, as the flexible versions' compact lengths and tagged fields use them."""

# Most varints written are counts and lengths below 128: one byte, made once.
_ONE_BYTE = tuple(bytes((value,)) for value in range(0x80))


def encode_uvarint(value: int) -> bytes:
    if 0 <= value < 0x80:
        return _ONE_BYTE[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
