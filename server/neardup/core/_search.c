/* Corpus search in memory: a serving process's copy of the store's sketches and postings, searched in one call.
 *
 * The store path (core/candidates.py over the store's buckets) answers a FindSimilar with B-tree lookups and numpy
 * passes; this structure answers the same question, exactly, from memory:
 *  - articles by number (docno, the store's): their sketch values in one pool, and a state: ABSENT, IN_BASE (its
 *    postings are in the base) or a version >= FIRST_VERSION (written since the base was built; its postings are
 *    in the delta under that version). A base or delta entry counts only while its article's state says so, so a
 *    replaced or deleted article is never found through its old postings (tombstones, no rewrite);
 *  - base postings: entries (tag, docno) grouped in 2**bits buckets by a value's low bits (the tag holds the
 *    others), sorted within a bucket by value, then short articles (under MIN_EVIDENCE values) first, then docno.
 *    A value's run longer than hot_postings has its count of short entries in a small table, so the long
 *    articles of a hot value can be left unread;
 *  - delta postings: value -> chain of (docno, version), in a hash table, for what was written since the base.
 *    compact() rebuilds the base from the pool when the caller finds the delta large.
 * A search gathers the postings of the query's values, counts shared values per article (a counter per docno,
 * reset after), applies the bound rule below (the one the store path applies too, through may_reach), and
 * verifies what passes with the kernel's early-terminating merge (_pair.h). The caller holds the GIL throughout,
 * so searches and writes never overlap and the scratch space is the index's own; but compact() (seconds at a
 * million articles) releases it, and every other call on the index is refused while it runs, so a caller may
 * fold in a background thread while its others go on (live_index.LiveIndex searches the store meanwhile).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_pair.h"

enum { ABSENT = 0, IN_BASE = 1, FIRST_VERSION = 2 };
/* Base buckets hold about this many entries; at least 2**MIN_BUCKET_BITS buckets, so a tag fits 16 bits. */
#define ENTRIES_PER_BUCKET 16
#define MIN_BUCKET_BITS 16
#define NO_ENTRY (-1)

#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH_READ(address) __builtin_prefetch(address, 0)
#define PREFETCH_WRITE(address) __builtin_prefetch(address, 1)
#else
#define PREFETCH_READ(address) ((void)(address))
#define PREFETCH_WRITE(address) ((void)(address))
#endif

/* ---- the bound rule (core/candidates.py's module docstring): one copy, for both search paths ---- */

/* What a long article's similarity with a query of query_length values is at least divided by. */
static size_t bound_divisor(size_t query_length, int metric)
{
    if (metric == JACCARD)
        return query_length;
    return query_length < MIN_EVIDENCE ? query_length : MIN_EVIDENCE;
}

/* How many of a query's `hot` hot values (hottest first) may be left unread: a long article sharing only them
 * stays below the threshold. */
static size_t hot_skipped(size_t hot, size_t query_length, double threshold, int metric)
{
    size_t divisor = bound_divisor(query_length, metric), skipped = 0;
    while (skipped < hot && (double)(skipped + 1) / (double)divisor < threshold)
        skipped++;
    return skipped;
}

/* Whether an article that shares `shared` of the read values with the query may reach the threshold: `length`
 * is its number of values when short (under MIN_EVIDENCE, all of its entries were read), 0 when long (then every
 * skipped value counts as shared). */
static int may_reach(size_t shared, size_t length, size_t skipped, size_t query_length, double threshold,
                     int metric)
{
    size_t divisor = bound_divisor(query_length, metric);
    double bound;
    if (metric == JACCARD)
        bound = (double)(shared + (length > 0 ? 0 : skipped)) / (double)divisor;
    else if (length > 0)
        bound = (double)shared / (double)(query_length < length ? query_length : length);
    else
        bound = (double)(shared + skipped) / (double)divisor;
    return bound >= threshold;
}

static int check_metric(int metric)
{
    if (metric != CONTAINMENT && metric != JACCARD) {
        PyErr_Format(PyExc_ValueError, "unknown metric code %d", metric);
        return -1;
    }
    return 0;
}

/* ---- the index ---- */

/* What a search reads of an article for each of its entries, in one cache line: whether the entry counts
 * (state), its length (the bound of a short one), and the search's count of shared values (0 between searches). */
typedef struct {
    uint32_t state;
    uint16_t length;
    uint16_t count;
} article_slot;

/* A base entry: the value's bits above the bucket's (tag) and the docno, in 6 bytes, so that a bucket's tags and
 * docnos come in the same cache lines. */
typedef struct {
    uint16_t tag, docno_low, docno_high;
} entry;

static inline uint32_t entry_docno(entry e)
{
    return (uint32_t)e.docno_low | (uint32_t)e.docno_high << 16;
}

