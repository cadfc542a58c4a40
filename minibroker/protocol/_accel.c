/* The Produce and Fetch requests in C, three functions; the Python code each mirrors is its
 * reference.
 *
 * `walk_produce(frame, pos, version)`: the request walk (v3-13) of produce_request.py.
 * Answers (transactional_id, acks, timeout_ms, topics, end) for the plain shape the pure
 * decoder takes, where topics = [(name, topic_id bytes or None, [(index, start, stop)])] and
 * a partition's records are frame[start:stop] (start -1: null records); None for anything
 * else, and the pure decoder (the reference) then decides, as it always did.
 *
 * `plain_produce(frame)`: the common request whole (see handlers/produce_native.py), from
 * the request header to the records: v9-13, no transactional id, one topic, one partition,
 * one uncompressed, non-transactional CreateTime batch that records/validate.py accepts
 * (header checks, CRC-32C, the record walk of _scan.h). None for anything else.
 *
 * `plain_fetch(frame)`: the common Fetch request whole (see handlers/fetch_native.py): v12-18,
 * a consumer's (replica id -1, no ReplicaState), sessionless (session id 0, epoch -1), no
 * forgotten topics, no tagged fields. None for anything else.
 *
 * `produce_answer(...)` and `fetch_answer(...)`: the answer frames of the native paths, from a
 * template the Python encoder made (handlers/produce_native.py, fetch_native.py), with the
 * request's and partition's fields patched in: what the Python code did with `bytearray`
 * and `Struct.pack_into`, in one call.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "../records/_scan.h"

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

/* ---- plain_produce ------------------------------------------------------------------ */

#define PRODUCE_KEY 0
#define LAST_PLAIN_VERSION 13
#define BATCH_HEADER_SIZE 61
#define LOG_OVERHEAD 12
#define MAGIC_V2 2
#define ATTRIBUTES_AT 21 /* the CRC covers the batch from here */
/* Attribute bits that leave the common case: compression, LogAppendTime, transactional,
 * control. */
#define NOT_PLAIN_ATTRIBUTES 0x3F

static uint32_t crc_table[256];
static int crc_in_hardware;

static void init_crc_table(void) {
    for (uint32_t byte = 0; byte < 256; byte++) {
        uint32_t crc = byte;
        for (int bit = 0; bit < 8; bit++) {
            crc = (crc >> 1) ^ (0x82F63B78u & -(crc & 1)); /* Castagnoli, reflected */
        }
        crc_table[byte] = crc;
    }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_CRC_INSTRUCTION 1
__attribute__((target("sse4.2"))) static uint32_t crc32c_serial(uint32_t crc, const uint8_t *p,
                                                                 Py_ssize_t n) {
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        crc = (uint32_t)__builtin_ia32_crc32di(crc, word);
    }
    for (; n > 0; p++, n--) {
        crc = __builtin_ia32_crc32qi(crc, *p);
    }
    return crc;
}

/* The crc32 instruction takes 3 cycles but can start one every cycle: three stripes are
 * summed at once, each from register 0, and joined. The register is linear over GF(2): the
 * CRC of A then B is `shift(crc(A))` xor the CRC of B started from 0, where `shift` is what
 * |B| zero bytes do to a register, a linear map kept as four tables of a byte each
 * (`init_stripe_shift`). Long stripes first (fewer joins, and the memory read in long runs),
 * then short ones for what is left. */
#define LONG_STRIPE 8192
#define SHORT_STRIPE 1024
typedef uint32_t ShiftTable[4][256];
static ShiftTable long_shift, short_shift;

static uint32_t shift_register(const ShiftTable table, uint32_t crc) {
    return table[0][crc & 0xFF] ^ table[1][(crc >> 8) & 0xFF] ^ table[2][(crc >> 16) & 0xFF]
           ^ table[3][crc >> 24];
}

static void init_stripe_shift(ShiftTable table, Py_ssize_t stripe) {
    static const uint8_t zeros[LONG_STRIPE];
    uint32_t of_bit[32];
    for (int bit = 0; bit < 32; bit++) {
        of_bit[bit] = crc32c_serial(1u << bit, zeros, stripe);
    }
    for (int lane = 0; lane < 4; lane++) {
        for (uint32_t byte = 0; byte < 256; byte++) {
            uint32_t shifted = 0;
            for (int bit = 0; bit < 8; bit++) {
                if (byte & (1u << bit)) {
                    shifted ^= of_bit[8 * lane + bit];
                }
            }
            table[lane][byte] = shifted;
        }
    }
}

