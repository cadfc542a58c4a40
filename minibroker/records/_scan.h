/* The record walk of records.py `_scan_record`, shared by both C accelerators (the produce
 * path's `scan` in records/_accel.c and `plain_produce` in protocol/_accel.c).
 *
 * Every function answers 1 only for what the pure scan accepts, and 0 for anything it would
 * reject or cannot be sure of: the caller then leaves the answer (and its error) to Python.
 */
#ifndef MINIBROKER_SCAN_H
#define MINIBROKER_SCAN_H

#include <Python.h>
#include <stdint.h>

typedef struct {
    const uint8_t *buf;
    Py_ssize_t end;
} Region;

/* Zigzag int32 at *pos, as records.read_varint; 0 if it runs past the region or past 5 bytes. */
static int read_varint(const Region *r, Py_ssize_t *pos, int64_t *out) {
    uint64_t raw = 0;
    Py_ssize_t p = *pos;
    for (int shift = 0; shift <= 28; shift += 7) {
        if (p >= r->end) {
            return 0;
        }
        uint8_t byte = r->buf[p++];
        raw |= (uint64_t)(byte & 0x7F) << shift;
        if (byte < 0x80) {
            raw &= 0xFFFFFFFFu;
            *out = (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1);
            *pos = p;
            return 1;
        }
    }
    return 0;
}

/* Zigzag int64 at *pos, as records.read_varlong (up to 10 bytes). */
static int read_varlong(const Region *r, Py_ssize_t *pos, int64_t *out) {
    uint64_t raw = 0;
    Py_ssize_t p = *pos;
    for (int shift = 0; shift <= 63; shift += 7) {
        if (p >= r->end) {
            return 0;
        }
        uint8_t byte = r->buf[p++];
        raw |= (uint64_t)(byte & 0x7F) << shift;
        if (byte < 0x80) {
            *out = (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1);
            *pos = p;
            return 1;
        }
    }
    return 0;
}

/* records._skip_headers, from the header count at *pos; 0 on anything it would reject. */
static int skip_headers(const Region *r, Py_ssize_t *pos, Py_ssize_t body_end) {
    int64_t count, key_length, value_length;
    Py_ssize_t p = *pos;
    if (!read_varint(r, &p, &count) || count < 0 || count > body_end - p) {
        return 0;
    }
    for (int64_t i = 0; i < count; i++) {
        if (!read_varint(r, &p, &key_length) || key_length < 0) {
            return 0;
        }
        p += (Py_ssize_t)key_length;
        if (!read_varint(r, &p, &value_length)) {
            return 0;
        }
        if (value_length > 0) {
            p += (Py_ssize_t)value_length;
        }
    }
    *pos = p;
    return 1;
}

typedef struct {
    int stored;           /* offset deltas may skip, up to `maximum` */
    int64_t maximum;
    int64_t previous;
} Deltas;

static int offset_delta_fine(Deltas *d, int64_t offset_delta, int64_t index) {
    if (!d->stored) {
        return offset_delta == index;
    }
    if (!(d->previous < offset_delta && offset_delta <= d->maximum)) {
        return 0;
    }
    d->previous = offset_delta;
    return 1;
}

/* One record at *pos, as records._scan_record; 0 if it would raise (or read past `end`). */
static int scan_record(const Region *r, Py_ssize_t *pos, int64_t index, Deltas *deltas,
                       int64_t *timestamp_delta, int *null_key) {
    int64_t length, offset_delta, key_length, value_length;
    Py_ssize_t p = *pos;
    if (!read_varint(r, &p, &length) || length < 0 || length > r->end - p) {
        return 0;
    }
    Py_ssize_t body_end = p + (Py_ssize_t)length;
    p += 1; /* attributes */
    if (!read_varlong(r, &p, timestamp_delta) || !read_varint(r, &p, &offset_delta)
        || !offset_delta_fine(deltas, offset_delta, index) || !read_varint(r, &p, &key_length)) {
        return 0;
    }
    if (key_length > 0) {
        p += (Py_ssize_t)key_length;
    }
    if (!read_varint(r, &p, &value_length)) {
        return 0;
    }
    if (value_length > 0) {
        p += (Py_ssize_t)value_length;
    }
    if (p >= r->end) {
        return 0;
    }
    if (r->buf[p] == 0) {
        p += 1;
    } else if (!skip_headers(r, &p, body_end)) {
        return 0;
    }
    if (p != body_end) {
        return 0;
    }
    *pos = p;
    *null_key = key_length < 0;
    return 1;
}

/* `count` records from pos to exactly end (offset deltas checked by `deltas`), with their
 * timestamp delta range and null keys. */
static int scan_all(const uint8_t *buf, Py_ssize_t pos, Py_ssize_t end, int64_t count,
                    Deltas *deltas, int64_t *min_delta, int64_t *max_delta, int64_t *null_keys) {
    Region region = {buf, end};
    *min_delta = INT64_MAX;
    *max_delta = INT64_MIN;
    *null_keys = 0;
    if (count <= 0 || pos < 0) {
        return 0;
    }
    for (int64_t index = 0; index < count; index++) {
        int64_t timestamp_delta;
        int null_key;
        if (pos >= end || !scan_record(&region, &pos, index, deltas, &timestamp_delta, &null_key)) {
            return 0;
        }
        *null_keys += null_key;
        *min_delta = timestamp_delta < *min_delta ? timestamp_delta : *min_delta;
        *max_delta = timestamp_delta > *max_delta ? timestamp_delta : *max_delta;
    }
    return pos == end;
}

#endif