typedef struct {
    PyObject_HEAD
    Py_ssize_t k;
    size_t hot_postings;
    /* articles by docno */
    size_t capacity, limit, articles;
    uint64_t *offset;
    article_slot *slot;
    uint32_t next_version;
    /* every article's sketch values; pool_live of pool_used are a stored article's */
    uint32_t *pool;
    size_t pool_used, pool_capacity, pool_live;
    /* base postings */
    int sealed, bits;
    uint32_t *directory;
    entry *base;
    size_t base_entries;
    uint32_t *hot_values, *hot_short; /* ascending values of the runs over hot_postings, their short entries */
    size_t n_hot;
    /* delta postings */
    uint32_t *delta_keys;
    int32_t *delta_heads;
    size_t delta_slots, delta_values;
    uint32_t *delta_docno, *delta_version;
    int32_t *delta_next;
    size_t delta_entries, delta_capacity;
    /* a search's scratch */
    uint32_t *touched;
    size_t touched_capacity;
    uint32_t *values;       /* the query, then one candidate */
    size_t *run_start, *run_end, *run_short_end, *run_long;
    uint32_t *hot_order;
    uint64_t *candidates;
    size_t candidates_capacity;
    size_t hot_values_skipped; /* over every search so far: whether the hot rule acts */
    int compacting; /* compact() runs without the GIL: every other call is refused meanwhile */
} SearchIndex;

static void *grow(void *array, size_t count, size_t size)
{
    return realloc(array, (count ? count : 1) * size);
}

/* Room for docnos below `needed`: the per-article arrays (new slots zeroed: ABSENT, no count). */
static int reserve_docnos(SearchIndex *self, size_t needed)
{
    if (needed <= self->capacity)
        return 0;
    size_t capacity = self->capacity ? self->capacity : 1024;
    while (capacity < needed)
        capacity *= 2;
    uint64_t *offset = grow(self->offset, capacity, sizeof *offset);
    if (offset)
        self->offset = offset;
    article_slot *slot = grow(self->slot, capacity, sizeof *slot);
    if (slot)
        self->slot = slot;
    if (!offset || !slot) {
        PyErr_NoMemory();
        return -1;
    }
    memset(self->slot + self->capacity, 0, (capacity - self->capacity) * sizeof *slot);
    self->capacity = capacity;
    return 0;
}

static int reserve_pool(SearchIndex *self, size_t needed)
{
    if (needed <= self->pool_capacity)
        return 0;
    size_t capacity = self->pool_capacity ? self->pool_capacity : 4096;
    while (capacity < needed)
        capacity *= 2;
    uint32_t *pool = grow(self->pool, capacity, sizeof *pool);
    if (!pool) {
        PyErr_NoMemory();
        return -1;
    }
    self->pool = pool;
    self->pool_capacity = capacity;
    return 0;
}

static uint64_t slot_hash(uint32_t value, size_t slots)
{
    return ((uint64_t)value * 0x9E3779B97F4A7C15ull) >> (64 - __builtin_ctzll((unsigned long long)slots));
}

static void clear_delta(SearchIndex *self)
{
    free(self->delta_keys);
    free(self->delta_heads);
    self->delta_keys = NULL;
    self->delta_heads = NULL;
    self->delta_slots = self->delta_values = self->delta_entries = 0;
}

/* The delta's chain head slot of value (an empty slot if absent); the table must have a free slot. */
static size_t delta_slot(const SearchIndex *self, uint32_t value)
{
    size_t mask = self->delta_slots - 1, at = (size_t)slot_hash(value, self->delta_slots);
    while (self->delta_heads[at] != NO_ENTRY && self->delta_keys[at] != value)
        at = (at + 1) & mask;
    return at;
}

static int delta_rehash(SearchIndex *self, size_t slots)
{
    uint32_t *keys = malloc(slots * sizeof *keys);
    int32_t *heads = malloc(slots * sizeof *heads);
    if (!keys || !heads) {
        free(keys);
        free(heads);
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < slots; i++)
        heads[i] = NO_ENTRY;
    uint32_t *old_keys = self->delta_keys;
    int32_t *old_heads = self->delta_heads;
    size_t old_slots = self->delta_slots;
    self->delta_keys = keys;
    self->delta_heads = heads;
    self->delta_slots = slots;
    for (size_t i = 0; i < old_slots; i++)
        if (old_heads[i] != NO_ENTRY) {
            size_t at = delta_slot(self, old_keys[i]);
            keys[at] = old_keys[i];
            heads[at] = old_heads[i];
        }
    free(old_keys);
    free(old_heads);
    return 0;
}

