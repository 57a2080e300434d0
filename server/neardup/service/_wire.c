/* The protobuf wire format of Dedup's hot path, compiled: a DedupRequest of stored ids read into a list of str,
 * and a DedupResponse written from the kernel's packed answer, without building message objects.
 *
 * Why: on a 100-id result set, building and parsing the messages through the protobuf runtime cost more server
 * time than everything else but the kernel (benchmarks/request_cost.py). This is a converter, nothing more: it
 * knows the two messages' field numbers (tests compare them with the generated code) and no rule of the
 * service. A request it does not read plainly (any other field, a malformed message, an id that is not UTF-8)
 * makes it answer None, and the servicer takes the general path, which owns every decoding error. Its responses are byte for byte what the protobuf runtime serializes (field-number order, packed
 * repeated fields, fields at their zero value left out), so cached answers and tests cannot tell them apart.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

/* DedupRequest and DedupResponse field numbers (proto/neardup/v1/neardup.proto). */
enum { REQUEST_IDS = 1, REQUEST_TAG = 7 };
enum {
    RESPONSE_DUPLICATE_OF = 1,
    RESPONSE_GROUP = 3,
    RESPONSE_MISSING = 4,
    RESPONSE_THRESHOLD = 6,
    RESPONSE_METRIC = 7,
    RESPONSE_GROUPING = 8,
    RESPONSE_SIMILARITY = 9,
    RESPONSE_CLUSTER = 12
};
enum { WIRE_VARINT = 0, WIRE_FIXED64 = 1, WIRE_LEN = 2 };

/* Reads a varint at *at (before end) into *value; 0, or -1 when it is truncated or longer than ten bytes. */
static int read_varint(const uint8_t **at, const uint8_t *end, uint64_t *value)
{
    uint64_t result = 0;
    for (int shift = 0; shift < 70 && *at < end; shift += 7) {
        uint8_t byte = *(*at)++;
        result |= (uint64_t)(byte & 0x7F) << shift;
        if (byte < 0x80) {
            *value = result;
            return 0;
        }
    }
    return -1;
}

PyDoc_STRVAR(parse_dedup_ids_doc,
             "parse_dedup_ids(request, max_id_bytes) -> (ids, tag, key) or None\n\n"
             "A DedupRequest that holds only ids and maybe a tag: its ids as a list of str, its tag (0 when unset)\n"
             "and its bytes without the tag (the request itself when it has none). None for any other request,\n"
             "for one that is not a valid DedupRequest, and for one with an id the id rule refuses (empty, or\n"
             "over max_id_bytes UTF-8 bytes; the general path then says which): the ids returned keep the rule.");

static PyObject *parse_dedup_ids(PyObject *module, PyObject *args)
{
    PyObject *request;
    Py_ssize_t max_id_bytes;
    if (!PyArg_ParseTuple(args, "Sn:parse_dedup_ids", &request, &max_id_bytes))
        return NULL;
    const uint8_t *start = (const uint8_t *)PyBytes_AS_STRING(request), *end = start + PyBytes_GET_SIZE(request);
    Py_ssize_t count = 0, id_bytes = 0; /* id_bytes: the bytes of the ids' fields, keys included */
    uint64_t tag = 0;
    int tagged = 0;
    for (const uint8_t *at = start; at < end;) {
        const uint8_t *field = at;
        uint64_t key, value;
        if (read_varint(&at, end, &key) < 0 || read_varint(&at, end, &value) < 0)
            Py_RETURN_NONE;
        if (key == (REQUEST_IDS << 3 | WIRE_LEN)) {
            /* past the end, or an id the rule refuses (its UTF-8 is its bytes on the wire) */
            if (value > (uint64_t)(end - at) || value == 0 || value > (uint64_t)max_id_bytes)
                Py_RETURN_NONE;
            count++;
            at += value;
            id_bytes += at - field;
        } else if (key == (REQUEST_TAG << 3 | WIRE_VARINT)) {
            tag = value; /* the last one wins, as in any parser */
            tagged = 1;
        } else {
            Py_RETURN_NONE;
        }
    }

    PyObject *ids = PyList_New(count), *key = NULL;
    if (!ids)
        return NULL;
    char *key_at = NULL;
    if (tagged) {
        key = PyBytes_FromStringAndSize(NULL, id_bytes);
        if (!key)
            goto fail;
        key_at = PyBytes_AS_STRING(key);
    } else {
        key = Py_NewRef(request);
    }
    Py_ssize_t position = 0;
    for (const uint8_t *at = start; at < end;) {
        const uint8_t *field = at;
        uint64_t field_key = 0, value = 0;
        read_varint(&at, end, &field_key); /* the first pass checked every field */
        read_varint(&at, end, &value);
        if (field_key != (REQUEST_IDS << 3 | WIRE_LEN))
            continue;
        PyObject *id = PyUnicode_DecodeUTF8((const char *)at, (Py_ssize_t)value, NULL);
        if (!id) {
            if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
                goto fail;
            PyErr_Clear(); /* not a valid protobuf string: the general path says so */
            Py_DECREF(ids);
            Py_DECREF(key);
            Py_RETURN_NONE;
        }
        PyList_SET_ITEM(ids, position++, id);
        at += value;
        if (key_at) {
            memcpy(key_at, field, (size_t)(at - field));
            key_at += at - field;
        }
    }
    PyObject *result = Py_BuildValue("(NKN)", ids, (unsigned long long)tag, key);
    return result;
fail:
    Py_DECREF(ids);
    Py_XDECREF(key);
    return NULL;
}

