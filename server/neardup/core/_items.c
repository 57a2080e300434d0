/* Items with fields (core/item_scoring.py): the per-field similarities of the pairs of a result set, in one call with
 * the GIL released, so no Python loop runs per pair; and a pair model's boosted trees over those pairs.
 *
 * An item sketch (core/fields.py has the layout) is little-endian uint32 words: the number of sections, one
 * count per section (each field of the store's schema, in order, then the item's super tokens), then each
 * section's values, ascending.
 * A pair is a candidate only when the two items share a super token: a hash of the match tokens of every field
 * of one rule, so a pair that shares none can satisfy no rule and is never compared. Candidates come from one
 * radix sort of all (super token, item) entries; runs of one token mark their pairs in a bit matrix.
 *
 * Per field and candidate pair (NaN where either item lacks the field):
 *   text      containment and jaccard of the two bottom-K samples, compared below the smaller cap
 *             (reference.py's conditional sampling, without its evidence floor: a field is short by nature);
 *   exact     1 when the one normalised token is equal, else 0;
 *   location  the share of geohash cells (its cell and the eight around it) the two have in common.
 * core/item_reference.py is the specification this code is tested against (tests/core/test_items_reference.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { TEXT = 0, EXACT = 1, LOCATION = 2 };
#define MAX_FIELDS 64
#define MAX_ITEMS ((Py_ssize_t)1 << 16)
#define UNCAPPED ((uint64_t)1 << 32)

typedef struct {
    const unsigned char *bytes; /* NULL: no sketch (None or empty) */
    uint32_t count[MAX_FIELDS + 1];
    size_t offset[MAX_FIELDS + 1]; /* word index of each section's first value */
} item;

static inline uint32_t word_at(const unsigned char *bytes, size_t index)
{
    const unsigned char *b = bytes + 4 * index;
#if PY_LITTLE_ENDIAN
    uint32_t word;
    memcpy(&word, b, 4); /* one load */
    return word;
#else
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
#endif
}

/* How many of a section's (ascending) values are at most tau: all of them when tau is past its last. */
static size_t at_most(const item *x, int s, uint64_t tau)
{
    size_t low = 0, high = x->count[s];
    if (!high || word_at(x->bytes, x->offset[s] + high - 1) <= tau)
        return high;
    while (low < high) {
        size_t middle = (low + high) / 2;
        if (word_at(x->bytes, x->offset[s] + middle) <= tau)
            low = middle + 1;
        else
            high = middle;
    }
    return low;
}

/* Reads one sketch's header; -1 with ValueError set when its sections do not add up to its length. */
static int parse_item(PyObject *sketch, Py_ssize_t position, int sections, item *out)
{
    out->bytes = NULL;
    if (sketch == Py_None)
        return 0;
    if (!PyBytes_Check(sketch)) {
        PyErr_Format(PyExc_TypeError, "item sketch %zd must be bytes or None, not %.100s", position,
                     Py_TYPE(sketch)->tp_name);
        return -1;
    }
    Py_ssize_t size = PyBytes_GET_SIZE(sketch);
    if (size == 0)
        return 0;
    const unsigned char *bytes = (const unsigned char *)PyBytes_AS_STRING(sketch);
    if (size % 4 || size / 4 < 1 + sections || word_at(bytes, 0) != (uint32_t)sections) {
        PyErr_Format(PyExc_ValueError, "item sketch %zd is not a header of %d sections and their values",
                     position, sections);
        return -1;
    }
    size_t words = (size_t)size / 4, at = 1 + (size_t)sections;
    for (int s = 0; s < sections; s++) {
        out->count[s] = word_at(bytes, 1 + (size_t)s);
        out->offset[s] = at;
        at += out->count[s];
        if (at > words) {
            PyErr_Format(PyExc_ValueError, "item sketch %zd: its sections hold more values than its bytes",
                         position);
            return -1;
        }
    }
    if (at != words) {
        PyErr_Format(PyExc_ValueError, "item sketch %zd: %zu bytes after its sections", position, 4 * (words - at));
        return -1;
    }
    out->bytes = bytes;
    return 0;
}

