/* framing.py's FrameDecoder in C: the same state, the same steps, the same frames and errors
 * (framing.py is the reference; tests/server/test_framing.py runs both over random splits of
 * the byte stream). It exists because a small request's read goes through `get_buffer`,
 * `buffer_updated` and two `next_frame` calls, and each is a Python frame in framing.py.
 *
 * Buffers are bytearrays that are never resized (a transport may hold a view of one); a frame
 * or a place to read into is a memoryview of one of them.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "structmember.h"

#define SCRATCH_BYTES (16 * 1024)
#define DIRECT_FRAME_BYTES (32 * 1024)
#define MIN_FREE_SCRATCH 4096
#define MAX_SPARE_BUFFERS 32
#define BUFFER_STEP (8 * 1024)
#define FIRST_ALLOCATION (8 * 1024 * 1024)
#define MAX_SPARE_BYTES (8 * 1024 * 1024)
#define MAX_READ_AHEAD_FRAME (MAX_SPARE_BYTES / MAX_SPARE_BUFFERS)

typedef struct {
    PyObject_HEAD
    Py_ssize_t max_frame_bytes;
    PyObject *scratch; /* unread bytes are [start, end) */
    Py_ssize_t start;
    Py_ssize_t end;
    PyObject *direct; /* the large frame being read, or NULL */
    Py_ssize_t direct_offset;
    Py_ssize_t direct_size;
    Py_ssize_t direct_filled;
    PyObject *spares; /* list of bytearrays */
    Py_ssize_t expected; /* the last large frame's size while reads go into `ahead` */
    PyObject *ahead;
} Decoder;

#define BYTES(buffer) ((uint8_t *)PyByteArray_AS_STRING(buffer))
#define LEN(buffer) PyByteArray_GET_SIZE(buffer)

/* A writable memoryview of buffer[start:stop]: the view of the whole bytearray, narrowed in
 * place (what slicing a memoryview does to its new copy; this one is not shared yet). */
static PyObject *view_of(PyObject *buffer, Py_ssize_t start, Py_ssize_t stop) {
    PyObject *view = PyMemoryView_FromObject(buffer);
    if (view == NULL) {
        return NULL;
    }
    Py_buffer *info = PyMemoryView_GET_BUFFER(view);
    info->buf = (char *)info->buf + start;
    info->len = stop - start;
    info->shape[0] = stop - start;
    return view;
}

/* framing._allocate: zero-filled, rounded up to BUFFER_STEP. */
static PyObject *allocate(Py_ssize_t size) {
    Py_ssize_t rounded = (size + BUFFER_STEP - 1) / BUFFER_STEP * BUFFER_STEP;
    PyObject *buffer = PyByteArray_FromStringAndSize(NULL, rounded);
    if (buffer != NULL) {
        memset(BYTES(buffer), 0, (size_t)rounded);
    }
    return buffer;
}

static int32_t size_at(const uint8_t *p) {
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) |
                     (uint32_t)p[3]);
}

/* _take_buffer: a spare of at least `size` only the spares list refers to, or a new one. */
static PyObject *take_buffer(Decoder *self, Py_ssize_t size) {
    Py_ssize_t count = PyList_GET_SIZE(self->spares);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *spare = PyList_GET_ITEM(self->spares, i);
        if (LEN(spare) >= size && Py_REFCNT(spare) == 1) {
            Py_INCREF(spare);
            if (PyList_SetSlice(self->spares, i, i + 1, NULL) < 0) {
                Py_DECREF(spare);
                return NULL;
            }
            return spare;
        }
    }
    return allocate(size < FIRST_ALLOCATION ? size : FIRST_ALLOCATION);
}

static int grow_direct(Decoder *self) {
    Py_ssize_t filled = self->direct_offset + self->direct_filled;
    Py_ssize_t wanted = 2 * LEN(self->direct);
    if (wanted > self->direct_offset + self->direct_size) {
        wanted = self->direct_offset + self->direct_size;
    }
    PyObject *grown = allocate(wanted);
    if (grown == NULL) {
        return -1;
    }
    memcpy(BYTES(grown), BYTES(self->direct), (size_t)filled);
    Py_SETREF(self->direct, grown);
    return 0;
}

