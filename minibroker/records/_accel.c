/* The produce path's record walk in C: `scan(buf, pos, end, count, max_offset_delta)`.
 *
 * It answers only when it is sure: (min timestamp delta, max timestamp delta, null keys) for
 * records that `minibroker.records.records.scan_records` accepts, with the same figures, and
 * None for anything else (malformed records, reads past `end`, counts < 1). On None the
 * caller runs the pure-Python scan, which stays the reference and raises its exact
 * `CorruptRecordsError`; so every error message comes from one place.
 *
 * The walk (`_scan.h`) is `_scan_record` of records.py, record by record: zigzag varints (5
 * bytes for int32, 10 for int64), offset deltas 0, 1, 2, ... (or, given `max_offset_delta`, increasing
 * up to it), key/value lengths, headers, and each record's declared length matched exactly.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "_scan.h"

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
    int64_t min_delta, max_delta, null_keys;
    int fine = end <= view.len
               && scan_all((const uint8_t *)view.buf, pos, end, count, &deltas, &min_delta,
                           &max_delta, &null_keys);
    PyBuffer_Release(&view);
    if (!fine) {
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