/* Whole rounds of three stripes from `*p`, `*n` advanced past them. */
__attribute__((target("sse4.2"))) static inline uint32_t crc32c_stripes(
    uint32_t crc, const uint8_t **p, Py_ssize_t *n, Py_ssize_t stripe, const ShiftTable table) {
    for (; *n >= 3 * stripe; *p += 3 * stripe, *n -= 3 * stripe) {
        const uint8_t *at = *p;
        uint64_t first = crc, second = 0, third = 0;
        for (Py_ssize_t i = 0; i < stripe; i += 8) {
            uint64_t a, b, c;
            memcpy(&a, at + i, 8);
            memcpy(&b, at + stripe + i, 8);
            memcpy(&c, at + 2 * stripe + i, 8);
            first = __builtin_ia32_crc32di(first, a);
            second = __builtin_ia32_crc32di(second, b);
            third = __builtin_ia32_crc32di(third, c);
        }
        crc = shift_register(table, shift_register(table, (uint32_t)first) ^ (uint32_t)second)
              ^ (uint32_t)third;
    }
    return crc;
}

__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(uint32_t crc, const uint8_t *p,
                                                                Py_ssize_t n) {
    crc = crc32c_stripes(crc, &p, &n, LONG_STRIPE, long_shift);
    crc = crc32c_stripes(crc, &p, &n, SHORT_STRIPE, short_shift);
    return crc32c_serial(crc, p, n);
}
#endif

/* CRC-32C as the crc32c package computes it (compute_crc of records/batch.py). */
static uint32_t crc32c(const uint8_t *p, Py_ssize_t n) {
    uint32_t crc = 0xFFFFFFFFu;
#ifdef HAVE_CRC_INSTRUCTION
    if (crc_in_hardware) {
        return ~crc32c_sse42(crc, p, n);
    }
#endif
    for (; n > 0; p++, n--) {
        crc = crc_table[(crc ^ *p) & 0xFF] ^ (crc >> 8);
    }
    return ~crc;
}

/* The request header (v2) up to the body: key `api_key`, a version in [first, last], an
 * ASCII client id, no tags. */
static int request_header(Reader *r, int64_t api_key, int64_t first, int64_t last,
                          int64_t *version, int64_t *correlation_id) {
    int64_t key, client_id_length;
    Py_ssize_t start;
    r->flexible = 0; /* the client id is a classic nullable string even in header v2 */
    if (!fixed(r, 2, &key) || key != api_key || !fixed(r, 2, version) || *version < first
        || *version > last || !fixed(r, 4, correlation_id)
        || !fixed(r, 2, &client_id_length)) {
        return 0;
    }
    if (client_id_length < -1 || (client_id_length > 0 && !take(r, client_id_length, &start))) {
        return 0;
    }
    for (int64_t i = 0; i < client_id_length; i++) {
        if (r->buf[start + i] >= 0x80) {
            return 0; /* not ASCII: whether it is valid UTF-8 is the header decoder's call */
        }
    }
    r->flexible = 1;
    return no_tagged_fields(r);
}

/* The body with one topic of one partition and no transactional id; the topic (a new str
 * name, or bytes id from v13) in *topic, the records at [*start, *stop). */
static int single_partition_body(Reader *r, int version, int64_t *acks, PyObject **topic,
                                 int64_t *index, Py_ssize_t *start, Py_ssize_t *stop) {
    int64_t transactional_id, timeout_ms, topics, partitions, size;
    if (!length(r, 2, &transactional_id) || transactional_id != -1 || !fixed(r, 2, acks)
        || !fixed(r, 4, &timeout_ms) || !length(r, 4, &topics) || topics != 1) {
        return 0;
    }
    if (version >= FIRST_TOPIC_ID_VERSION) {
        Py_ssize_t id_at;
        if (!take(r, 16, &id_at)) {
            return 0;
        }
        *topic = PyBytes_FromStringAndSize((const char *)r->buf + id_at, 16);
    } else {
        *topic = string(r, 0);
    }
    if (*topic == NULL) {
        return 0;
    }
    if (length(r, 4, &partitions) && partitions == 1 && fixed(r, 4, index)
        && length(r, 4, &size) && size >= 0 && take(r, size, start) && no_tagged_fields(r)
        && no_tagged_fields(r) && no_tagged_fields(r) && r->pos == r->len) {
        *stop = *start + (Py_ssize_t)size;
        return 1;
    }
    Py_CLEAR(*topic);
    return 0;
}

