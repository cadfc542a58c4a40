from minibroker.records.batch import Buffer

def scan(
    buf: Buffer, pos: int, end: int, count: int, max_offset_delta: int | None, /
) -> tuple[int, int, int] | None: ...