static int delta_add(SearchIndex *self, uint32_t value, uint32_t docno, uint32_t version)
{
    if (2 * (self->delta_values + 1) > self->delta_slots &&
        delta_rehash(self, self->delta_slots ? 2 * self->delta_slots : 1024) < 0)
        return -1;
    if (self->delta_entries == self->delta_capacity) {
        size_t capacity = self->delta_capacity ? 2 * self->delta_capacity : 1024;
        if (capacity > INT32_MAX) {
            PyErr_SetString(PyExc_MemoryError, "the search index's delta is full: compact it");
            return -1;
        }
        uint32_t *d = grow(self->delta_docno, capacity, sizeof *d);
        if (d)
            self->delta_docno = d;
        uint32_t *v = grow(self->delta_version, capacity, sizeof *v);
        if (v)
            self->delta_version = v;
        int32_t *n = grow(self->delta_next, capacity, sizeof *n);
        if (n)
            self->delta_next = n;
        if (!d || !v || !n) {
            PyErr_NoMemory();
            return -1;
        }
        self->delta_capacity = capacity;
    }
    size_t at = delta_slot(self, value);
    if (self->delta_heads[at] == NO_ENTRY) {
        self->delta_keys[at] = value;
        self->delta_values++;
    }
    size_t entry = self->delta_entries++;
    self->delta_docno[entry] = docno;
    self->delta_version[entry] = version;
    self->delta_next[entry] = self->delta_heads[at];
    self->delta_heads[at] = (int32_t)entry;
    return 0;
}

