/* The Produce request walk (v3-13) of produce_request.py in C: `walk_produce(frame, pos, version)`.
 *
 * Answers (transactional_id, acks, timeout_ms, topics, end) for the plain shape the pure
 * decoder takes, where topics = [(name, topic_id bytes or None, [(index, start, stop)])] and
 * a partition's records are frame[start:stop] (start -1: null records); None for anything
 * else, and the pure decoder (the reference) then decides, as it always did.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#define FIRST_FLEXIBLE_VERSION 9
#define FIRST_TOPIC_ID_VERSION 13

typedef struct {
    const uint8_t *buf;
    Py_ssize_t len;
    Py_ssize_t pos;
    int flexible;
} Reader;

/* An unsigned varint of at most 5 bytes (the pure `_uvarint`); 0 past the frame or longer. */
static int uvarint(Reader *r, int64_t *out) {
    int64_t value = 0;
    for (int shift = 0; shift < 35; shift += 7) {
        if (r->pos >= r->len) {
            return 0;
        }
        uint8_t byte = r->buf[r->pos++];
        value |= (int64_t)(byte & 0x7F) << shift;
        if (!(byte & 0x80)) {
            *out = value;
            return 1;
        }
    }
    return 0;
}

static int fixed(Reader *r, int size, int64_t *out) {
    if (r->len - r->pos < size) {
        return 0;
    }
    uint64_t raw = 0;
    for (int i = 0; i < size; i++) {
        raw = (raw << 8) | r->buf[r->pos + i];
    }
    r->pos += size;
    int shift = 64 - 8 * size;
    *out = (int64_t)(raw << shift) >> shift; /* sign-extend */
    return 1;
}

/* A length or count as the version encodes it (compact: uvarint - 1); -1 for null. */
static int length(Reader *r, int classic_size, int64_t *out) {
    if (!r->flexible) {
        return fixed(r, classic_size, out);
    }
    int64_t raw;
    if (!uvarint(r, &raw)) {
        return 0;
    }
    *out = raw - 1;
    return 1;
}

static int take(Reader *r, int64_t size, Py_ssize_t *start) {
    if (size > r->len - r->pos) {
        return 0;
    }
    *start = r->pos;
    r->pos += (Py_ssize_t)size;
    return 1;
}

static int no_tagged_fields(Reader *r) {
    int64_t count;
    return !r->flexible || (uvarint(r, &count) && count == 0);
}

/* A string: a new str, Py_None (nullable and null), or NULL with no error set if not plain. */
static PyObject *string(Reader *r, int nullable) {
    int64_t size;
    Py_ssize_t start;
    if (!length(r, 2, &size)) {
        return NULL;
    }
    if (size < 0) {
        return nullable ? Py_NewRef(Py_None) : NULL;
    }
    if (!take(r, size, &start)) {
        return NULL;
    }
    PyObject *text = PyUnicode_DecodeUTF8((const char *)r->buf + start, (Py_ssize_t)size, NULL);
    if (text == NULL) {
        PyErr_Clear(); /* invalid UTF-8: the generic decoder's business */
    }
    return text;
}

static PyObject *partition(Reader *r) {
    int64_t index, size;
    Py_ssize_t start = -1;
    if (!fixed(r, 4, &index) || !length(r, 4, &size)) {
        return NULL;
    }
    if (size >= 0 && !take(r, size, &start)) {
        return NULL;
    }
    if (!no_tagged_fields(r)) {
        return NULL;
    }
    Py_ssize_t stop = start < 0 ? start : start + (Py_ssize_t)size;
    return Py_BuildValue("(Lnn)", (long long)index, start, stop);
}

/* Appends a tuple built by `read` per array element to a new list; NULL if not plain. */
static PyObject *array(Reader *r, PyObject *(*read)(Reader *, int), int version) {
    int64_t count;
    if (!length(r, 4, &count) || count < 0) {
        return NULL;
    }
    PyObject *items = PyList_New(0);
    for (int64_t i = 0; items != NULL && i < count; i++) {
        PyObject *item = read(r, version);
        if (item == NULL || PyList_Append(items, item) < 0) {
            Py_XDECREF(item);
            Py_CLEAR(items);
        } else {
            Py_DECREF(item);
        }
    }
    return items;
}

static PyObject *partition_item(Reader *r, int version) {
    (void)version;
    return partition(r);
}

static PyObject *topic(Reader *r, int version) {
    PyObject *name, *topic_id, *partitions;
    if (version >= FIRST_TOPIC_ID_VERSION) {
        Py_ssize_t start;
        if (!take(r, 16, &start)) {
            return NULL;
        }
        name = Py_NewRef(Py_None);
        topic_id = PyBytes_FromStringAndSize((const char *)r->buf + start, 16);
    } else {
        name = string(r, 0);
        topic_id = Py_NewRef(Py_None);
    }
    partitions = name && topic_id ? array(r, partition_item, version) : NULL;
    if (partitions == NULL || !no_tagged_fields(r)) {
        Py_XDECREF(name);
        Py_XDECREF(topic_id);
        Py_XDECREF(partitions);
        return NULL;
    }
    return Py_BuildValue("(NNN)", name, topic_id, partitions);
}

static PyObject *walk(Reader *r, int version) {
    int64_t acks, timeout_ms;
    PyObject *transactional_id = string(r, 1);
    if (transactional_id == NULL) {
        return NULL;
    }
    PyObject *topics = NULL;
    if (fixed(r, 2, &acks) && fixed(r, 4, &timeout_ms)) {
        topics = array(r, topic, version);
    }
    if (topics == NULL || !no_tagged_fields(r)) {
        Py_DECREF(transactional_id);
        Py_XDECREF(topics);
        return NULL;
    }
    return Py_BuildValue("(NLLNn)", transactional_id, (long long)acks, (long long)timeout_ms,
                         topics, r->pos);
}

static PyObject *walk_produce(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "walk_produce(frame, pos, version)");
        return NULL;
    }
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    long version = PyLong_AsLong(args[2]);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    PyObject *result = NULL;
    if (pos >= 0 && pos <= view.len) {
        Reader reader = {(const uint8_t *)view.buf, view.len, pos,
                         version >= FIRST_FLEXIBLE_VERSION};
        result = walk(&reader, (int)version);
    }
    PyBuffer_Release(&view);
    if (result == NULL) {
        if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_MemoryError)) {
            PyErr_Clear();
        }
        if (!PyErr_Occurred()) {
            Py_RETURN_NONE;
        }
    }
    return result;
}

static PyMethodDef methods[] = {
    {"walk_produce", (PyCFunction)(void (*)(void))walk_produce, METH_FASTCALL,
     "walk_produce(frame, pos, version) -> (transactional_id, acks, timeout_ms, topics, end) "
     "| None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "minibroker.protocol._accel",
    "The Produce request walk in C; produce_request.py is the reference.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__accel(void) { return PyModule_Create(&module_def); }