static int make_room(Decoder *self) {
    Py_ssize_t unread = self->end - self->start;
    if (LEN(self->scratch) - unread >= MIN_FREE_SCRATCH) {
        memmove(BYTES(self->scratch), BYTES(self->scratch) + self->start, (size_t)unread);
    } else {
        PyObject *grown = PyByteArray_FromStringAndSize(NULL, 2 * LEN(self->scratch));
        if (grown == NULL) {
            return -1;
        }
        memset(BYTES(grown), 0, (size_t)LEN(grown));
        memcpy(BYTES(grown), BYTES(self->scratch) + self->start, (size_t)unread);
        Py_SETREF(self->scratch, grown);
    }
    self->start = 0;
    self->end = unread;
    return 0;
}

static PyObject *target_within(Decoder *self, Py_ssize_t *start, Py_ssize_t *stop);

/* Where the next received bytes go: buffer[*start:*stop] (get_buffer without the view), as
 * far as the buffer goes, as a slice of it would be. */
static PyObject *target(Decoder *self, Py_ssize_t *start, Py_ssize_t *stop) {
    PyObject *buffer = target_within(self, start, stop);
    if (buffer != NULL && *stop > LEN(buffer)) {
        *stop = LEN(buffer);
    }
    return buffer;
}

static PyObject *target_within(Decoder *self, Py_ssize_t *start, Py_ssize_t *stop) {
    if (self->direct != NULL) {
        if (self->direct_offset + self->direct_filled == LEN(self->direct) &&
            grow_direct(self) < 0) {
            return NULL;
        }
        *start = self->direct_offset + self->direct_filled;
        *stop = self->direct_offset + self->direct_size;
        return self->direct;
    }
    if (self->expected && self->end == 0) {
        Py_ssize_t wanted = self->expected + 4;
        if (self->ahead == NULL || LEN(self->ahead) < wanted) {
            PyObject *ahead = take_buffer(self, wanted);
            if (ahead == NULL) {
                return NULL;
            }
            Py_XSETREF(self->ahead, ahead);
        }
        *start = 0;
        *stop = wanted;
        return self->ahead;
    }
    if (LEN(self->scratch) - self->end < MIN_FREE_SCRATCH && make_room(self) < 0) {
        return NULL;
    }
    *start = self->end;
    *stop = LEN(self->scratch);
    return self->scratch;
}

static PyObject *Decoder_get_buffer(Decoder *self, PyObject *Py_UNUSED(ignored)) {
    Py_ssize_t start, stop;
    PyObject *buffer = target(self, &start, &stop);
    return buffer == NULL ? NULL : view_of(buffer, start, stop);
}

/* _received_ahead */
static int received_ahead(Decoder *self, Py_ssize_t nbytes) {
    PyObject *ahead = self->ahead; /* the reference moves here */
    self->ahead = NULL;
    int32_t size = nbytes >= 4 ? size_at(BYTES(ahead)) : -1;
    Py_ssize_t rest_start, rest_stop = nbytes;
    if (DIRECT_FRAME_BYTES < size && size <= self->max_frame_bytes &&
        (Py_ssize_t)size + 4 <= LEN(ahead)) {
        self->direct = ahead;
        self->direct_offset = 4;
        self->direct_size = size;
        self->direct_filled = nbytes - 4 < size ? nbytes - 4 : size;
        rest_start = 4 + self->direct_filled;
    } else {
        self->expected = 0;
        rest_start = 0;
    }
    Py_ssize_t rest = rest_stop - rest_start;
    if (rest > 0) {
        if (rest > LEN(self->scratch) - MIN_FREE_SCRATCH) {
            PyObject *scratch = PyByteArray_FromStringAndSize(NULL, rest + SCRATCH_BYTES);
            if (scratch == NULL) {
                if (self->direct != ahead) {
                    Py_DECREF(ahead);
                }
                return -1;
            }
            memset(BYTES(scratch), 0, (size_t)LEN(scratch));
            Py_SETREF(self->scratch, scratch);
        }
        memcpy(BYTES(self->scratch), BYTES(ahead) + rest_start, (size_t)rest);
        self->end = rest;
    }
    if (self->direct != ahead) {
        Py_DECREF(ahead);
    }
    return 0;
}

static int updated(Decoder *self, Py_ssize_t nbytes) {
    if (self->direct != NULL) {
        self->direct_filled += nbytes;
    } else if (self->ahead != NULL) {
        return received_ahead(self, nbytes);
    } else {
        self->end += nbytes;
    }
    return 0;
}

