/* A Redis Cluster store's request path groups a result set's ids by shard (store/redis_cluster.py): the shard of an
 * id is the CRC-32 (zlib's) of its key, modulo the store's shards. In Python that is a zlib call and a dict append
 * per id, which cost more than the rest of the store's side of a request; here it is one pass.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

/* Slicing-by-8 (Kounavis and Berry): table[k][byte] is the CRC of the byte followed by k zero bytes, so eight bytes
 * take eight independent lookups instead of a chain of eight; a byte at a time was most of this module's time. */
static uint32_t crc_table[8][256];

static void make_crc_table(void)
{
    for (uint32_t byte = 0; byte < 256; byte++) {
        uint32_t crc = byte;
        for (int bit = 0; bit < 8; bit++)
            crc = crc & 1 ? 0xEDB88320u ^ (crc >> 1) : crc >> 1;
        crc_table[0][byte] = crc;
    }
    for (int slice = 1; slice < 8; slice++)
        for (int byte = 0; byte < 256; byte++)
            crc_table[slice][byte] = (crc_table[slice - 1][byte] >> 8) ^
                                     crc_table[0][crc_table[slice - 1][byte] & 0xFF];
}

static uint32_t little_endian_word(const unsigned char *data)
{
    return (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 | (uint32_t)data[3] << 24;
}

static uint32_t crc32_of(const unsigned char *data, Py_ssize_t length)
{
    uint32_t crc = 0xFFFFFFFFu;
    for (; length >= 8; data += 8, length -= 8) {
        uint32_t low = little_endian_word(data) ^ crc, high = little_endian_word(data + 4);
        crc = crc_table[7][low & 0xFF] ^ crc_table[6][(low >> 8) & 0xFF] ^ crc_table[5][(low >> 16) & 0xFF] ^
              crc_table[4][low >> 24] ^ crc_table[3][high & 0xFF] ^ crc_table[2][(high >> 8) & 0xFF] ^
              crc_table[1][(high >> 16) & 0xFF] ^ crc_table[0][high >> 24];
    }
    while (length--)
        crc = crc_table[0][(crc ^ *data++) & 0xFF] ^ (crc >> 8);
    return crc ^ 0xFFFFFFFFu;
}

static PyObject *positions_by_shard(PyObject *self, PyObject *args)
{
    PyObject *keys;
    Py_ssize_t shards;
    if (!PyArg_ParseTuple(args, "On", &keys, &shards))
        return NULL;
    if (shards < 1) {
        PyErr_SetString(PyExc_ValueError, "shards must be at least 1");
        return NULL;
    }
    PyObject *sequence = PySequence_Fast(keys, "keys must be a sequence of bytes");
    if (!sequence)
        return NULL;
    PyObject *groups = PyDict_New();
    if (!groups)
        goto failed;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(sequence);
    PyObject **items = PySequence_Fast_ITEMS(sequence);
    for (Py_ssize_t position = 0; position < count; position++) {
        char *data;
        Py_ssize_t length;
        if (PyBytes_AsStringAndSize(items[position], &data, &length) < 0)
            goto failed;
        PyObject *shard = PyLong_FromUnsignedLong(crc32_of((const unsigned char *)data, length) % (uint32_t)shards);
        if (!shard)
            goto failed;
        PyObject *positions = PyDict_GetItemWithError(groups, shard); /* borrowed */
        if (!positions) {
            if (PyErr_Occurred() || !(positions = PyList_New(0)) || PyDict_SetItem(groups, shard, positions) < 0) {
                Py_XDECREF(positions);
                Py_DECREF(shard);
                goto failed;
            }
            Py_DECREF(positions); /* the dict holds it */
        }
        Py_DECREF(shard);
        PyObject *at = PyLong_FromSsize_t(position);
        if (!at || PyList_Append(positions, at) < 0) {
            Py_XDECREF(at);
            goto failed;
        }
        Py_DECREF(at);
    }
    Py_DECREF(sequence);
    return groups;
failed:
    Py_XDECREF(groups);
    Py_DECREF(sequence);
    return NULL;
}

static PyMethodDef shards_methods[] = {
    {"positions_by_shard", positions_by_shard, METH_VARARGS,
     "positions_by_shard(keys, shards) -> dict\n\nThe positions of keys (bytes) by shard, each shard the CRC-32 of a "
     "key (zlib.crc32's) modulo `shards`; only shards holding some key, each its positions ascending."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef shards_module = {
    PyModuleDef_HEAD_INIT, "neardup.store._shards", "A Redis Cluster store's ids grouped by shard (see _shards.c).",
    -1, shards_methods,
};

PyMODINIT_FUNC PyInit__shards(void)
{
    make_crc_table();
    return PyModule_Create(&shards_module);
}
