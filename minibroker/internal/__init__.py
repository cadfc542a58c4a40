"""Internal topics: compacted topics of keyed records that the coordinators keep their state in."""