static PyObject *Decoder_buffer_updated(Decoder *self, PyObject *arg) {
    Py_ssize_t nbytes = PyLong_AsSsize_t(arg);
    if (nbytes == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (updated(self, nbytes) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *Decoder_feed(Decoder *self, PyObject *data) {
    Py_buffer input;
    if (PyObject_GetBuffer(data, &input, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    Py_ssize_t pos = 0;
    while (pos < input.len) {
        Py_ssize_t start, stop;
        PyObject *buffer = target(self, &start, &stop);
        if (buffer == NULL) {
            PyBuffer_Release(&input);
            return NULL;
        }
        Py_ssize_t count = stop - start < input.len - pos ? stop - start : input.len - pos;
        memcpy(BYTES(buffer) + start, (const uint8_t *)input.buf + pos, (size_t)count);
        if (updated(self, count) < 0) {
            PyBuffer_Release(&input);
            return NULL;
        }
        pos += count;
    }
    PyBuffer_Release(&input);
    Py_RETURN_NONE;
}

static PyObject *finish_direct(Decoder *self) {
    if (self->direct == NULL || self->direct_filled < self->direct_size) {
        Py_RETURN_NONE;
    }
    PyObject *frame =
        view_of(self->direct, self->direct_offset, self->direct_offset + self->direct_size);
    if (frame == NULL) {
        return NULL;
    }
    Py_CLEAR(self->direct);
    self->expected = self->direct_size + 4 <= MAX_READ_AHEAD_FRAME ? self->direct_size : 0;
    return frame;
}

static PyObject *framing_error(void) {
    PyObject *module = PyImport_ImportModule("minibroker.server.framing");
    if (module == NULL) {
        return NULL;
    }
    PyObject *error = PyObject_GetAttrString(module, "FramingError");
    Py_DECREF(module);
    return error;
}

static PyObject *Decoder_next_frame(Decoder *self, PyObject *Py_UNUSED(ignored)) {
    if (self->direct != NULL) {
        return finish_direct(self);
    }
    Py_ssize_t unread = self->end - self->start;
    if (unread < 4) {
        Py_RETURN_NONE;
    }
    int32_t size = size_at(BYTES(self->scratch) + self->start);
    if (size < 0 || size > self->max_frame_bytes) {
        PyObject *error = framing_error();
        if (error != NULL) {
            PyErr_Format(error, "frame size %d outside 0..%zd", (int)size, self->max_frame_bytes);
            Py_DECREF(error);
        }
        return NULL;
    }
    Py_ssize_t body_start = self->start + 4;
    Py_ssize_t available = self->end - body_start < size ? self->end - body_start : size;
    if (size <= DIRECT_FRAME_BYTES) {
        if (available < size) {
            Py_RETURN_NONE;
        }
        PyObject *copy = PyByteArray_FromStringAndSize(
            (const char *)BYTES(self->scratch) + body_start, size);
        if (copy == NULL) {
            return NULL;
        }
        PyObject *frame = PyMemoryView_FromObject(copy);
        Py_DECREF(copy);
        if (frame == NULL) {
            return NULL;
        }
        Py_ssize_t end = body_start + size;
        if (end == self->end) {
            self->start = self->end = 0;
        } else {
            self->start = end;
        }
        return frame;
    }
    Py_ssize_t wanted = size < FIRST_ALLOCATION ? size : FIRST_ALLOCATION;
    PyObject *direct = take_buffer(self, wanted > available ? wanted : available);
    if (direct == NULL) {
        return NULL;
    }
    Py_XSETREF(self->direct, direct);
    self->direct_offset = 0;
    self->direct_size = size;
    self->direct_filled = available;
    memcpy(BYTES(direct), BYTES(self->scratch) + body_start, (size_t)available);
    self->start = body_start + available;
    if (self->start == self->end) {
        self->start = self->end = 0;
    }
    return finish_direct(self);
}

static PyObject *Decoder_recycle(Decoder *self, PyObject *frame) {
    PyObject *buffer = PyObject_GetAttrString(frame, "obj"); /* fails once released */
    if (buffer == NULL) {
        return NULL;
    }
    PyObject *released = PyObject_CallMethod(frame, "release", NULL);
    if (released == NULL) {
        Py_DECREF(buffer);
        if (PyErr_ExceptionMatches(PyExc_BufferError)) { /* still read through this view */
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        return NULL;
    }
    Py_DECREF(released);
    if (!PyByteArray_Check(buffer) || LEN(buffer) <= DIRECT_FRAME_BYTES) {
        Py_DECREF(buffer);
        Py_RETURN_NONE;
    }
    Py_ssize_t count = PyList_GET_SIZE(self->spares);
    if (count == MAX_SPARE_BUFFERS) {
        Py_ssize_t smallest = 0;
        for (Py_ssize_t i = 1; i < count; i++) {
            if (LEN(PyList_GET_ITEM(self->spares, i)) <
                LEN(PyList_GET_ITEM(self->spares, smallest))) {
                smallest = i;
            }
        }
        if (LEN(PyList_GET_ITEM(self->spares, smallest)) >= LEN(buffer) ||
            PyList_SetSlice(self->spares, smallest, smallest + 1, NULL) < 0) {
            Py_DECREF(buffer);
            return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
        }
        count -= 1;
    }
    Py_ssize_t total = LEN(buffer);
    for (Py_ssize_t i = 0; i < count; i++) {
        total += LEN(PyList_GET_ITEM(self->spares, i));
    }
    int failed = total <= MAX_SPARE_BYTES && PyList_Append(self->spares, buffer) < 0;
    Py_DECREF(buffer);
    if (failed) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *Decoder_buffered(Decoder *self, void *Py_UNUSED(closure)) {
    return PyLong_FromSsize_t(self->end - self->start +
                              (self->direct != NULL ? self->direct_filled : 0));
}

static int Decoder_init(Decoder *self, PyObject *args, PyObject *kwds) {
    static char *keywords[] = {"max_frame_bytes", NULL};
    Py_ssize_t max_frame_bytes;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "n", keywords, &max_frame_bytes)) {
        return -1;
    }
    PyObject *scratch = PyByteArray_FromStringAndSize(NULL, SCRATCH_BYTES);
    PyObject *spares = PyList_New(0);
    if (scratch == NULL || spares == NULL) {
        Py_XDECREF(scratch);
        Py_XDECREF(spares);
        return -1;
    }
    memset(BYTES(scratch), 0, SCRATCH_BYTES);
    self->max_frame_bytes = max_frame_bytes;
    Py_XSETREF(self->scratch, scratch);
    Py_XSETREF(self->spares, spares);
    Py_CLEAR(self->direct);
    Py_CLEAR(self->ahead);
    self->start = self->end = 0;
    self->direct_offset = self->direct_size = self->direct_filled = 0;
    self->expected = 0;
    return 0;
}

static int Decoder_traverse(Decoder *self, visitproc visit, void *arg) {
    Py_VISIT(self->scratch);
    Py_VISIT(self->direct);
    Py_VISIT(self->spares);
    Py_VISIT(self->ahead);
    return 0;
}

static int Decoder_clear(Decoder *self) {
    Py_CLEAR(self->scratch);
    Py_CLEAR(self->direct);
    Py_CLEAR(self->spares);
    Py_CLEAR(self->ahead);
    return 0;
}

static void Decoder_dealloc(Decoder *self) {
    PyObject_GC_UnTrack(self);
    Decoder_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Decoder_methods[] = {
    {"get_buffer", (PyCFunction)Decoder_get_buffer, METH_NOARGS, NULL},
    {"buffer_updated", (PyCFunction)Decoder_buffer_updated, METH_O, NULL},
    {"feed", (PyCFunction)Decoder_feed, METH_O, NULL},
    {"next_frame", (PyCFunction)Decoder_next_frame, METH_NOARGS, NULL},
    {"recycle", (PyCFunction)Decoder_recycle, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef Decoder_members[] = {
    {"max_frame_bytes", T_PYSSIZET, offsetof(Decoder, max_frame_bytes), 0, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef Decoder_getset[] = {
    {"buffered", (getter)Decoder_buffered, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject DecoderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "minibroker.server._accel.FrameDecoder",
    .tp_basicsize = sizeof(Decoder),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Decoder_init,
    .tp_dealloc = (destructor)Decoder_dealloc,
    .tp_traverse = (traverseproc)Decoder_traverse,
    .tp_clear = (inquiry)Decoder_clear,
    .tp_methods = Decoder_methods,
    .tp_members = Decoder_members,
    .tp_getset = Decoder_getset,
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "minibroker.server._accel", NULL, -1, NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__accel(void) {
    if (PyType_Ready(&DecoderType) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) {
        return NULL;
    }
    Py_INCREF(&DecoderType);
    if (PyModule_AddObject(module, "FrameDecoder", (PyObject *)&DecoderType) < 0) {
        Py_DECREF(&DecoderType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