static int compare_keys(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

enum { COMPACT_NO_MEMORY = -1, COMPACT_TOO_MANY = -2 };

/* Rebuilds the base postings (and the pool, when most of it is garbage) from every stored article; empties the
 * delta. The old base is freed first: the pool holds everything it is rebuilt from. Touches no Python object, so
 * it may run without the GIL: 0, or a COMPACT_ error for compact_failed to raise. */
static int compact(SearchIndex *self)
{
    free(self->directory);
    free(self->base);
    free(self->hot_values);
    free(self->hot_short);
    self->directory = NULL;
    self->base = NULL;
    self->hot_values = self->hot_short = NULL;
    self->base_entries = self->n_hot = 0;
    self->sealed = 0;
    clear_delta(self);

    if (self->pool_used > self->pool_live + self->pool_live / 4) {
        uint32_t *pool = malloc((self->pool_live ? self->pool_live : 1) * sizeof *pool);
        if (!pool)
            return COMPACT_NO_MEMORY;
        size_t used = 0;
        for (size_t d = 0; d < self->limit; d++)
            if (self->slot[d].state != ABSENT) {
                memcpy(pool + used, self->pool + self->offset[d], self->slot[d].length * sizeof *pool);
                self->offset[d] = used;
                used += self->slot[d].length;
            }
        free(self->pool);
        self->pool = pool;
        self->pool_used = self->pool_capacity = used;
    }

    size_t total = self->pool_live;
    if (total > UINT32_MAX)
        return COMPACT_TOO_MANY;
    int bits = MIN_BUCKET_BITS;
    while (((size_t)1 << bits) * ENTRIES_PER_BUCKET < total)
        bits++;
    size_t buckets = (size_t)1 << bits, mask = buckets - 1;
    uint32_t *directory = calloc(buckets + 1, sizeof *directory);
    entry *base = malloc((total ? total : 1) * sizeof *base);
    if (!directory || !base)
        goto no_memory;
    for (size_t d = 0; d < self->limit; d++)
        if (self->slot[d].state != ABSENT) {
            const uint32_t *v = self->pool + self->offset[d];
            for (size_t i = 0; i < self->slot[d].length; i++)
                directory[(v[i] & mask) + 1]++;
        }
    size_t largest = 0;
    for (size_t b = 0; b < buckets; b++) {
        if (directory[b + 1] > largest)
            largest = directory[b + 1];
        directory[b + 1] += directory[b];
    }
    /* scatter in docno order, so each bucket is in docno order; the cursor of bucket b runs in directory[b] */
    for (size_t d = 0; d < self->limit; d++)
        if (self->slot[d].state != ABSENT) {
            const uint32_t *v = self->pool + self->offset[d];
            for (size_t i = 0; i < self->slot[d].length; i++) {
                uint32_t at = directory[v[i] & mask]++;
                base[at] = (entry){(uint16_t)(v[i] >> bits), (uint16_t)d, (uint16_t)(d >> 16)};
            }
            self->slot[d].state = IN_BASE;
        }
    memmove(directory + 1, directory, buckets * sizeof *directory);
    directory[0] = 0;
    /* within a bucket: by tag, then docno (the scatter's order, which these sorts keep); a hot run (over
     * hot_postings entries, the only kind whose long articles a search may leave unread) short articles first */
    uint64_t *keys = malloc((largest ? largest : 1) * sizeof *keys);
    if (!keys)
        goto no_memory;
    size_t hot_capacity = 0;
    for (size_t b = 0; b < buckets; b++) {
        size_t start = directory[b], end = directory[b + 1];
        if (end - start <= 4 * ENTRIES_PER_BUCKET) {
            for (size_t e = start + 1; e < end; e++) {
                entry moved = base[e];
                size_t at = e;
                for (; at > start && base[at - 1].tag > moved.tag; at--)
                    base[at] = base[at - 1];
                base[at] = moved;
            }
        } else {
            for (size_t e = start; e < end; e++)
                keys[e - start] = (uint64_t)base[e].tag << 32 | entry_docno(base[e]);
            qsort(keys, end - start, sizeof *keys, compare_keys);
            for (size_t e = start; e < end; e++)
                base[e] = (entry){(uint16_t)(keys[e - start] >> 32), (uint16_t)keys[e - start],
                                  (uint16_t)(keys[e - start] >> 16)};
        }
        for (size_t run = start, stop; run < end; run = stop) {
            for (stop = run + 1; stop < end && base[stop].tag == base[run].tag;)
                stop++;
            if (stop - run <= self->hot_postings)
                continue;
            size_t shorts = 0, longs = 0;
            for (size_t e = run; e < stop; e++) {
                uint32_t d = entry_docno(base[e]);
                if (self->slot[d].length < MIN_EVIDENCE)
                    base[run + shorts++] = base[e]; /* never ahead of e: stable */
                else
                    keys[longs++] = d;
            }
            for (size_t l = 0; l < longs; l++)
                base[run + shorts + l] = (entry){base[run].tag, (uint16_t)keys[l], (uint16_t)(keys[l] >> 16)};
            if (self->n_hot == hot_capacity) {
                hot_capacity = hot_capacity ? 2 * hot_capacity : 64;
                uint32_t *values = grow(self->hot_values, hot_capacity, sizeof *values);
                if (values)
                    self->hot_values = values;
                uint32_t *shorts_of = grow(self->hot_short, hot_capacity, sizeof *shorts_of);
                if (shorts_of)
                    self->hot_short = shorts_of;
                if (!values || !shorts_of) {
                    free(keys);
                    goto no_memory;
                }
            }
            self->hot_values[self->n_hot] = (uint32_t)base[run].tag << bits | (uint32_t)b;
            self->hot_short[self->n_hot++] = (uint32_t)shorts;
        }
    }
    free(keys);
    /* the hot table is searched by value: sort it (it is in bucket order) */
    if (self->n_hot > 1) {
        uint64_t *pairs = malloc(self->n_hot * sizeof *pairs);
        if (!pairs)
            goto no_memory;
        for (size_t i = 0; i < self->n_hot; i++)
            pairs[i] = (uint64_t)self->hot_values[i] << 32 | self->hot_short[i];
        qsort(pairs, self->n_hot, sizeof *pairs, compare_keys);
        for (size_t i = 0; i < self->n_hot; i++) {
            self->hot_values[i] = (uint32_t)(pairs[i] >> 32);
            self->hot_short[i] = (uint32_t)pairs[i];
        }
        free(pairs);
    }
    self->directory = directory;
    self->base = base;
    self->bits = bits;
    self->base_entries = total;
    self->next_version = FIRST_VERSION;
    self->sealed = 1;
    return 0;
no_memory:
    free(directory);
    free(base);
    return COMPACT_NO_MEMORY;
}

/* Raises compact()'s error (the GIL held); returns -1. */
static int compact_failed(int error)
{
    if (error == COMPACT_TOO_MANY)
        PyErr_SetString(PyExc_MemoryError, "the search index holds more than 2**32 postings");
    else
        PyErr_NoMemory();
    return -1;
}

/* ---- Python glue ---- */

static int parse_sketch(SearchIndex *self, PyObject *sketch, const char *what)
{
    if (!PyBytes_Check(sketch)) {
        PyErr_Format(PyExc_TypeError, "%s must be bytes, not %.100s", what, Py_TYPE(sketch)->tp_name);
        return -1;
    }
    Py_ssize_t size = PyBytes_GET_SIZE(sketch);
    if (size % 4 || size / 4 > self->k) {
        PyErr_Format(PyExc_ValueError, "%s is %zd bytes: not a sketch of at most K=%zd uint32 values", what, size,
                     self->k);
        return -1;
    }
    return 0;
}

static int parse_docno(PyObject *object, uint32_t *docno)
{
    unsigned long long value = PyLong_AsUnsignedLongLong(object);
    if (value == (unsigned long long)-1 && PyErr_Occurred())
        return -1;
    if (value > 0xFFFFFFFEull) {
        PyErr_SetString(PyExc_ValueError, "docno must be below 2**32 - 1");
        return -1;
    }
    *docno = (uint32_t)value;
    return 0;
}

static int index_init(SearchIndex *self, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"k", "hot_postings", NULL};
    Py_ssize_t k, hot_postings;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "nn:Index", names, &k, &hot_postings))
        return -1;
    if (k < 1 || k > 65535 || hot_postings < 0) {
        PyErr_SetString(PyExc_ValueError, "k must be in 1..65535 and hot_postings >= 0");
        return -1;
    }
    if (self->k) {
        PyErr_SetString(PyExc_RuntimeError, "Index is already initialised");
        return -1;
    }
    self->k = k;
    self->hot_postings = (size_t)hot_postings;
    self->next_version = FIRST_VERSION;
    self->values = malloc(2 * (size_t)k * sizeof *self->values);
    self->run_start = malloc((size_t)k * sizeof(size_t));
    self->run_end = malloc((size_t)k * sizeof(size_t));
    self->run_short_end = malloc((size_t)k * sizeof(size_t));
    self->run_long = malloc((size_t)k * sizeof(size_t));
    self->hot_order = malloc((size_t)k * sizeof(uint32_t));
    if (!self->values || !self->run_start || !self->run_end || !self->run_short_end || !self->run_long ||
        !self->hot_order) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void index_dealloc(SearchIndex *self)
{
    free(self->offset);
    free(self->slot);
    free(self->pool);
    free(self->directory);
    free(self->base);
    free(self->hot_values);
    free(self->hot_short);
    clear_delta(self);
    free(self->delta_docno);
    free(self->delta_version);
    free(self->delta_next);
    free(self->touched);
    free(self->values);
    free(self->run_start);
    free(self->run_end);
    free(self->run_short_end);
    free(self->run_long);
    free(self->hot_order);
    free(self->candidates);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int require_initialised(SearchIndex *self)
{
    if (!self->k) {
        PyErr_SetString(PyExc_RuntimeError, "Index is not initialised");
        return -1;
    }
    if (self->compacting) {
        PyErr_SetString(PyExc_RuntimeError, "Index is being compacted by another thread");
        return -1;
    }
    return 0;
}

static void forget(SearchIndex *self, uint32_t docno)
{
    if (docno < self->limit && self->slot[docno].state != ABSENT) {
        self->slot[docno].state = ABSENT;
        self->pool_live -= self->slot[docno].length;
        self->articles--;
    }
}

PyDoc_STRVAR(put_doc, "put(docno, sketch)\n\nStores (or replaces) article docno's sketch; searchable at once.");

static PyObject *index_put(SearchIndex *self, PyObject *args)
{
    PyObject *number, *sketch;
    uint32_t docno;
    if (require_initialised(self) < 0 || !PyArg_ParseTuple(args, "OO:put", &number, &sketch) ||
        parse_docno(number, &docno) < 0 || parse_sketch(self, sketch, "sketch") < 0)
        return NULL;
    size_t length = (size_t)PyBytes_GET_SIZE(sketch) / 4;
    if (reserve_docnos(self, (size_t)docno + 1) < 0 || reserve_pool(self, self->pool_used + length) < 0)
        return NULL;
    int error;
    if (self->sealed && self->next_version == UINT32_MAX && (error = compact(self)) < 0)
        return compact_failed(error), NULL;
    forget(self, docno);
    uint32_t *values = self->pool + self->pool_used;
    decode_values(values, PyBytes_AS_STRING(sketch), length);
    self->offset[docno] = self->pool_used;
    self->slot[docno].length = (uint16_t)length;
    self->pool_used += length;
    self->pool_live += length;
    self->articles++;
    if (docno >= self->limit)
        self->limit = (size_t)docno + 1;
    uint32_t version = self->next_version++;
    self->slot[docno].state = version;
    if (self->sealed)
        for (size_t i = 0; i < length; i++)
            if (delta_add(self, values[i], docno, version) < 0) {
                forget(self, docno); /* never half indexed: the article is left out */
                return NULL;
            }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(remove_doc, "remove(docno) -> bool\n\nForgets article docno; whether it was stored.");

static PyObject *index_remove(SearchIndex *self, PyObject *arg)
{
    uint32_t docno;
    if (require_initialised(self) < 0 || parse_docno(arg, &docno) < 0)
        return NULL;
    int stored = docno < self->limit && self->slot[docno].state != ABSENT;
    forget(self, docno);
    return PyBool_FromLong(stored);
}

PyDoc_STRVAR(sketch_doc, "sketch(docno) -> bytes | None\n\nThe stored sketch of article docno.");

static PyObject *index_sketch(SearchIndex *self, PyObject *arg)
{
    uint32_t docno;
    if (require_initialised(self) < 0 || parse_docno(arg, &docno) < 0)
        return NULL;
    if (docno >= self->limit || self->slot[docno].state == ABSENT)
        Py_RETURN_NONE;
    size_t length = self->slot[docno].length;
    PyObject *sketch = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)length * 4);
    if (!sketch)
        return NULL;
    unsigned char *out = (unsigned char *)PyBytes_AS_STRING(sketch);
    const uint32_t *v = self->pool + self->offset[docno];
    for (size_t i = 0; i < length; i++) {
        out[4 * i] = (unsigned char)v[i];
        out[4 * i + 1] = (unsigned char)(v[i] >> 8);
        out[4 * i + 2] = (unsigned char)(v[i] >> 16);
        out[4 * i + 3] = (unsigned char)(v[i] >> 24);
    }
    return sketch;
}

