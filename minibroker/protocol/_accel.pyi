def walk_produce(
    frame: memoryview, pos: int, version: int, /
) -> (
    tuple[
        str | None,
        int,
        int,
        list[tuple[str | None, bytes | None, list[tuple[int, int, int]]]],
        int,
    ]
    | None
): ...
def plain_produce(
    frame: memoryview, /
) -> (
    tuple[int, int, int, str | bytes, int, int, int, int, int, int, int, int, int, int, int, int]
    | None
): ...
def plain_fetch(
    frame: memoryview, /
) -> (
    tuple[int, int, str, int, int, int, int, list[tuple[str | bytes, int, int, int, int, int, int]]]
    | None
): ...
def produce_answer(
    template: bytes, correlation_id: int, base_offset: int, log_start_offset: int, /
) -> bytearray: ...
def fetch_answer(
    head: bytes,
    correlation_id: int,
    high_watermark: int,
    last_stable_offset: int,
    log_start_offset: int,
    records: bytes,
    /,
) -> bytearray: ...
