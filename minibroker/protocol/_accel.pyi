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