/* Shared values of two ascending sections, and how many of each lie at or below tau. */
static size_t shared_values(const item *a, const item *b, int s, uint64_t tau, size_t *below_a, size_t *below_b)
{
    size_t la = a->count[s], lb = b->count[s], i = 0, j = 0, shared = 0;
    while (i < la && j < lb) {
        uint32_t x = word_at(a->bytes, a->offset[s] + i), y = word_at(b->bytes, b->offset[s] + j);
        shared += x == y;
        i += x <= y;
        j += y <= x;
    }
    if (below_a) {
        *below_a = at_most(a, s, tau);
        *below_b = at_most(b, s, tau);
    }
    return shared;
}

static uint64_t cap_of(const item *x, int s, uint32_t k)
{
    uint32_t n = x->count[s];
    return n && n >= k ? word_at(x->bytes, x->offset[s] + n - 1) : UNCAPPED;
}

/* The feature columns of one pair into row (see the module comment). */
static void pair_row(const item *a, const item *b, int fields, const unsigned char *kinds, const uint32_t *ks,
                     double *row)
{
    for (int f = 0; f < fields; f++) {
        int present = a->count[f] && b->count[f];
        if (kinds[f] == TEXT) {
            if (!present) {
                *row++ = NAN;
                *row++ = NAN;
                continue;
            }
            uint64_t ca = cap_of(a, f, ks[f]), cb = cap_of(b, f, ks[f]), tau = ca < cb ? ca : cb;
            size_t la, lb, shared = shared_values(a, b, f, tau, &la, &lb);
            size_t smaller = la < lb ? la : lb, union_ = la + lb - shared;
            *row++ = smaller ? (double)shared / (double)smaller : 0.0;
            *row++ = union_ ? (double)shared / (double)union_ : 0.0;
        } else if (kinds[f] == EXACT) {
            *row++ = present ? (double)(word_at(a->bytes, a->offset[f]) == word_at(b->bytes, b->offset[f])) : NAN;
        } else {
            size_t larger = a->count[f] > b->count[f] ? a->count[f] : b->count[f];
            *row++ = present ? (double)shared_values(a, b, f, 0, NULL, NULL) / (double)larger : NAN;
        }
    }
}

/* Sorts (token << 32 | item) entries by token, stably (entries come in item order, so a token's run stays in
 * item order): four byte-wise counting passes, several times faster than qsort here. Uses `spare` (as many). */
static void sort_by_token(uint64_t *entries, uint64_t *spare, size_t count)
{
    for (int shift = 32; shift < 64; shift += 8) {
        size_t starts[257] = {0};
        for (size_t e = 0; e < count; e++)
            starts[((entries[e] >> shift) & 0xFF) + 1]++;
        for (int b = 0; b < 256; b++)
            starts[b + 1] += starts[b];
        for (size_t e = 0; e < count; e++)
            spare[starts[(entries[e] >> shift) & 0xFF]++] = entries[e];
        memcpy(entries, spare, count * sizeof *entries);
    }
}

PyDoc_STRVAR(pair_features_doc,
             "pair_features(sketches, kinds, ks, query_only) -> (pairs, features)\n\n"
             "The candidate pairs of item sketches (bytes, or None/b'' for an item without one) and their per-field\n"
             "features: kinds holds one byte per field (0 text, 1 exact, 2 location), ks the bottom-K size of each\n"
             "field (uint32 bytes). A pair is a candidate when the two share a super token (the last section).\n"
             "query_only=1 pairs only item 0 with each other one. pairs: native int32 (i, j), i < j, by j then i;\n"
             "features: native float64, one row per pair (two columns per text field, one per other field).");

