/* The sketcher's per-shingle loops, compiled: CRC-32 of every word n-gram of a text in one call
 * (sketch._ngram_hashes), and the K smallest values outside the stop-list as sketch bytes (Sketcher.sketch_hashes),
 * or their 64-bit SimHash fingerprint (reference.simhash is the specification; tests hold the two equal).
 *
 * The Python loop made one crcmod call and one bytes slice per n-gram, which cost more than the CRC itself.
 * Here the loop is crcmod's own (_crcfunext.c, _crc32r: crc = table[byte ^ (crc & 0xFF)] ^ (crc >> 8)) over
 * crcmod's table, passed in by sketch.py, so the values are crcmod's CRC-32 of each n-gram's UTF-8 bytes
 * (tests/test_sketch.py holds them equal).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>

static uint32_t crc32_update(const unsigned char *data, Py_ssize_t length, uint32_t crc, const uint32_t *table)
{
    while (length--)
        crc = table[*data++ ^ (crc & 0xFF)] ^ (crc >> 8);
    return crc;
}

static int add_hash(PyObject *hashes, uint32_t value)
{
    PyObject *item = PyLong_FromUnsignedLong(value);
    if (!item)
        return -1;
    int status = PySet_Add(hashes, item);
    Py_DECREF(item);
    return status;
}

PyDoc_STRVAR(ngram_hashes_doc,
             "ngram_hashes(data, n, table, mask) -> set[int]\n\n"
             "CRC-32 (crcmod's table; initial value and final xor `mask`) of every n consecutive words of `data`, "
             "UTF-8 words joined by single spaces; of all of `data` when it has at most n words, none when empty.");

static PyObject *ngram_hashes(PyObject *module, PyObject *args)
{
    Py_buffer data, table;
    Py_ssize_t n;
    unsigned long mask;
    if (!PyArg_ParseTuple(args, "y*ny*k:ngram_hashes", &data, &n, &table, &mask))
        return NULL;
    PyObject *hashes = NULL;
    Py_ssize_t *starts = NULL;
    if (n < 1 || table.len != 256 * 4) {
        PyErr_SetString(PyExc_ValueError, "n must be at least 1 and the table 256 uint32 values");
        goto done;
    }
    const unsigned char *bytes = data.buf;
    const uint32_t *crc_table = table.buf;
    uint32_t init = (uint32_t)mask;
    if (!(hashes = PySet_New(NULL)) || data.len == 0)
        goto done;
    Py_ssize_t words = 1;
    for (Py_ssize_t i = 0; i < data.len; i++)
        words += bytes[i] == ' ';
    if (words <= n) {
        if (add_hash(hashes, init ^ crc32_update(bytes, data.len, init, crc_table)) < 0)
            Py_CLEAR(hashes);
        goto done;
    }
    /* word w is bytes[starts[w] .. starts[w + 1] - 1); starts[words] is one past the end */
    if (!(starts = PyMem_Malloc((size_t)(words + 1) * sizeof *starts))) {
        PyErr_NoMemory();
        Py_CLEAR(hashes);
        goto done;
    }
    Py_ssize_t w = 0;
    starts[w++] = 0;
    for (Py_ssize_t i = 0; i < data.len; i++)
        if (bytes[i] == ' ')
            starts[w++] = i + 1;
    starts[words] = data.len + 1;
    for (Py_ssize_t first = 0; first + n <= words; first++) {
        Py_ssize_t begin = starts[first], end = starts[first + n] - 1;
        if (add_hash(hashes, init ^ crc32_update(bytes + begin, end - begin, init, crc_table)) < 0) {
            Py_CLEAR(hashes);
            break;
        }
    }
done:
    PyMem_Free(starts);
    PyBuffer_Release(&data);
    PyBuffer_Release(&table);
    return hashes;
}

/* A max-heap of the k smallest values seen: heap[0] is the largest kept. */
static void sift_down(uint32_t *heap, Py_ssize_t size, Py_ssize_t at)
{
    for (;;) {
        Py_ssize_t largest = at, left = 2 * at + 1, right = left + 1;
        if (left < size && heap[left] > heap[largest])
            largest = left;
        if (right < size && heap[right] > heap[largest])
            largest = right;
        if (largest == at)
            return;
        uint32_t swap = heap[at];
        heap[at] = heap[largest];
        heap[largest] = swap;
        at = largest;
    }
}

