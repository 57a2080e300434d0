/* IdMap: a map from str ids to values (a sketch, a cluster id) for the request path's memo (runtime/view.py).
 *
 * Why not a dict: a serving process looks up every id of a result set in a map of thousands of ids that the
 * rest of the request (gRPC, the kernel) has pushed out of the cache, so each lookup is a few cache misses in
 * a row. A dict of str keys keeps neither the hash nor the key's characters in its entries: a lookup reads the
 * index, the entry, then the key object (its hash, its characters), and again for each probe that collides.
 * Here one 64-byte entry holds the hash, the value and the key's characters (the first INLINE_BYTES of them;
 * a longer key is compared with the key object on a hash match), so a lookup reads one line, and get_many
 * prefetches the home slots of every id (and then the values it found) before it reads any of them, so the
 * misses overlap instead of following one another.
 *
 * Open addressing with linear probing; deletion shifts the entries after a removed one back (no tombstones).
 * Keys are compared as CPython stores them (kind and code units, as str equality does), so no encoding is
 * needed and any str is a key; the hash is str's own (randomized per process). It holds references to its
 * keys and values and takes part in no reference cycle (its values are bytes, None or ints).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

/* The bytes of a key kept in its entry, so that the entry is one cache line on 64-bit platforms. */
#define INLINE_BYTES 35
/* The fewest slots; a map grows when more than three quarters of its slots are full. */
#define MIN_CAPACITY 64

#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(address) __builtin_prefetch(address, 0)
#define PREFETCH_WRITE(address) __builtin_prefetch(address, 1)
#else
#define PREFETCH(address) ((void)(address))
#define PREFETCH_WRITE(address) ((void)(address))
#endif

typedef struct {
    Py_hash_t hash;
    PyObject *value; /* NULL: an empty slot */
    PyObject *key;   /* the str */
    uint32_t size;   /* the key's bytes: its length times its kind */
    uint8_t kind;
    char head[INLINE_BYTES];
} entry;
#if SIZEOF_VOID_P == 8
typedef char entry_is_one_cache_line[sizeof(entry) == 64 ? 1 : -1];
#endif

typedef struct {
    PyObject_HEAD
    entry *slots;
    void *allocation; /* slots, aligned to a cache line within it */
    size_t capacity;  /* a power of two */
    size_t count;
} IdMap;

/* A key as compared: its hash, kind, bytes and how many. */
typedef struct {
    Py_hash_t hash;
    const char *data;
    size_t size;
    int kind;
} key_view;

/* 0, or -1 with TypeError set (not a str) or the hash's error. */
static int view_key(PyObject *key, key_view *view)
{
    if (!PyUnicode_Check(key)) {
        PyErr_Format(PyExc_TypeError, "an id must be a str, not %.100s", Py_TYPE(key)->tp_name);
        return -1;
    }
    if (PyUnicode_READY(key) < 0)
        return -1;
    view->hash = PyUnicode_Type.tp_hash(key); /* str's own hash, even for a subclass: equal content, equal key */
    if (view->hash == -1 && PyErr_Occurred())
        return -1;
    view->kind = PyUnicode_KIND(key);
    view->data = (const char *)PyUnicode_DATA(key);
    view->size = (size_t)PyUnicode_GET_LENGTH(key) * (size_t)view->kind;
    return 0;
}

static int entry_holds(const entry *e, const key_view *key)
{
    if (e->hash != key->hash || e->size != key->size || e->kind != key->kind)
        return 0;
    size_t head = key->size < INLINE_BYTES ? key->size : INLINE_BYTES;
    if (memcmp(e->head, key->data, head))
        return 0;
    return key->size <= INLINE_BYTES ||
           !memcmp((const char *)PyUnicode_DATA(e->key) + INLINE_BYTES, key->data + INLINE_BYTES,
                   key->size - INLINE_BYTES);
}

/* The slot holding key, or the empty slot where it would go. */
static entry *find(const IdMap *map, const key_view *key)
{
    size_t mask = map->capacity - 1;
    for (size_t i = (size_t)key->hash & mask;; i = (i + 1) & mask) {
        entry *e = &map->slots[i];
        if (!e->value || entry_holds(e, key))
            return e;
    }
}

/* Fresh zeroed slots into map; 0, or -1 with MemoryError set. */
static int allocate_slots(IdMap *map, size_t capacity)
{
    void *allocation = PyMem_RawCalloc(capacity * sizeof(entry) + 63, 1);
    if (!allocation) {
        PyErr_NoMemory();
        return -1;
    }
    map->allocation = allocation;
    map->slots = (entry *)(((uintptr_t)allocation + 63) & ~(uintptr_t)63);
    map->capacity = capacity;
    return 0;
}