PyDoc_STRVAR(compact_doc, "compact()\n\nRebuilds the base postings from every stored article and empties the delta\n"
                          "(the first call makes the index searchable). Runs without the GIL (seconds at a million\n"
                          "articles): other threads go on, and any call of theirs on this index meanwhile raises\n"
                          "RuntimeError.");

static PyObject *index_compact(SearchIndex *self, PyObject *unused)
{
    if (require_initialised(self) < 0)
        return NULL;
    int error;
    self->compacting = 1;
    Py_BEGIN_ALLOW_THREADS
    error = compact(self);
    Py_END_ALLOW_THREADS
    self->compacting = 0;
    if (error < 0)
        return compact_failed(error), NULL;
    Py_RETURN_NONE;
}

/* The first entry of [at, stop) whose tag is not below `tag` (`inclusive`: above it): a scan in a bucket of a few
 * entries, a binary search in one holding a hot value's run (scanning that run cost most of a search). */
static size_t tag_bound(const entry *base, size_t at, size_t stop, uint16_t tag, int inclusive)
{
    while (stop - at > 2 * ENTRIES_PER_BUCKET) {
        size_t middle = at + (stop - at) / 2;
        if (base[middle].tag < tag || (inclusive && base[middle].tag == tag))
            at = middle + 1;
        else
            stop = middle;
    }
    while (at < stop && (base[at].tag < tag || (inclusive && base[at].tag == tag)))
        at++;
    return at;
}