static int ascending(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

PyDoc_STRVAR(bottom_k_doc,
             "bottom_k(values, stoplist, k) -> bytes\n\n"
             "The k smallest distinct values of the iterable `values` that are not in the set `stoplist`, as "
             "ascending little-endian uint32 bytes. OverflowError for a value outside [0, 2**32).");

static PyObject *bottom_k(PyObject *module, PyObject *args)
{
    PyObject *values, *stoplist;
    Py_ssize_t k;
    if (!PyArg_ParseTuple(args, "OO!n:bottom_k", &values, &PyFrozenSet_Type, &stoplist, &k))
        return NULL;
    if (k < 1) {
        PyErr_SetString(PyExc_ValueError, "k must be at least 1");
        return NULL;
    }
    PyObject *unique = PyAnySet_Check(values) ? (Py_INCREF(values), values) : PySet_New(values);
    if (!unique)
        return NULL;
    Py_ssize_t capacity = PySet_GET_SIZE(unique) < k ? PySet_GET_SIZE(unique) : k, size = 0;
    uint32_t *heap = PyMem_Malloc((size_t)(capacity ? capacity : 1) * sizeof *heap);
    PyObject *iterator = heap ? PyObject_GetIter(unique) : NULL, *item, *result = NULL;
    if (!heap) {
        PyErr_NoMemory();
        goto done;
    }
    if (!iterator)
        goto done;
    while ((item = PyIter_Next(iterator))) {
        int stopped = PySet_GET_SIZE(stoplist) ? PySet_Contains(stoplist, item) : 0;
        unsigned long value = stopped ? 0 : PyLong_AsUnsignedLong(item);
        Py_DECREF(item);
        if (stopped < 0 || (value == (unsigned long)-1 && PyErr_Occurred()))
            goto done;
        if (stopped)
            continue;
        if (value > 0xFFFFFFFFul) {
            PyErr_SetString(PyExc_OverflowError, "sketch values must fit in 32 bits");
            goto done;
        }
        if (size < capacity) {
            Py_ssize_t at = size++;
            heap[at] = (uint32_t)value;
            while (at && heap[(at - 1) / 2] < heap[at]) {  /* sift up */
                uint32_t swap = heap[at];
                heap[at] = heap[(at - 1) / 2];
                heap[(at - 1) / 2] = swap;
                at = (at - 1) / 2;
            }
        } else if ((uint32_t)value < heap[0]) {
            heap[0] = (uint32_t)value;
            sift_down(heap, size, 0);
        }
    }
    if (PyErr_Occurred())
        goto done;
    qsort(heap, (size_t)size, sizeof *heap, ascending);
    if (!(result = PyBytes_FromStringAndSize(NULL, size * 4)))
        goto done;
    unsigned char *out = (unsigned char *)PyBytes_AS_STRING(result);
    for (Py_ssize_t i = 0; i < size; i++) {
        out[4 * i] = (unsigned char)heap[i];
        out[4 * i + 1] = (unsigned char)(heap[i] >> 8);
        out[4 * i + 2] = (unsigned char)(heap[i] >> 16);
        out[4 * i + 3] = (unsigned char)(heap[i] >> 24);
    }
done:
    Py_XDECREF(iterator);
    Py_DECREF(unique);
    PyMem_Free(heap);
    return result;
}

/* splitmix64 (Steele, Lea and Flood): a shingle's CRC-32 spread over 64 bits for SimHash. */
static uint64_t splitmix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

PyDoc_STRVAR(simhash_doc,
             "simhash(values, stoplist) -> bytes\n\n"
             "Charikar's 64-bit SimHash of the distinct values of the iterable `values` that are not in the set\n"
             "`stoplist`, each weighing 1: bit b is set when more than half of the values' splitmix64 hashes have\n"
             "bit b set. 8 little-endian bytes, or b'' when no value is left. OverflowError for a value outside\n"
             "[0, 2**32).");

static PyObject *simhash(PyObject *module, PyObject *args)
{
    PyObject *values, *stoplist;
    if (!PyArg_ParseTuple(args, "OO!:simhash", &values, &PyFrozenSet_Type, &stoplist))
        return NULL;
    PyObject *unique = PyAnySet_Check(values) ? (Py_INCREF(values), values) : PySet_New(values);
    if (!unique)
        return NULL;
    PyObject *iterator = PyObject_GetIter(unique), *item, *result = NULL;
    Py_ssize_t ones[64] = {0}, total = 0;
    if (!iterator)
        goto done;
    while ((item = PyIter_Next(iterator))) {
        int stopped = PySet_GET_SIZE(stoplist) ? PySet_Contains(stoplist, item) : 0;
        unsigned long value = stopped ? 0 : PyLong_AsUnsignedLong(item);
        Py_DECREF(item);
        if (stopped < 0 || (value == (unsigned long)-1 && PyErr_Occurred()))
            goto done;
        if (stopped)
            continue;
        if (value > 0xFFFFFFFFul) {
            PyErr_SetString(PyExc_OverflowError, "shingle hashes must fit in 32 bits");
            goto done;
        }
        uint64_t hash = splitmix64((uint64_t)value);
        for (int bit = 0; bit < 64; bit++)
            ones[bit] += (Py_ssize_t)((hash >> bit) & 1);
        total++;
    }
    if (PyErr_Occurred())
        goto done;
    if (!total) {
        result = PyBytes_FromStringAndSize(NULL, 0);
        goto done;
    }
    uint64_t fingerprint = 0;
    for (int bit = 0; bit < 64; bit++)
        fingerprint |= (uint64_t)(2 * ones[bit] > total) << bit;
    unsigned char out[8];
    for (int i = 0; i < 8; i++)
        out[i] = (unsigned char)(fingerprint >> (8 * i));
    result = PyBytes_FromStringAndSize((const char *)out, 8);
done:
    Py_XDECREF(iterator);
    Py_DECREF(unique);
    return result;
}

static PyMethodDef shingle_methods[] = {
    {"ngram_hashes", ngram_hashes, METH_VARARGS, ngram_hashes_doc},
    {"bottom_k", bottom_k, METH_VARARGS, bottom_k_doc},
    {"simhash", simhash, METH_VARARGS, simhash_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef shingle_module = {
    PyModuleDef_HEAD_INIT, "neardup.core._shingle",
    "Compiled word n-gram hashing of neardup's sketcher: crcmod's CRC-32 loop over every n-gram in one call;\n"
    "the bottom-K cut and the SimHash fingerprint.",
    -1, shingle_methods,
};

PyMODINIT_FUNC PyInit__shingle(void)
{
    return PyModule_Create(&shingle_module);
}