/* Moves every entry into a table of `capacity` slots (entries keep their hash: nothing is hashed again). */
static int resize(IdMap *map, size_t capacity)
{
    entry *old = map->slots;
    void *old_allocation = map->allocation;
    size_t old_capacity = map->capacity;
    if (allocate_slots(map, capacity) < 0)
        return -1;
    size_t mask = capacity - 1;
    for (size_t s = 0; s < old_capacity; s++) {
        if (!old[s].value)
            continue;
        size_t i = (size_t)old[s].hash & mask;
        while (map->slots[i].value)
            i = (i + 1) & mask;
        map->slots[i] = old[s];
    }
    PyMem_RawFree(old_allocation);
    return 0;
}

/* Sets key's value (new references taken); 0, or -1 with an error set. */
static int insert(IdMap *map, PyObject *key, PyObject *value)
{
    key_view view;
    if (view_key(key, &view) < 0)
        return -1;
    if ((map->count + 1) * 4 > map->capacity * 3 && resize(map, map->capacity * 2) < 0)
        return -1;
    entry *e = find(map, &view);
    Py_INCREF(value);
    if (e->value) {
        Py_SETREF(e->value, value);
        return 0;
    }
    Py_INCREF(key);
    e->hash = view.hash;
    e->value = value;
    e->key = key;
    e->size = (uint32_t)view.size;
    e->kind = (uint8_t)view.kind;
    memcpy(e->head, view.data, view.size < INLINE_BYTES ? view.size : INLINE_BYTES);
    map->count++;
    return 0;
}

/* Removes key if held: the entries after it in its run move back, so that every lookup still finds its key
 * before an empty slot. */
static int discard(IdMap *map, PyObject *key)
{
    key_view view;
    if (view_key(key, &view) < 0)
        return -1;
    entry *e = find(map, &view);
    if (!e->value)
        return 0;
    PyObject *old_key = e->key, *old_value = e->value;
    size_t mask = map->capacity - 1, hole = (size_t)(e - map->slots);
    for (size_t i = (hole + 1) & mask; map->slots[i].value; i = (i + 1) & mask) {
        size_t home = (size_t)map->slots[i].hash & mask;
        /* the entry at i may fill the hole unless its home lies cyclically in (hole, i] */
        int stays = hole <= i ? (hole < home && home <= i) : (hole < home || home <= i);
        if (!stays) {
            map->slots[hole] = map->slots[i];
            hole = i;
        }
    }
    memset(&map->slots[hole], 0, sizeof(entry));
    map->count--;
    Py_DECREF(old_key);
    Py_DECREF(old_value);
    return 0;
}

/* Drops every entry and goes back to the fewest slots. */
static int clear(IdMap *map)
{
    entry *old = map->slots;
    void *old_allocation = map->allocation;
    size_t old_capacity = map->capacity;
    if (allocate_slots(map, MIN_CAPACITY) < 0)
        return -1;
    map->count = 0;
    for (size_t s = 0; s < old_capacity; s++) {
        if (old[s].value) {
            Py_DECREF(old[s].key);
            Py_DECREF(old[s].value);
        }
    }
    PyMem_RawFree(old_allocation);
    return 0;
}

static PyObject *IdMap_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    if (PyTuple_GET_SIZE(args) || (kwargs && PyDict_GET_SIZE(kwargs))) {
        PyErr_SetString(PyExc_TypeError, "IdMap() takes no arguments");
        return NULL;
    }
    IdMap *map = (IdMap *)type->tp_alloc(type, 0);
    if (map && allocate_slots(map, MIN_CAPACITY) < 0) {
        Py_DECREF(map);
        return NULL;
    }
    return (PyObject *)map;
}

static void IdMap_dealloc(IdMap *map)
{
    for (size_t s = 0; map->slots && s < map->capacity; s++) {
        if (map->slots[s].value) {
            Py_DECREF(map->slots[s].key);
            Py_DECREF(map->slots[s].value);
        }
    }
    PyMem_RawFree(map->allocation);
    Py_TYPE(map)->tp_free((PyObject *)map);
}

static Py_ssize_t IdMap_length(IdMap *map)
{
    return (Py_ssize_t)map->count;
}

/* The number of ids a get_many call hashes and prefetches before it reads any entry. */
#define BATCH 64

PyDoc_STRVAR(get_many_doc, "get_many(ids, default) -> (values, unknown)\n\n"
                           "The value of each id (a sequence of str), default for an id the map does not hold, and\n"
                           "how many it does not hold.");