/* The base run of value: entries [*start, *end), short ones up to *short_end. */
static void base_run(const SearchIndex *self, uint32_t value, size_t *start, size_t *end, size_t *short_end)
{
    size_t bucket = value & (((size_t)1 << self->bits) - 1);
    uint16_t tag = (uint16_t)(value >> self->bits);
    size_t stop = self->directory[bucket + 1];
    size_t first = tag_bound(self->base, self->directory[bucket], stop, tag, 0);
    size_t at = tag_bound(self->base, first, stop, tag, 1);
    *start = first;
    *end = at;
    *short_end = at;
    if (at - first > self->hot_postings) {
        size_t low = 0, high = self->n_hot;
        while (low < high) {
            size_t middle = (low + high) / 2;
            if (self->hot_values[middle] < value)
                low = middle + 1;
            else
                high = middle;
        }
        if (low < self->n_hot && self->hot_values[low] == value)
            *short_end = first + self->hot_short[low];
    }
}

static int reserve_touched(SearchIndex *self, size_t needed)
{
    if (needed <= self->touched_capacity)
        return 0;
    size_t capacity = self->touched_capacity ? self->touched_capacity : 4096;
    while (capacity < needed)
        capacity *= 2;
    uint32_t *touched = grow(self->touched, capacity, sizeof *touched);
    uint64_t *candidates = grow(self->candidates, capacity, sizeof *candidates);
    if (touched)
        self->touched = touched;
    if (candidates)
        self->candidates = candidates;
    if (!touched || !candidates) {
        PyErr_NoMemory();
        return -1;
    }
    self->touched_capacity = capacity;
    return 0;
}

/* Counts entries [start, end) of the base; a docno first seen goes on the touched list. */
static size_t count_base(SearchIndex *self, size_t start, size_t end, int64_t exclude, int64_t above,
                         size_t touched)
{
    const entry *base = self->base;
    for (size_t e = start; e < end; e++) {
        uint32_t d = entry_docno(base[e]);
        if (self->slot[d].state != IN_BASE || (int64_t)d == exclude || (int64_t)d <= above)
            continue;
        if (self->slot[d].count++ == 0)
            self->touched[touched++] = d;
    }
    return touched;
}

PyDoc_STRVAR(search_doc,
             "search(query, threshold, metric_code, exclude, above, max_candidates)\n"
             "    -> ([(docno, similarity)], exact)\n\n"
             "The stored articles that reach the threshold with the query sketch, in the order verified (the most\n"
             "shared values first, then docno), never `exclude` and only docnos over `above` (-1: no limit); exact\n"
             "unless more than max_candidates could reach it (the best-sharing ones are verified then).");