static size_t varint_size(uint64_t value)
{
    size_t size = 1;
    while (value >= 0x80) {
        value >>= 7;
        size++;
    }
    return size;
}

static uint8_t *write_varint(uint8_t *at, uint64_t value)
{
    while (value >= 0x80) {
        *at++ = (uint8_t)(value | 0x80);
        value >>= 7;
    }
    *at++ = (uint8_t)value;
    return at;
}

/* A packed repeated field of varints (int32 and int64 alike: a negative one takes ten bytes). */
typedef struct {
    int number;
    Py_ssize_t count;
    const int32_t *int32s;  /* from the kernel's answer, or */
    PyObject *const *items; /* Python ints (missing positions, cluster ids) */
    size_t payload;
} varint_field;

static int measure_varints(varint_field *field)
{
    field->payload = 0;
    for (Py_ssize_t i = 0; i < field->count; i++) {
        int64_t value;
        if (field->int32s) {
            value = field->int32s[i];
        } else {
            value = PyLong_AsLongLong(field->items[i]);
            if (value == -1 && PyErr_Occurred())
                return -1;
        }
        field->payload += varint_size((uint64_t)value);
    }
    return 0;
}

static size_t len_field_size(int number, size_t payload)
{
    return payload ? varint_size((uint64_t)number << 3) + varint_size(payload) + payload : 0;
}

static uint8_t *write_varints(uint8_t *at, const varint_field *field)
{
    if (!field->payload)
        return at;
    at = write_varint(at, (uint64_t)field->number << 3 | WIRE_LEN);
    at = write_varint(at, field->payload);
    for (Py_ssize_t i = 0; i < field->count; i++) {
        int64_t value = field->int32s ? field->int32s[i] : PyLong_AsLongLong(field->items[i]);
        at = write_varint(at, (uint64_t)value);
    }
    return at;
}

PyDoc_STRVAR(encode_dedup_response_doc,
             "encode_dedup_response(packed, missing, threshold, metric, grouping, clusters) -> bytes\n\n"
             "The serialized DedupResponse of a kernel answer (kernel.dedup(..., packed=True)), the positions\n"
             "missing from the store, the parameters applied (metric and grouping as proto enum numbers) and the\n"
             "cluster ids (a sequence, or None before the store is clustered).");