static PyObject *items_pair_features(PyObject *module, PyObject *args)
{
    PyObject *sequence;
    Py_buffer kinds_buffer, ks_buffer;
    int query_only = 0;
    if (!PyArg_ParseTuple(args, "Oy*y*|p:pair_features", &sequence, &kinds_buffer, &ks_buffer, &query_only))
        return NULL;
    PyObject *sketches = NULL, *result = NULL, *pairs_bytes = NULL, *features_bytes = NULL;
    item *items = NULL;
    uint64_t *entries = NULL, *matrix = NULL;
    int fields = (int)kinds_buffer.len, columns = 0;
    const unsigned char *kinds = kinds_buffer.buf;
    uint32_t ks[MAX_FIELDS];
    if (fields < 1 || fields > MAX_FIELDS || ks_buffer.len != 4 * fields) {
        PyErr_Format(PyExc_ValueError, "kinds must hold 1 to %d fields and ks one uint32 each", MAX_FIELDS);
        goto done;
    }
    memcpy(ks, ks_buffer.buf, 4 * (size_t)fields);
    for (int f = 0; f < fields; f++) {
        if (kinds[f] > LOCATION) {
            PyErr_Format(PyExc_ValueError, "unknown field kind code %d", kinds[f]);
            goto done;
        }
        columns += kinds[f] == TEXT ? 2 : 1;
    }
    sketches = PySequence_Tuple(sequence);
    if (!sketches)
        goto done;
    Py_ssize_t n = PyTuple_GET_SIZE(sketches);
    if (n > MAX_ITEMS) {
        PyErr_Format(PyExc_ValueError, "more than %zd items", MAX_ITEMS);
        goto done;
    }
    items = PyMem_Calloc((size_t)n + 1, sizeof *items);
    if (!items) {
        PyErr_NoMemory();
        goto done;
    }
    size_t total = 0;
    for (Py_ssize_t s = 0; s < n; s++) {
        if (parse_item(PyTuple_GET_ITEM(sketches, s), s, fields + 1, &items[s]) < 0)
            goto done;
        if (items[s].bytes)
            total += items[s].count[fields];
    }
    /* query_only: bit j marks pair (0, j); else bit j * n + i marks pair i < j */
    size_t words = ((query_only ? (size_t)n : (size_t)n * (size_t)n) + 63) / 64;
    entries = PyMem_Malloc(2 * (total + 1) * sizeof *entries); /* the second half: sort_by_token's spare */
    matrix = PyMem_Calloc(words + 1, sizeof *matrix);
    if (!entries || !matrix) {
        PyErr_NoMemory();
        goto done;
    }
    size_t n_pairs = 0;
    Py_BEGIN_ALLOW_THREADS
    size_t e = 0;
    for (Py_ssize_t s = 0; s < n; s++) {
        const item *x = &items[s];
        if (!x->bytes)
            continue;
        for (uint32_t v = 0; v < x->count[fields]; v++)
            entries[e++] = (uint64_t)word_at(x->bytes, x->offset[fields] + v) << 32 | (uint64_t)s;
    }
    sort_by_token(entries, entries + total + 1, e);
    for (size_t run = 0; run < e;) {
        size_t end = run + 1;
        while (end < e && entries[end] >> 32 == entries[run] >> 32)
            end++;
        /* a run is sorted by item, so item 0 leads the runs it is in */
        int with_query = (entries[run] & 0xFFFFFFFFu) == 0;
        for (size_t q = run + 1; q < end && (with_query || !query_only); q++) {
            size_t j = (size_t)(entries[q] & 0xFFFFFFFFu);
            for (size_t p = run; p < (query_only ? run + 1 : q); p++) {
                size_t i = (size_t)(entries[p] & 0xFFFFFFFFu);
                if (i == j || (query_only && i != 0))
                    continue;
                size_t bit = query_only ? j : j * (size_t)n + i;
                if (!(matrix[bit >> 6] >> (bit & 63) & 1)) {
                    matrix[bit >> 6] |= (uint64_t)1 << (bit & 63);
                    n_pairs++;
                }
            }
        }
        run = end;
    }
    Py_END_ALLOW_THREADS
    pairs_bytes = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n_pairs * 2 * sizeof(int32_t)));
    features_bytes = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n_pairs * (size_t)columns * sizeof(double)));
    if (!pairs_bytes || !features_bytes)
        goto done;
    int32_t *pairs = (int32_t *)PyBytes_AS_STRING(pairs_bytes);
    double *rows = (double *)PyBytes_AS_STRING(features_bytes);
    Py_BEGIN_ALLOW_THREADS
    size_t p = 0;
    for (size_t j = 1; j < (size_t)n; j++) {
        for (size_t i = 0; i < (query_only ? 1 : j); i++) {
            size_t bit = query_only ? j : j * (size_t)n + i;
            if (!(matrix[bit >> 6] >> (bit & 63) & 1))
                continue;
            pairs[2 * p] = (int32_t)i;
            pairs[2 * p + 1] = (int32_t)j;
            pair_row(&items[i], &items[j], fields, kinds, ks, rows + p * (size_t)columns);
            p++;
        }
    }
    Py_END_ALLOW_THREADS
    result = PyTuple_Pack(2, pairs_bytes, features_bytes);
done:
    Py_XDECREF(pairs_bytes);
    Py_XDECREF(features_bytes);
    PyMem_Free(items);
    PyMem_Free(entries);
    PyMem_Free(matrix);
    Py_XDECREF(sketches);
    PyBuffer_Release(&kinds_buffer);
    PyBuffer_Release(&ks_buffer);
    return result;
}