static PyObject *index_search(SearchIndex *self, PyObject *args)
{
    PyObject *query;
    double threshold;
    int metric;
    long long exclude, above;
    Py_ssize_t max_candidates;
    if (require_initialised(self) < 0 ||
        !PyArg_ParseTuple(args, "OdiLLn:search", &query, &threshold, &metric, &exclude, &above, &max_candidates) ||
        parse_sketch(self, query, "query") < 0 || check_metric(metric) < 0)
        return NULL;
    if (!isfinite(threshold)) {
        PyErr_SetString(PyExc_ValueError, "threshold must be a finite number");
        return NULL;
    }
    if (!self->sealed) {
        PyErr_SetString(PyExc_RuntimeError, "the index is not built: call compact() first");
        return NULL;
    }
    size_t n = (size_t)PyBytes_GET_SIZE(query) / 4;
    PyObject *matches = PyList_New(0);
    if (!matches)
        return NULL;
    if (n == 0)
        return Py_BuildValue("(NO)", matches, Py_True);
    uint32_t *q = self->values;
    decode_values(q, PyBytes_AS_STRING(query), n);

    /* the base run of each value; the hot ones (more long articles than hot_postings), hottest first. Each step
     * over all values first asks for the memory the next one reads: the misses overlap instead of queueing. */
    size_t hot = 0, most_entries = 0, mask = ((size_t)1 << self->bits) - 1;
    for (size_t i = 0; i < n; i++)
        PREFETCH_READ(self->directory + (q[i] & mask));
    for (size_t i = 0; i < n; i++) {
        size_t first = self->directory[q[i] & mask];
        PREFETCH_READ(self->base + first);
    }
    for (size_t i = 0; i < n; i++) {
        base_run(self, q[i], &self->run_start[i], &self->run_end[i], &self->run_short_end[i]);
        self->run_long[i] = self->run_end[i] - self->run_short_end[i];
        most_entries += self->run_end[i] - self->run_start[i];
        if (self->run_long[i] > self->hot_postings) {
            size_t j = hot++;
            for (; j > 0 && self->run_long[self->hot_order[j - 1]] < self->run_long[i]; j--)
                self->hot_order[j] = self->hot_order[j - 1];
            self->hot_order[j] = (uint32_t)i;
        }
    }
    size_t skipped = hot_skipped(hot, n, threshold, metric);
    self->hot_values_skipped += skipped;
    for (size_t h = 0; h < skipped; h++)
        self->run_end[self->hot_order[h]] = self->run_short_end[self->hot_order[h]];
    /* delta entries of the query's values */
    int32_t *chains = NULL;
    if (self->delta_values) {
        chains = (int32_t *)self->run_long; /* reused: the long counts are no longer needed */
        for (size_t i = 0; i < n; i++) {
            size_t at = delta_slot(self, q[i]);
            chains[i] = self->delta_heads[at];
            for (int32_t e = chains[i]; e != NO_ENTRY; e = self->delta_next[e])
                most_entries++;
        }
    }
    if (reserve_touched(self, most_entries) < 0) {
        Py_DECREF(matches);
        return NULL;
    }

    /* count shared values per article (their slots asked for first) */
    for (size_t i = 0; i < n; i++)
        for (size_t e = self->run_start[i]; e < self->run_end[i]; e++)
            PREFETCH_WRITE(self->slot + entry_docno(self->base[e]));
    size_t touched = 0;
    for (size_t i = 0; i < n; i++) {
        touched = count_base(self, self->run_start[i], self->run_end[i], exclude, above, touched);
        if (chains)
            for (int32_t e = chains[i]; e != NO_ENTRY; e = self->delta_next[e]) {
                uint32_t d = self->delta_docno[e];
                if (self->slot[d].state != self->delta_version[e] || (int64_t)d == exclude || (int64_t)d <= above)
                    continue;
                if (self->slot[d].count++ == 0)
                    self->touched[touched++] = d;
            }
    }
    /* the bound, then the most shared first (by docno within a count) */
    size_t passed = 0;
    for (size_t t = 0; t < touched; t++) {
        uint32_t d = self->touched[t];
        size_t shared = self->slot[d].count, length = self->slot[d].length;
        self->slot[d].count = 0;
        if (may_reach(shared, length < MIN_EVIDENCE ? length : 0, skipped, n, threshold, metric))
            self->candidates[passed++] = (uint64_t)(0xFFFF - shared) << 32 | d;
    }
    qsort(self->candidates, passed, sizeof *self->candidates, compare_keys);
    int exact = passed <= (size_t)(max_candidates > 0 ? max_candidates : 0);
    if (!exact)
        passed = (size_t)(max_candidates > 0 ? max_candidates : 0);

    /* verify: the kernel's early-terminating merge of the query (0) with each candidate (1) */
    uint32_t start[3] = {0, (uint32_t)n, 0};
    uint64_t cap[2] = {n >= (size_t)self->k ? q[n - 1] : UNCAPPED, 0};
    for (size_t c = 0; c < passed; c++) {
        uint32_t d = (uint32_t)self->candidates[c];
        size_t length = self->slot[d].length;
        memcpy(q + n, self->pool + self->offset[d], length * sizeof *q);
        start[2] = (uint32_t)(n + length);
        cap[1] = length && length >= (size_t)self->k ? q[n + length - 1] : UNCAPPED;
        result_set set = {q, start, cap, metric, threshold, NULL, NULL, NULL, 0, NULL};
        double similarity;
        if (!is_duplicate(&set, 0, 1, &similarity))
            continue;
        PyObject *match = Py_BuildValue("(Id)", (unsigned int)d, similarity);
        if (!match || PyList_Append(matches, match) < 0) {
            Py_XDECREF(match);
            Py_DECREF(matches);
            return NULL;
        }
        Py_DECREF(match);
    }
    return Py_BuildValue("(NO)", matches, exact ? Py_True : Py_False);
}

PyDoc_STRVAR(stats_doc, "stats() -> dict\n\nArticles, docno limit, base and delta entries, hot runs, bytes allocated,\n"
                        "hot values left unread by the searches so far.");