static PyObject *encode_dedup_response(PyObject *module, PyObject *args)
{
    PyObject *packed, *missing_sequence, *cluster_sequence;
    double threshold;
    int metric, grouping;
    if (!PyArg_ParseTuple(args, "SOdiiO:encode_dedup_response", &packed, &missing_sequence, &threshold, &metric,
                          &grouping, &cluster_sequence))
        return NULL;
    Py_ssize_t size = PyBytes_GET_SIZE(packed);
    if (size % 16) {
        PyErr_Format(PyExc_ValueError, "a packed answer holds 16 bytes a result, got %zd bytes", size);
        return NULL;
    }
    Py_ssize_t n = size / 16;
    const char *answer = PyBytes_AS_STRING(packed);
    PyObject *missing = PySequence_Fast(missing_sequence, "missing must be a sequence of int"), *clusters = NULL,
             *response = NULL;
    if (!missing)
        return NULL;
    if (cluster_sequence != Py_None &&
        !(clusters = PySequence_Fast(cluster_sequence, "clusters must be a sequence of int or None")))
        goto done;
    /* int32s point into the bytes object: its buffer is aligned for them (CPython allocates it 8-aligned) */
    varint_field duplicate_of = {RESPONSE_DUPLICATE_OF, n, (const int32_t *)answer, NULL, 0},
                 group = {RESPONSE_GROUP, n, (const int32_t *)(answer + 4 * n), NULL, 0},
                 missing_field = {RESPONSE_MISSING, PySequence_Fast_GET_SIZE(missing), NULL,
                                  PySequence_Fast_ITEMS(missing), 0},
                 cluster = {RESPONSE_CLUSTER, clusters ? PySequence_Fast_GET_SIZE(clusters) : 0, NULL,
                            clusters ? PySequence_Fast_ITEMS(clusters) : NULL, 0};
    if (measure_varints(&duplicate_of) < 0 || measure_varints(&group) < 0 || measure_varints(&missing_field) < 0 ||
        measure_varints(&cluster) < 0)
        goto done;
    uint64_t threshold_bits;
    memcpy(&threshold_bits, &threshold, sizeof threshold_bits);
    size_t total = len_field_size(RESPONSE_DUPLICATE_OF, duplicate_of.payload) +
                   len_field_size(RESPONSE_GROUP, group.payload) +
                   len_field_size(RESPONSE_MISSING, missing_field.payload) + (threshold_bits ? 1 + 8 : 0) +
                   (metric ? 1 + varint_size((uint64_t)(int64_t)metric) : 0) +
                   (grouping ? 1 + varint_size((uint64_t)(int64_t)grouping) : 0) +
                   len_field_size(RESPONSE_SIMILARITY, (size_t)n * 8) + len_field_size(RESPONSE_CLUSTER, cluster.payload);
    response = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    if (!response)
        goto done;
    uint8_t *at = (uint8_t *)PyBytes_AS_STRING(response);
    at = write_varints(at, &duplicate_of);
    at = write_varints(at, &group);
    at = write_varints(at, &missing_field);
    if (threshold_bits) {
        *at++ = RESPONSE_THRESHOLD << 3 | WIRE_FIXED64;
        memcpy(at, &threshold, 8); /* little-endian, as the wire wants, on every platform this builds for */
        at += 8;
    }
    if (metric) {
        *at++ = RESPONSE_METRIC << 3 | WIRE_VARINT;
        at = write_varint(at, (uint64_t)(int64_t)metric);
    }
    if (grouping) {
        *at++ = RESPONSE_GROUPING << 3 | WIRE_VARINT;
        at = write_varint(at, (uint64_t)(int64_t)grouping);
    }
    if (n) {
        at = write_varint(at, RESPONSE_SIMILARITY << 3 | WIRE_LEN);
        at = write_varint(at, (uint64_t)n * 8);
        memcpy(at, answer + 8 * n, (size_t)n * 8);
        at += n * 8;
    }
    at = write_varints(at, &cluster);
done:
    Py_DECREF(missing);
    Py_XDECREF(clusters);
    return response;
}

static PyMethodDef wire_methods[] = {
    {"parse_dedup_ids", parse_dedup_ids, METH_VARARGS, parse_dedup_ids_doc},
    {"encode_dedup_response", encode_dedup_response, METH_VARARGS, encode_dedup_response_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef wire_module = {
    PyModuleDef_HEAD_INIT, "neardup.service._wire",
    "Dedup's request and response on the wire, compiled (see _wire.c).", -1, wire_methods,
};

PyMODINIT_FUNC PyInit__wire(void)
{
#if PY_BIG_ENDIAN
#error "_wire.c copies doubles as the wire's little-endian bytes"
#endif
    PyObject *module = PyModule_Create(&wire_module);
    if (!module)
        return NULL;
    /* the field numbers, for the test that holds them to the generated code */
    if (PyModule_AddIntConstant(module, "REQUEST_IDS", REQUEST_IDS) < 0 ||
        PyModule_AddIntConstant(module, "REQUEST_TAG", REQUEST_TAG) < 0 ||
        PyModule_AddIntConstant(module, "RESPONSE_DUPLICATE_OF", RESPONSE_DUPLICATE_OF) < 0 ||
        PyModule_AddIntConstant(module, "RESPONSE_GROUP", RESPONSE_GROUP) < 0 ||
        PyModule_AddIntConstant(module, "RESPONSE_MISSING", RESPONSE_MISSING) < 0 ||
        PyModule_AddIntConstant(module, "RESPONSE_THRESHOLD", RESPONSE_THRESHOLD) < 0 ||
        PyModule_AddIntConstant(module, "RESPONSE_METRIC", RESPONSE_METRIC) < 0 ||
        PyModule_AddIntConstant(module, "RESPONSE_GROUPING", RESPONSE_GROUPING) < 0 ||
        PyModule_AddIntConstant(module, "RESPONSE_SIMILARITY", RESPONSE_SIMILARITY) < 0 ||
        PyModule_AddIntConstant(module, "RESPONSE_CLUSTER", RESPONSE_CLUSTER) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