static int64_t be(const uint8_t *p, int size) {
    Reader r = {p, size, 0, 0};
    int64_t value = 0;
    fixed(&r, size, &value);
    return value;
}

typedef struct {
    int64_t base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence, count;
    int64_t min_delta, max_delta, null_keys;
} Batch;

/* validate_produce_records's checks on one plain batch (uncompressed, CreateTime, not
 * transactional, not control): 1 if it accepts it, with the fields the append needs. The
 * topic's own limits (max.message.bytes, timestamp bounds, keys) are left to Python. */
static int plain_batch(const uint8_t *p, Py_ssize_t size, Batch *b) {
    if (size < BATCH_HEADER_SIZE || p[16] != MAGIC_V2 || be(p, 8) != 0
        || be(p + 8, 4) + LOG_OVERHEAD != size
        || (uint32_t)be(p + 17, 4) != crc32c(p + ATTRIBUTES_AT, size - ATTRIBUTES_AT)
        || (be(p + 21, 2) & NOT_PLAIN_ATTRIBUTES) != 0) {
        return 0;
    }
    int64_t last_offset_delta = be(p + 23, 4);
    b->base_timestamp = be(p + 27, 8);
    b->max_timestamp = be(p + 35, 8);
    b->producer_id = be(p + 43, 8);
    b->producer_epoch = be(p + 51, 2);
    b->base_sequence = be(p + 53, 4);
    b->count = be(p + 57, 4);
    if (last_offset_delta < 0 || last_offset_delta + 1 != b->count
        || (b->producer_id >= 0 && b->base_sequence < 0)) {
        return 0;
    }
    Deltas deltas = {0, 0, -1};
    return scan_all(p, BATCH_HEADER_SIZE, size, b->count, &deltas, &b->min_delta, &b->max_delta,
                    &b->null_keys);
}

/* A tuple of `n` items: an int from `ints[i]`, or `objects[i]` where that is not NULL (a new
 * reference, which the tuple takes, or which is released on failure). Built directly, as
 * Py_BuildValue's format parsing costs about as much as the rest of a small request's walk. */
static PyObject *tuple_of(Py_ssize_t n, const int64_t *ints, PyObject **objects) {
    PyObject *tuple = PyTuple_New(n);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = objects != NULL && objects[i] != NULL ? objects[i]
                         : tuple != NULL ? PyLong_FromLongLong((long long)ints[i])
                                         : NULL;
        if (tuple == NULL || item == NULL) {
            Py_XDECREF(item);
            Py_CLEAR(tuple);
            continue; /* the remaining objects are released too */
        }
        PyTuple_SET_ITEM(tuple, i, item);
    }
    return tuple;
}