static PyObject *index_stats(SearchIndex *self, PyObject *unused)
{
    if (require_initialised(self) < 0)
        return NULL;
    size_t bytes = self->capacity * (sizeof *self->offset + sizeof *self->slot)
                   + self->pool_capacity * sizeof *self->pool
                   + (self->sealed ? (((size_t)1 << self->bits) + 1) * sizeof *self->directory : 0)
                   + self->base_entries * sizeof *self->base
                   + self->n_hot * 2 * sizeof(uint32_t)
                   + self->delta_slots * (sizeof *self->delta_keys + sizeof *self->delta_heads)
                   + self->delta_capacity * (sizeof *self->delta_docno + sizeof *self->delta_version +
                                             sizeof *self->delta_next)
                   + self->touched_capacity * (sizeof *self->touched + sizeof *self->candidates);
    return Py_BuildValue("{sn,sn,sn,sn,sn,sn,sn,sn,sn}", "hot_values_skipped", (Py_ssize_t)self->hot_values_skipped,
                         "articles", (Py_ssize_t)self->articles,
                         "docno_limit", (Py_ssize_t)self->limit, "base_entries", (Py_ssize_t)self->base_entries,
                         "delta_entries", (Py_ssize_t)self->delta_entries, "hot_runs", (Py_ssize_t)self->n_hot,
                         "pool_values", (Py_ssize_t)self->pool_used, "live_values", (Py_ssize_t)self->pool_live,
                         "bytes", (Py_ssize_t)bytes);
}

static PyMethodDef index_methods[] = {
    {"put", (PyCFunction)index_put, METH_VARARGS, put_doc},
    {"remove", (PyCFunction)index_remove, METH_O, remove_doc},
    {"sketch", (PyCFunction)index_sketch, METH_O, sketch_doc},
    {"compact", (PyCFunction)index_compact, METH_NOARGS, compact_doc},
    {"search", (PyCFunction)index_search, METH_VARARGS, search_doc},
    {"stats", (PyCFunction)index_stats, METH_NOARGS, stats_doc},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject IndexType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "neardup.core._search.Index",
    .tp_doc = PyDoc_STR("Index(k, hot_postings): articles' bottom-K sketches by docno and their postings in memory;\n"
                        "put/remove keep it current, compact() builds the base (needed once before searching)."),
    .tp_basicsize = sizeof(SearchIndex),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)index_init,
    .tp_dealloc = (destructor)index_dealloc,
    .tp_methods = index_methods,
};

/* ---- the bound rule for the store path (core/candidates.candidates) ---- */

PyDoc_STRVAR(hot_skipped_doc, "hot_skipped(hot, query_length, threshold, metric_code) -> int\n\n"
                              "How many of a query's hot values (hottest first) may be left unread.");

static PyObject *search_hot_skipped(PyObject *module, PyObject *args)
{
    Py_ssize_t hot, query_length;
    double threshold;
    int metric;
    if (!PyArg_ParseTuple(args, "nndi:hot_skipped", &hot, &query_length, &threshold, &metric) ||
        check_metric(metric) < 0)
        return NULL;
    if (hot < 0 || query_length < 1) {
        PyErr_SetString(PyExc_ValueError, "hot must be >= 0 and query_length >= 1");
        return NULL;
    }
    return PyLong_FromSize_t(hot_skipped((size_t)hot, (size_t)query_length, threshold, metric));
}

PyDoc_STRVAR(may_reach_doc, "may_reach(shared, length, out, skipped, query_length, threshold, metric_code)\n\n"
                            "out[i] = whether article i, sharing shared[i] read values (int64) and of length class\n"
                            "length[i] (uint8: its values when short, 0 when long), may reach the threshold.");

static PyObject *search_may_reach(PyObject *module, PyObject *args)
{
    Py_buffer shared, length, out;
    Py_ssize_t skipped, query_length;
    double threshold;
    int metric;
    if (!PyArg_ParseTuple(args, "y*y*w*nndi:may_reach", &shared, &length, &out, &skipped, &query_length, &threshold,
                          &metric))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = length.len;
    if (check_metric(metric) < 0)
        goto done;
    if (shared.len != n * 8 || out.len != n || skipped < 0 || query_length < 1) {
        PyErr_SetString(PyExc_ValueError, "may_reach: shared must hold int64 and out a byte per length; "
                                          "skipped >= 0, query_length >= 1");
        goto done;
    }
    const int64_t *counts = shared.buf;
    const uint8_t *lengths = length.buf;
    uint8_t *passes = out.buf;
    for (Py_ssize_t i = 0; i < n; i++)
        passes[i] = (uint8_t)may_reach((size_t)counts[i], lengths[i], (size_t)skipped, (size_t)query_length,
                                       threshold, metric);
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&shared);
    PyBuffer_Release(&length);
    PyBuffer_Release(&out);
    return result;
}

static PyMethodDef search_methods[] = {
    {"hot_skipped", search_hot_skipped, METH_VARARGS, hot_skipped_doc},
    {"may_reach", search_may_reach, METH_VARARGS, may_reach_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef search_module = {
    PyModuleDef_HEAD_INIT, "neardup.core._search",
    "Compiled corpus search: the bound rule of both search paths, and the in-memory index (Index).",
    -1, search_methods,
};

PyMODINIT_FUNC PyInit__search(void)
{
    if (PyType_Ready(&IndexType) < 0)
        return NULL;
    PyObject *module = PyModule_Create(&search_module);
    if (!module)
        return NULL;
    Py_INCREF(&IndexType);
    if (PyModule_AddObject(module, "Index", (PyObject *)&IndexType) < 0) {
        Py_DECREF(&IndexType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
