/* The produce path's record walk in C: `scan(buf, pos, end, count, max_offset_delta)`.
 *
 * It answers only when it is sure: (min timestamp delta, max timestamp delta, null keys) for
 * records that `minibroker.records.records.scan_records` accepts, with the same figures, and
 * None for anything else (malformed records, reads past `end`, counts < 1). On None the
 * caller runs the pure-Python scan, which stays the reference and raises its exact
 * `CorruptRecordsError`; so every error message comes from one place.
 *
 * The walk is `_scan_record` of records.py, record by record: zigzag varints (5 bytes for
 * int32, 10 for int64), offset deltas 0, 1, 2, ... (or, given `max_offset_delta`, increasing
 * up to it), key/value lengths, headers, and each record's declared length matched exactly.
 */
#define PY_SSIZE_T_CLEAN
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

static PyObject *scan(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "scan(buf, pos, end, count, max_offset_delta)");
        return NULL;
    }
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    Py_ssize_t end = PyLong_AsSsize_t(args[2]);
    long long count = PyLong_AsLongLong(args[3]);
    Deltas deltas = {0, 0, -1};
    if (args[4] != Py_None) {
        deltas.stored = 1;
        deltas.maximum = PyLong_AsLongLong(args[4]);
    }
    if (PyErr_Occurred()) { /* out of range: the pure scan answers */
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) { /* not contiguous bytes */
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    Region region = {(const uint8_t *)view.buf, end < view.len ? end : view.len};
    int64_t min_delta = INT64_MAX, max_delta = INT64_MIN, null_keys = 0;
    int fine = count > 0 && pos >= 0 && end <= view.len;
    for (long long index = 0; fine && index < count; index++) {
        int64_t timestamp_delta;
        int null_key;
        fine = pos < end && scan_record(&region, &pos, index, &deltas, &timestamp_delta, &null_key);
        if (fine) {
            null_keys += null_key;
            min_delta = timestamp_delta < min_delta ? timestamp_delta : min_delta;
            max_delta = timestamp_delta > max_delta ? timestamp_delta : max_delta;
        }
    }
    PyBuffer_Release(&view);
    if (!fine || pos != end) {
        Py_RETURN_NONE;
    }
    return Py_BuildValue("(LLL)", (long long)min_delta, (long long)max_delta,
                         (long long)null_keys);
}

static PyMethodDef methods[] = {
    {"scan", (PyCFunction)(void (*)(void))scan, METH_FASTCALL,
     "scan(buf, pos, end, count, max_offset_delta) -> (min_delta, max_delta, null_keys) | None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "minibroker.records._accel",
    "The produce path's record walk in C; records.py is the reference.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__accel(void) { return PyModule_Create(&module_def); }