static PyObject *IdMap_get_many(IdMap *map, PyObject *args)
{
    PyObject *sequence, *fallback;
    if (!PyArg_ParseTuple(args, "OO:get_many", &sequence, &fallback))
        return NULL;
    PyObject *ids = PySequence_Fast(sequence, "ids must be a sequence of str");
    if (!ids)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(ids), unknown = 0;
    PyObject **items = PySequence_Fast_ITEMS(ids), *values = PyList_New(n);
    if (!values)
        goto fail;
    size_t mask = map->capacity - 1;
    key_view keys[BATCH];
    for (Py_ssize_t first = 0; first < n; first += BATCH) {
        Py_ssize_t count = n - first < BATCH ? n - first : BATCH;
        for (Py_ssize_t i = 0; i < count; i++) {
            if (view_key(items[first + i], &keys[i]) < 0)
                goto fail;
            PREFETCH(&map->slots[(size_t)keys[i].hash & mask]);
        }
        /* every value's header is prefetched before the first is written: increments right after each prefetch
         * waited on the misses one by one */
        PyObject *found[BATCH];
        for (Py_ssize_t i = 0; i < count; i++) {
            entry *e = find(map, &keys[i]);
            found[i] = e->value ? e->value : fallback;
            unknown += !e->value;
            PREFETCH_WRITE(found[i]); /* its header: written (the reference count) before the caller reads it */
        }
        for (Py_ssize_t i = 0; i < count; i++) {
            Py_INCREF(found[i]);
            PyList_SET_ITEM(values, first + i, found[i]);
        }
    }
    Py_DECREF(ids);
    return Py_BuildValue("(Nn)", values, unknown);
fail:
    Py_XDECREF(values);
    Py_DECREF(ids);
    return NULL;
}

PyDoc_STRVAR(update_doc, "update(ids, values)\n\nSets the value of each id (two sequences of one length).");

static PyObject *IdMap_update(IdMap *map, PyObject *args)
{
    PyObject *id_sequence, *value_sequence, *ids = NULL, *values = NULL, *result = NULL;
    if (!PyArg_ParseTuple(args, "OO:update", &id_sequence, &value_sequence))
        return NULL;
    if (!(ids = PySequence_Fast(id_sequence, "ids must be a sequence of str")) ||
        !(values = PySequence_Fast(value_sequence, "values must be a sequence")))
        goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(ids);
    if (PySequence_Fast_GET_SIZE(values) != n) {
        PyErr_Format(PyExc_ValueError, "%zd ids and %zd values", n, PySequence_Fast_GET_SIZE(values));
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (insert(map, PySequence_Fast_GET_ITEM(ids, i), PySequence_Fast_GET_ITEM(values, i)) < 0)
            goto done;
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(ids);
    Py_XDECREF(values);
    return result;
}

PyDoc_STRVAR(discard_many_doc, "discard_many(ids)\n\nRemoves each id of an iterable the map holds.");

static PyObject *IdMap_discard_many(IdMap *map, PyObject *iterable)
{
    PyObject *iterator = PyObject_GetIter(iterable), *key;
    if (!iterator)
        return NULL;
    while ((key = PyIter_Next(iterator))) {
        int failed = discard(map, key) < 0;
        Py_DECREF(key);
        if (failed)
            break;
    }
    Py_DECREF(iterator);
    if (PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(clear_doc, "clear()\n\nRemoves every id.");

static PyObject *IdMap_clear(IdMap *map, PyObject *unused)
{
    if (clear(map) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef IdMap_methods[] = {
    {"get_many", (PyCFunction)IdMap_get_many, METH_VARARGS, get_many_doc},
    {"update", (PyCFunction)IdMap_update, METH_VARARGS, update_doc},
    {"discard_many", (PyCFunction)IdMap_discard_many, METH_O, discard_many_doc},
    {"clear", (PyCFunction)IdMap_clear, METH_NOARGS, clear_doc},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods IdMap_as_sequence = {.sq_length = (lenfunc)IdMap_length};

static PyTypeObject IdMapType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "neardup.core._id_map.IdMap",
    .tp_basicsize = sizeof(IdMap),
    .tp_dealloc = (destructor)IdMap_dealloc,
    .tp_as_sequence = &IdMap_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "IdMap()\n\nA map from str ids to values whose lookups of many ids overlap their cache misses "
              "(see _id_map.c).",
    .tp_methods = IdMap_methods,
    .tp_new = IdMap_new,
};

static struct PyModuleDef id_map_module = {
    PyModuleDef_HEAD_INIT, "neardup.core._id_map", "A map from ids to values for the request path (see _id_map.c).",
    -1, NULL,
};

PyMODINIT_FUNC PyInit__id_map(void)
{
    if (PyType_Ready(&IdMapType) < 0)
        return NULL;
    PyObject *module = PyModule_Create(&id_map_module);
    if (!module)
        return NULL;
    Py_INCREF(&IdMapType);
    if (PyModule_AddObject(module, "IdMap", (PyObject *)&IdMapType) < 0) {
        Py_DECREF(&IdMapType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