static PyObject *plain_produce(PyObject *module, PyObject *frame) {
    (void)module;
    Py_buffer view;
    if (PyObject_GetBuffer(frame, &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    Reader r = {(const uint8_t *)view.buf, view.len, 0, 0};
    int64_t version, correlation_id, acks, index;
    Py_ssize_t start, stop;
    PyObject *topic = NULL, *result = NULL;
    Batch b;
    if (request_header(&r, PRODUCE_KEY, FIRST_FLEXIBLE_VERSION, LAST_PLAIN_VERSION, &version,
                       &correlation_id)
        && single_partition_body(&r, (int)version, &acks, &topic, &index, &start, &stop)
        && plain_batch(r.buf + start, stop - start, &b)) {
        int64_t ints[16] = {version,          correlation_id, acks,          0,
                            index,            start,          stop,          b.base_timestamp,
                            b.max_timestamp,  b.producer_id,  b.producer_epoch,
                            b.base_sequence,  b.count,        b.min_delta,
                            b.max_delta,      b.null_keys};
        PyObject *objects[16] = {NULL, NULL, NULL, topic};
        topic = NULL; /* the tuple's */
        result = tuple_of(16, ints, objects);
    }
    Py_XDECREF(topic);
    PyBuffer_Release(&view);
    if (result == NULL && !PyErr_ExceptionMatches(PyExc_MemoryError)) {
        PyErr_Clear(); /* e.g. invalid UTF-8 in the name: the pure path's business */
        Py_RETURN_NONE;
    }
    return result;
}

/* ---- plain_fetch -------------------------------------------------------------------- */

#define FETCH_KEY 1
#define FIRST_PLAIN_FETCH_VERSION 12 /* the first flexible version */
#define LAST_PLAIN_FETCH_VERSION 18
#define FIRST_REPLICA_STATE_VERSION 15 /* ReplicaId moves into a tagged field */
#define CLIENT_ID_AT 10                 /* size of key, version, correlation id, id length */

/* One FetchPartition: (topic, index, current leader epoch, fetch offset, partition max bytes,
 * log start offset, last fetched epoch), with `topic` borrowed from the caller. */
static PyObject *fetch_partition(Reader *r, PyObject *topic) {
    int64_t index, leader_epoch, fetch_offset, last_fetched_epoch, log_start_offset, max_bytes;
    if (!fixed(r, 4, &index) || !fixed(r, 4, &leader_epoch) || !fixed(r, 8, &fetch_offset)
        || !fixed(r, 4, &last_fetched_epoch) || !fixed(r, 8, &log_start_offset)
        || !fixed(r, 4, &max_bytes) || !no_tagged_fields(r)) {
        return NULL;
    }
    int64_t ints[7] = {0,         index,           leader_epoch,      fetch_offset,
                       max_bytes, log_start_offset, last_fetched_epoch};
    PyObject *objects[7] = {topic};
    Py_INCREF(topic);
    return tuple_of(7, ints, objects);
}

/* One FetchTopic, its partitions appended to `partitions`; 0 if not plain. */
static int fetch_topic(Reader *r, int version, PyObject *partitions) {
    PyObject *topic;
    int64_t count;
    if (version >= FIRST_TOPIC_ID_VERSION) {
        Py_ssize_t id_at;
        topic = take(r, 16, &id_at)
                    ? PyBytes_FromStringAndSize((const char *)r->buf + id_at, 16)
                    : NULL;
    } else {
        topic = string(r, 0);
    }
    if (topic == NULL || !length(r, 4, &count) || count < 0) {
        Py_XDECREF(topic);
        return 0;
    }
    int ok = 1;
    for (int64_t i = 0; ok && i < count; i++) {
        PyObject *item = fetch_partition(r, topic);
        ok = item != NULL && PyList_Append(partitions, item) == 0;
        Py_XDECREF(item);
    }
    Py_DECREF(topic);
    return ok && no_tagged_fields(r);
}

/* The body up to the topics: a consumer's sessionless fetch. */
static int fetch_top(Reader *r, int version, int64_t *max_wait_ms, int64_t *min_bytes,
                     int64_t *max_bytes, int64_t *isolation_level) {
    int64_t replica_id = -1, session_id, session_epoch;
    if (version < FIRST_REPLICA_STATE_VERSION && !fixed(r, 4, &replica_id)) {
        return 0;
    }
    return replica_id == -1 && fixed(r, 4, max_wait_ms) && fixed(r, 4, min_bytes)
           && fixed(r, 4, max_bytes) && fixed(r, 1, isolation_level)
           && (*isolation_level == 0 || *isolation_level == 1) && fixed(r, 4, &session_id)
           && session_id == 0 && fixed(r, 4, &session_epoch) && session_epoch == -1;
}

/* No forgotten topics, an ASCII rack id, no tagged fields (ReplicaState, ClusterId), and
 * nothing after them. */
static int fetch_tail(Reader *r) {
    int64_t forgotten, rack_id_length;
    Py_ssize_t start;
    if (!length(r, 4, &forgotten) || forgotten != 0 || !length(r, 2, &rack_id_length)
        || rack_id_length < 0 || !take(r, rack_id_length, &start)) {
        return 0;
    }
    for (int64_t i = 0; i < rack_id_length; i++) {
        if (r->buf[start + i] >= 0x80) {
            return 0;
        }
    }
    return no_tagged_fields(r) && r->pos == r->len;
}

static PyObject *plain_fetch(PyObject *module, PyObject *frame) {
    (void)module;
    Py_buffer view;
    if (PyObject_GetBuffer(frame, &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    Reader r = {(const uint8_t *)view.buf, view.len, 0, 0};
    int64_t version, correlation_id, max_wait_ms, min_bytes, max_bytes, isolation_level, topics;
    PyObject *partitions = PyList_New(0), *result = NULL;
    int ok = partitions != NULL
             && request_header(&r, FETCH_KEY, FIRST_PLAIN_FETCH_VERSION,
                               LAST_PLAIN_FETCH_VERSION, &version, &correlation_id)
             && fetch_top(&r, (int)version, &max_wait_ms, &min_bytes, &max_bytes,
                          &isolation_level)
             && length(&r, 4, &topics) && topics >= 0;
    for (int64_t i = 0; ok && i < topics; i++) {
        ok = fetch_topic(&r, (int)version, partitions);
    }
    if (ok && fetch_tail(&r)) {
        int64_t client_id_length = be(r.buf + CLIENT_ID_AT - 2, 2);
        PyObject *client_id = PyUnicode_DecodeASCII(
            (const char *)r.buf + CLIENT_ID_AT,
            client_id_length < 0 ? 0 : (Py_ssize_t)client_id_length, NULL);
        if (client_id != NULL) {
            int64_t ints[8] = {version,   correlation_id, 0, max_wait_ms, min_bytes,
                               max_bytes, isolation_level, 0};
            PyObject *objects[8] = {NULL, NULL, client_id, NULL, NULL, NULL, NULL, partitions};
            partitions = NULL; /* the tuple's */
            result = tuple_of(8, ints, objects);
        }
    }
    Py_XDECREF(partitions);
    PyBuffer_Release(&view);
    if (result == NULL && !PyErr_ExceptionMatches(PyExc_MemoryError)) {
        PyErr_Clear(); /* e.g. invalid UTF-8 in a topic name: the pure path's business */
        Py_RETURN_NONE;
    }
    return result;
}

/* ---- answer frames ------------------------------------------------------------------ */

static void put_be(uint8_t *p, int size, int64_t value) {
    for (int i = size - 1; i >= 0; i--) {
        p[i] = (uint8_t)(value & 0xFF);
        value >>= 8;
    }
}

/* Fast-call arguments: `count` ints from `args[first]` on; 0 with an exception set if one
 * is not an int or does not fit 64 bits. */
static int int_args(PyObject *const *args, Py_ssize_t first, Py_ssize_t count, int64_t *out) {
    for (Py_ssize_t i = 0; i < count; i++) {
        out[i] = PyLong_AsLongLong(args[first + i]);
        if (out[i] == -1 && PyErr_Occurred()) {
            return 0;
        }
    }
    return 1;
}

/* The offsets of one produced partition sit before 9 fixed bytes at the template's end (no
 * record errors, null error message, the partition's, topic's and response's empty tagged
 * fields around throttle time 0): base offset, log append time, log start offset. */
#define PRODUCE_OFFSETS_FROM_END (3 * 8 + 9)

/* produce_answer(template, correlation_id, base_offset, log_start_offset) -> bytearray: the
 * template (a whole answer frame) with the correlation id at 4 and the partition's offsets
 * (log append time -1: CreateTime) patched in (produce_native.py's `_answer_frame`). */
static PyObject *produce_answer(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    int64_t ints[3];
    if (nargs != 4 || !PyBytes_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "produce_answer(template, correlation_id, "
                                         "base_offset, log_start_offset)");
        return NULL;
    }
    Py_ssize_t size = PyBytes_GET_SIZE(args[0]);
    if (size < 8 + PRODUCE_OFFSETS_FROM_END) {
        PyErr_SetString(PyExc_ValueError, "produce_answer: template too short");
        return NULL;
    }
    if (!int_args(args, 1, 3, ints)) {
        return NULL;
    }
    PyObject *frame = PyByteArray_FromStringAndSize(PyBytes_AS_STRING(args[0]), size);
    if (frame == NULL) {
        return NULL;
    }
    uint8_t *p = (uint8_t *)PyByteArray_AS_STRING(frame);
    put_be(p + 4, 4, ints[0]);
    uint8_t *offsets = p + size - PRODUCE_OFFSETS_FROM_END;
    put_be(offsets, 8, ints[1]);
    put_be(offsets + 8, 8, -1);
    put_be(offsets + 16, 8, ints[2]);
    return frame;
}

/* The offsets of a fetched partition sit before the aborted transactions' one-byte length
 * (null or empty) and the preferred read replica (4 bytes) at the head's end. */
#define FETCH_OFFSETS_FROM_END (3 * 8 + 1 + 4)
#define FETCH_TAIL_BYTES 3 /* the partition's, topic's and response's empty tagged fields */

/* fetch_answer(head, correlation_id, high_watermark, last_stable_offset, log_start_offset,
 * records) -> bytearray: a one-partition Fetch answer (fetch_native.py's
 * `_single_partition_frame`): the head (the answer up to the preferred read replica), the
 * records' compact length and the records, the empty tagged fields; the frame size and
 * correlation id at 0 and the offsets patched into the head. */
static PyObject *fetch_answer(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    int64_t ints[4];
    if (nargs != 6 || !PyBytes_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "fetch_answer(head, correlation_id, high_watermark, "
                                         "last_stable_offset, log_start_offset, records)");
        return NULL;
    }
    Py_ssize_t head_size = PyBytes_GET_SIZE(args[0]);
    if (head_size < 8 + FETCH_OFFSETS_FROM_END) {
        PyErr_SetString(PyExc_ValueError, "fetch_answer: head too short");
        return NULL;
    }
    if (!int_args(args, 1, 4, ints)) {
        return NULL;
    }
    Py_buffer records;
    if (PyObject_GetBuffer(args[5], &records, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    uint8_t length[10];
    int length_bytes = 0;
    for (uint64_t value = (uint64_t)records.len + 1; ; value >>= 7) {
        length[length_bytes++] = (uint8_t)((value & 0x7F) | (value > 0x7F ? 0x80 : 0));
        if (value <= 0x7F) {
            break;
        }
    }
    Py_ssize_t size = head_size + length_bytes + records.len + FETCH_TAIL_BYTES;
    if (size - 4 > INT32_MAX) {
        PyBuffer_Release(&records);
        PyErr_SetString(PyExc_OverflowError, "fetch_answer: frame too large");
        return NULL;
    }
    PyObject *frame = PyByteArray_FromStringAndSize(NULL, size);
    if (frame != NULL) {
        uint8_t *p = (uint8_t *)PyByteArray_AS_STRING(frame);
        memcpy(p, PyBytes_AS_STRING(args[0]), (size_t)head_size);
        memcpy(p + head_size, length, (size_t)length_bytes);
        memcpy(p + head_size + length_bytes, records.buf, (size_t)records.len);
        memset(p + size - FETCH_TAIL_BYTES, 0, FETCH_TAIL_BYTES);
        put_be(p, 4, size - 4);
        put_be(p + 4, 4, ints[0]);
        uint8_t *offsets = p + head_size - FETCH_OFFSETS_FROM_END;
        put_be(offsets, 8, ints[1]);
        put_be(offsets + 8, 8, ints[2]);
        put_be(offsets + 16, 8, ints[3]);
    }
    PyBuffer_Release(&records);
    return frame;
}

static PyMethodDef methods[] = {
    {"walk_produce", (PyCFunction)(void (*)(void))walk_produce, METH_FASTCALL,
     "walk_produce(frame, pos, version) -> (transactional_id, acks, timeout_ms, topics, end) "
     "| None"},
    {"plain_produce", plain_produce, METH_O,
     "plain_produce(frame) -> (version, correlation_id, acks, topic, partition, start, stop, "
     "base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence, count, "
     "min_timestamp_delta, max_timestamp_delta, null_keys) | None"},
    {"plain_fetch", plain_fetch, METH_O,
     "plain_fetch(frame) -> (version, correlation_id, client_id, max_wait_ms, min_bytes, "
     "max_bytes, isolation_level, [(topic, partition, current_leader_epoch, fetch_offset, "
     "partition_max_bytes, log_start_offset, last_fetched_epoch)]) | None"},
    {"produce_answer", (PyCFunction)(void (*)(void))produce_answer, METH_FASTCALL,
     "produce_answer(template, correlation_id, base_offset, log_start_offset) -> bytearray"},
    {"fetch_answer", (PyCFunction)(void (*)(void))fetch_answer, METH_FASTCALL,
     "fetch_answer(head, correlation_id, high_watermark, last_stable_offset, "
     "log_start_offset, records) -> bytearray"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "minibroker.protocol._accel",
    "Produce and Fetch requests in C; the Python decoders and handlers are the reference.",
    -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__accel(void) {
    init_crc_table();
#ifdef HAVE_CRC_INSTRUCTION
    crc_in_hardware = __builtin_cpu_supports("sse4.2");
    if (crc_in_hardware) {
        init_stripe_shift(long_shift, LONG_STRIPE);
        init_stripe_shift(short_shift, SHORT_STRIPE);
    }
#endif
    return PyModule_Create(&module_def);
}