PyDoc_STRVAR(tree_sum_doc,
             "tree_sum(inputs, columns, feature, threshold, left, right, value, roots) -> sums\n\n"
             "The sum over regression trees of each row's leaf value (a gradient boosting's raw score before its\n"
             "initial value and learning rate): inputs native float64 rows of `columns` values; the trees' nodes\n"
             "concatenated, feature/left/right native int32 (left -1 at a leaf; children index the whole array),\n"
             "threshold/value native float64; roots the int32 index of each tree's root. A row goes left when its\n"
             "feature's value is <= the threshold. Checked: indices in range, children after their parents.");

static PyObject *items_tree_sum(PyObject *module, PyObject *args)
{
    Py_buffer in, feature, threshold, left, right, value, roots;
    Py_ssize_t columns;
    if (!PyArg_ParseTuple(args, "y*ny*y*y*y*y*y*:tree_sum", &in, &columns, &feature, &threshold, &left, &right,
                          &value, &roots))
        return NULL;
    PyObject *result = NULL;
    size_t nodes = (size_t)feature.len / sizeof(int32_t), trees = (size_t)roots.len / sizeof(int32_t);
    size_t rows = columns > 0 ? (size_t)in.len / sizeof(double) / (size_t)columns : 0;
    const int32_t *f = feature.buf, *l = left.buf, *r = right.buf, *root = roots.buf;
    const double *t = threshold.buf, *v = value.buf, *x = in.buf;
    int valid = columns > 0 && (size_t)in.len == rows * (size_t)columns * sizeof(double) &&
                (size_t)threshold.len == nodes * sizeof(double) && (size_t)value.len == nodes * sizeof(double) &&
                (size_t)left.len == nodes * sizeof(int32_t) && (size_t)right.len == nodes * sizeof(int32_t);
    for (size_t n = 0; valid && n < nodes; n++)
        valid = l[n] == -1 ? r[n] == -1
                           : (l[n] > (int32_t)n && (size_t)l[n] < nodes && r[n] > (int32_t)n && (size_t)r[n] < nodes &&
                              f[n] >= 0 && f[n] < columns);
    for (size_t k = 0; valid && k < trees; k++)
        valid = root[k] >= 0 && (size_t)root[k] < nodes;
    if (!valid) {
        PyErr_SetString(PyExc_ValueError, "malformed trees or inputs");
        goto done;
    }
    result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(rows * sizeof(double)));
    if (!result)
        goto done;
    double *sums = (double *)PyBytes_AS_STRING(result);
    Py_BEGIN_ALLOW_THREADS
    for (size_t row = 0; row < rows; row++) {
        const double *features = x + row * (size_t)columns;
        double sum = 0.0;
        for (size_t k = 0; k < trees; k++) {
            int32_t n = root[k];
            while (l[n] != -1) /* children come after their parents: the walk ends */
                n = features[f[n]] <= t[n] ? l[n] : r[n];
            sum += v[n];
        }
        sums[row] = sum;
    }
    Py_END_ALLOW_THREADS
done:
    PyBuffer_Release(&in);
    PyBuffer_Release(&feature);
    PyBuffer_Release(&threshold);
    PyBuffer_Release(&left);
    PyBuffer_Release(&right);
    PyBuffer_Release(&value);
    PyBuffer_Release(&roots);
    return result;
}

static PyMethodDef items_methods[] = {
    {"pair_features", items_pair_features, METH_VARARGS, pair_features_doc},
    {"tree_sum", items_tree_sum, METH_VARARGS, tree_sum_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef items_module = {
    PyModuleDef_HEAD_INIT, "neardup.core._items",
    "Per-field similarities of the candidate pairs of item sketches (pairs sharing a super token).", -1,
    items_methods,
};

PyMODINIT_FUNC PyInit__items(void)
{
    PyObject *module = PyModule_Create(&items_module);
    if (module == NULL)
        return NULL;
    /* the field kinds' codes, which core/item_scoring.py checks against vocabulary.FIELD_KIND_CODES at import */
    if (PyModule_AddIntConstant(module, "TEXT", TEXT) < 0 || PyModule_AddIntConstant(module, "EXACT", EXACT) < 0
            || PyModule_AddIntConstant(module, "LOCATION", LOCATION) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
