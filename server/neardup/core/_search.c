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
 *    compact() rebuilds the base from the pool when the caller finds the delta large;
 *  - or a mapped base: the postings, the sketches and the ids of an index file (the format below, written by
 *    init_header, Export.write or the caller, and build_file), read in place from a buffer that every process
 *    mapping the file shares through the page cache; an article IN_BASE then has its values in the file, and the
 *    heap holds only the per-article states and what was written since (the delta). It is never compacted: a new
 *    file is written (Index.export) and mapped instead.
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
    /* a mapped base (Index(..., file=buffer), an index file): the file's buffer, held while the index lives; the
     * base's pool, postings, hot table and ids are read from it in place (never written), and an article IN_BASE
     * has its values there (the heap pool holds the delta's). mapped == 0: the base is the index's own. */
    int mapped;
    Py_buffer file;
    const uint32_t *base_pool;
    const uint64_t *base_offsets; /* file_limit + 1: article d's values are base_pool[base_offsets[d] .. d + 1] */
    const uint64_t *id_offsets;   /* file_limit + 1, into id_bytes */
    const char *id_bytes;
    const uint32_t *id_slots;     /* the id hash table: docnos, NO_DOCNO where empty */
    size_t id_slot_count, file_limit;
} SearchIndex;

#define NO_DOCNO 0xFFFFFFFFu

/* Article d's values: in the file when it is a mapped base's, else in the heap pool. */
static inline const uint32_t *values_of(const SearchIndex *self, size_t d)
{
    if (self->mapped && self->slot[d].state == IN_BASE)
        return self->base_pool + self->base_offsets[d];
    return self->pool + self->offset[d];
}

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

enum { COMPACT_NO_MEMORY = -1, COMPACT_TOO_MANY = -2, COMPACT_MAPPED = -3 };

/* Where the base postings are built from: article d's values (sorted) and their count; 0 when d is not stored. */
typedef struct {
    size_t limit;
    int (*article)(const void *context, size_t d, const uint32_t **values, size_t *length);
    const void *context;
} article_source;

/* What build_postings fills: directory (2**bits + 1, zeroed), base (total entries), hot_values and hot_short
 * (room for hot_capacity runs: total / (hot_postings + 1) + 1 always suffices); it sets n_hot. */
typedef struct {
    int bits;
    size_t total, hot_capacity, n_hot;
    uint32_t *directory;
    entry *base;
    uint32_t *hot_values, *hot_short;
} postings_out;

/* The bucket bits for `total` entries: about ENTRIES_PER_BUCKET a bucket, at least 2**MIN_BUCKET_BITS buckets. */
static int bucket_bits(size_t total)
{
    int bits = MIN_BUCKET_BITS;
    while (((size_t)1 << bits) * ENTRIES_PER_BUCKET < total)
        bits++;
    return bits;
}

static size_t hot_capacity_of(size_t total, size_t hot_postings)
{
    return total / (hot_postings + 1) + 1;
}

/* Bucket b's entries of a window holding buckets from `first` on, at base[at[b - first] .. ) (cursors). */
static void sort_window(const article_source *source, size_t hot_postings, postings_out *out, entry *base,
                        size_t first, size_t stop, size_t origin, uint64_t *keys)
{
    const uint32_t *directory = out->directory, *v;
    size_t length;
    for (size_t b = first; b < stop; b++) {
        size_t start = directory[b] - origin, end = directory[b + 1] - origin;
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
        for (size_t run = start, stop_run; run < end; run = stop_run) {
            for (stop_run = run + 1; stop_run < end && base[stop_run].tag == base[run].tag;)
                stop_run++;
            if (stop_run - run <= hot_postings)
                continue;
            size_t shorts = 0, longs = 0;
            for (size_t e = run; e < stop_run; e++) {
                uint32_t d = entry_docno(base[e]);
                source->article(source->context, d, &v, &length);
                if (length < MIN_EVIDENCE)
                    base[run + shorts++] = base[e]; /* never ahead of e: stable */
                else
                    keys[longs++] = d;
            }
            for (size_t l = 0; l < longs; l++)
                base[run + shorts + l] = (entry){base[run].tag, (uint16_t)keys[l], (uint16_t)(keys[l] >> 16)};
            if (out->n_hot < out->hot_capacity) { /* always: a run holds over hot_postings of the total entries */
                out->hot_values[out->n_hot] = (uint32_t)base[run].tag << out->bits | (uint32_t)b;
                out->hot_short[out->n_hot++] = (uint32_t)shorts;
            }
        }
    }
}

/* The base postings of every stored article of source (exactly out->total values): entries by bucket, within a
 * bucket by tag then docno, a hot run's short articles first; the hot table by value. With window > 0 the base
 * is built a range of buckets at a time (at most `window` entries, or one bucket) in a buffer of its own and
 * copied to out->base in order: out->base is then written once, front to back (a file's mapping: no page is
 * dirtied twice). Touches no Python object (runs without the GIL): 0 or COMPACT_NO_MEMORY. */
static int build_postings(const article_source *source, size_t hot_postings, postings_out *out, size_t window)
{
    int bits = out->bits;
    size_t buckets = (size_t)1 << bits, mask = buckets - 1;
    uint32_t *directory = out->directory;
    const uint32_t *v;
    size_t length;
    for (size_t d = 0; d < source->limit; d++)
        if (source->article(source->context, d, &v, &length))
            for (size_t i = 0; i < length; i++)
                directory[(v[i] & mask) + 1]++;
    size_t largest = 0;
    for (size_t b = 0; b < buckets; b++) {
        if (directory[b + 1] > largest)
            largest = directory[b + 1];
        directory[b + 1] += directory[b];
    }
    if (window == 0 || window >= out->total)
        window = out->total;
    if (window < largest)
        window = largest;
    uint64_t *keys = malloc((largest ? largest : 1) * sizeof *keys);
    size_t *cursor = malloc(buckets * sizeof *cursor);
    entry *buffer = window == out->total ? out->base : malloc((window ? window : 1) * sizeof *buffer);
    if (!keys || !cursor || !buffer) {
        free(keys);
        free(cursor);
        if (buffer != out->base)
            free(buffer);
        return COMPACT_NO_MEMORY;
    }
    out->n_hot = 0;
    for (size_t first = 0, stop; first < buckets; first = stop) {
        /* the buckets [first, stop) whose entries fit the window */
        for (stop = first + 1; stop < buckets && directory[stop + 1] - directory[first] <= window;)
            stop++;
        size_t origin = directory[first];
        for (size_t b = first; b < stop; b++)
            cursor[b] = directory[b] - origin;
        /* scatter in docno order, so each bucket is in docno order */
        for (size_t d = 0; d < source->limit; d++)
            if (source->article(source->context, d, &v, &length))
                for (size_t i = 0; i < length; i++) {
                    size_t b = v[i] & mask;
                    if (b >= first && b < stop)
                        buffer[cursor[b]++] = (entry){(uint16_t)(v[i] >> bits), (uint16_t)d, (uint16_t)(d >> 16)};
                }
        /* within a bucket: by tag, then docno (the scatter's order, which these sorts keep); a hot run (over
         * hot_postings entries, the only kind whose long articles a search may leave unread) short articles
         * first */
        sort_window(source, hot_postings, out, buffer, first, stop, origin, keys);
        if (buffer != out->base)
            memcpy(out->base + origin, buffer, (directory[stop] - origin) * sizeof *buffer);
    }
    free(keys);
    free(cursor);
    if (buffer != out->base)
        free(buffer);
    /* the hot table is searched by value: sort it (it is in bucket order) */
    size_t n_hot = out->n_hot;
    if (n_hot > 1) {
        uint64_t *pairs = malloc(n_hot * sizeof *pairs);
        if (!pairs)
            return COMPACT_NO_MEMORY;
        for (size_t i = 0; i < n_hot; i++)
            pairs[i] = (uint64_t)out->hot_values[i] << 32 | out->hot_short[i];
        qsort(pairs, n_hot, sizeof *pairs, compare_keys);
        for (size_t i = 0; i < n_hot; i++) {
            out->hot_values[i] = (uint32_t)(pairs[i] >> 32);
            out->hot_short[i] = (uint32_t)pairs[i];
        }
        free(pairs);
    }
    return 0;
}

static int heap_article(const void *context, size_t d, const uint32_t **values, size_t *length)
{
    const SearchIndex *self = context;
    if (self->slot[d].state == ABSENT) {
        *length = 0;
        return 0;
    }
    *values = self->pool + self->offset[d];
    *length = self->slot[d].length;
    return 1;
}

/* Rebuilds the base postings (and the pool, when most of it is garbage) from every stored article; empties the
 * delta. The old base is freed first: the pool holds everything it is rebuilt from. Touches no Python object, so
 * it may run without the GIL: 0, or a COMPACT_ error for compact_failed to raise. A mapped index is never
 * compacted (its base is a file's: a new file is written instead). */
static int compact(SearchIndex *self)
{
    if (self->mapped)
        return COMPACT_MAPPED;
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
    postings_out out = {bucket_bits(total), total, hot_capacity_of(total, self->hot_postings), 0, NULL, NULL,
                        NULL, NULL};
    out.directory = calloc(((size_t)1 << out.bits) + 1, sizeof *out.directory);
    out.base = malloc((total ? total : 1) * sizeof *out.base);
    out.hot_values = malloc(out.hot_capacity * sizeof *out.hot_values);
    out.hot_short = malloc(out.hot_capacity * sizeof *out.hot_short);
    article_source source = {self->limit, heap_article, self};
    if (!out.directory || !out.base || !out.hot_values || !out.hot_short ||
        build_postings(&source, self->hot_postings, &out, 0) < 0) {
        free(out.directory);
        free(out.base);
        free(out.hot_values);
        free(out.hot_short);
        return COMPACT_NO_MEMORY;
    }
    for (size_t d = 0; d < self->limit; d++)
        if (self->slot[d].state != ABSENT)
            self->slot[d].state = IN_BASE;
    /* the hot table's unused room back (malloc's large blocks were never touched past what was written) */
    uint32_t *values = grow(out.hot_values, out.n_hot, sizeof *values);
    uint32_t *shorts = grow(out.hot_short, out.n_hot, sizeof *shorts);
    self->hot_values = values ? values : out.hot_values;
    self->hot_short = shorts ? shorts : out.hot_short;
    self->n_hot = out.n_hot;
    self->directory = out.directory;
    self->base = out.base;
    self->bits = out.bits;
    self->base_entries = total;
    self->next_version = FIRST_VERSION;
    self->sealed = 1;
    return 0;
}

/* Raises compact()'s error (the GIL held); returns -1. */
static int compact_failed(int error)
{
    if (error == COMPACT_TOO_MANY)
        PyErr_SetString(PyExc_MemoryError, "the search index holds more than 2**32 postings");
    else if (error == COMPACT_MAPPED)
        PyErr_SetString(PyExc_RuntimeError, "the index's base is a file: write a new file instead of compacting");
    else
        PyErr_NoMemory();
    return -1;
}

static int require_initialised(SearchIndex *self);
static int parse_docno(PyObject *object, uint32_t *docno);

/* ---- the index file: a base in a file, read in place by every process that maps it ----
 *
 * Little-endian, every section 64-byte aligned, in this order after a 256-byte header:
 *   pool          uint32[pool_values]      every stored article's sketch values, by docno
 *   pool_offsets  uint64[docno_limit + 1]  article d's values are pool[pool_offsets[d] .. pool_offsets[d + 1])
 *   ids           bytes[id_bytes]          every stored article's id (UTF-8), by docno
 *   id_offsets    uint64[docno_limit + 1]  article d's id is ids[id_offsets[d] .. id_offsets[d + 1]); empty: none
 *   directory     uint32[2**bits + 1]      base entries of bucket b: base[directory[b] .. directory[b + 1])
 *   base          entry[pool_values]       (tag, docno) as the in-memory base's, in the same order
 *   id_slots      uint32[id_slots]         an open-addressing table of docnos by id (FNV-1a), NO_DOCNO: empty
 *   hot_values    uint32[n_hot]            the values of the runs over hot_postings entries, ascending
 *   hot_short     uint32[n_hot]            their short entries
 * The header: magic "NDSRCHIX", format version, header bytes, file bytes, the store generation the base is at,
 * K, hot_postings, bits, docno_limit, articles, pool_values, id_bytes, n_hot, id_slots, the sketch configuration's
 * digest, the sections' offsets, when it was written, and a checksum (file_checksum, with its own word as 0) of
 * the whole file. Index(file=...) verifies the checksum and every offset and count against the file's size before
 * it reads anything, and bounds-checks what it reads at search time, so a damaged or forged file raises
 * ValueError or answers wrongly, never reads outside the file. */

#define FILE_MAGIC "NDSRCHIX"
#define FILE_VERSION 1
#define HEADER_BYTES 256
#define CHECKSUM_AT 248
#define MAX_ID_BYTES 511
#define CHECKSUM_P1 0x9E3779B97F4A7C15ull
#define CHECKSUM_P2 0xC2B2AE3D27D4EB4Full
/* build_file builds the base this many entries at a time in memory of its own (384 MB), then writes it to the file
 * in order: a file's pages are written once, where scattering into the mapping itself dirties every page many
 * times over and leaves the kernel writing them back again and again. */
#define FILE_WINDOW_ENTRIES ((size_t)1 << 26)

enum { S_POOL, S_POOL_OFFSETS, S_IDS, S_ID_OFFSETS, S_DIRECTORY, S_BASE, S_ID_SLOTS, S_HOT_VALUES, S_HOT_SHORT,
       SECTIONS };
static const char *section_names[SECTIONS] = {"pool", "pool_offsets", "ids", "id_offsets", "directory", "base",
                                              "id_slots", "hot_values", "hot_short"};

typedef struct {
    uint32_t version, k, hot_postings, bits;
    uint64_t file_bytes, generation, limit, articles, pool_values, id_bytes, n_hot, id_slots, built_at, checksum;
    char config[17];
    uint64_t offset[SECTIONS], size[SECTIONS];
} file_header;

static inline uint64_t rotl64(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

static inline uint64_t load64(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
#if !PY_LITTLE_ENDIAN
    w = __builtin_bswap64(w);
#endif
    return w;
}

static inline uint32_t load32(const unsigned char *p)
{
    uint32_t w;
    memcpy(&w, p, 4);
#if !PY_LITTLE_ENDIAN
    w = __builtin_bswap32(w);
#endif
    return w;
}

static inline void store64(unsigned char *p, uint64_t w)
{
#if !PY_LITTLE_ENDIAN
    w = __builtin_bswap64(w);
#endif
    memcpy(p, &w, 8);
}

static inline void store32(unsigned char *p, uint32_t w)
{
#if !PY_LITTLE_ENDIAN
    w = __builtin_bswap32(w);
#endif
    memcpy(p, &w, 4);
}

/* Words [first, first + words) of the checksummed stream, at data: word i goes into lane i mod 4. */
static void checksum_words(uint64_t h[4], const unsigned char *data, size_t words, size_t first)
{
    uint64_t h0 = h[0], h1 = h[1], h2 = h[2], h3 = h[3];
    const unsigned char *p = data, *stop = data + (first % 4 == 0 ? words / 4 * 32 : 0);
    for (; p < stop; p += 32) {
        h0 = rotl64((h0 ^ load64(p)) * CHECKSUM_P1, 31);
        h1 = rotl64((h1 ^ load64(p + 8)) * CHECKSUM_P1, 31);
        h2 = rotl64((h2 ^ load64(p + 16)) * CHECKSUM_P1, 31);
        h3 = rotl64((h3 ^ load64(p + 24)) * CHECKSUM_P1, 31);
    }
    h[0] = h0, h[1] = h1, h[2] = h2, h[3] = h3;
    for (size_t i = (size_t)(p - data) / 8; i < words; i++) {
        size_t lane = (first + i) & 3;
        h[lane] = rotl64((h[lane] ^ load64(data + 8 * i)) * CHECKSUM_P1, 31);
    }
}

/* The file's checksum: four lanes over its 64-bit words (word i into lane i mod 4; the checksum's own word read as
 * 0), then mixed with the length. Against damage (a cut, a flipped bit, a stray write), not against forgery. The
 * length must be a multiple of 8 and at least HEADER_BYTES. */
static uint64_t file_checksum(const unsigned char *data, size_t bytes)
{
    uint64_t h[4] = {CHECKSUM_P1, CHECKSUM_P2, CHECKSUM_P1 ^ CHECKSUM_P2, ~CHECKSUM_P1};
    unsigned char header[HEADER_BYTES];
    memcpy(header, data, HEADER_BYTES);
    memset(header + CHECKSUM_AT, 0, 8);
    checksum_words(h, header, HEADER_BYTES / 8, 0);
    checksum_words(h, data + HEADER_BYTES, (bytes - HEADER_BYTES) / 8, HEADER_BYTES / 8);
    uint64_t x = (uint64_t)bytes * CHECKSUM_P2;
    for (int lane = 0; lane < 4; lane++)
        x = rotl64(x ^ (h[lane] * CHECKSUM_P2), 27) * CHECKSUM_P1;
    x ^= x >> 33;
    x *= CHECKSUM_P2;
    x ^= x >> 29;
    x *= CHECKSUM_P1;
    x ^= x >> 32;
    return x;
}

static uint64_t align64(uint64_t at)
{
    return (at + 63) & ~(uint64_t)63;
}

static uint64_t id_slots_for(uint64_t articles)
{
    uint64_t slots = 8;
    while (slots < 2 * articles + 1)
        slots *= 2;
    return slots;
}

/* Section sizes from the counts; the hot sections sized for n_hot runs. */
static void section_sizes(file_header *h)
{
    h->size[S_POOL] = h->pool_values * 4;
    h->size[S_POOL_OFFSETS] = (h->limit + 1) * 8;
    h->size[S_IDS] = h->id_bytes;
    h->size[S_ID_OFFSETS] = (h->limit + 1) * 8;
    h->size[S_DIRECTORY] = (((uint64_t)1 << h->bits) + 1) * 4;
    h->size[S_BASE] = h->pool_values * sizeof(entry);
    h->size[S_ID_SLOTS] = h->id_slots * 4;
    h->size[S_HOT_VALUES] = h->n_hot * 4;
    h->size[S_HOT_SHORT] = h->n_hot * 4;
}

/* The sections laid out one after the other from the header on; returns the end. */
static uint64_t lay_out(file_header *h)
{
    section_sizes(h);
    uint64_t at = HEADER_BYTES;
    for (int s = 0; s < SECTIONS; s++) {
        h->offset[s] = align64(at);
        at = h->offset[s] + h->size[s];
    }
    return (at + 7) & ~(uint64_t)7;
}

/* Reads and checks the header of a file of `bytes` bytes: ValueError (saying what is wrong) unless every count is
 * in range and every section lies inside the file. `building`: the file is being written (the hot sections have
 * room for every possible run; file_bytes is not yet final). */
static int parse_header(const unsigned char *data, size_t bytes, file_header *h, int building)
{
    memset(h, 0, sizeof *h);
    if (bytes < 8 || memcmp(data, FILE_MAGIC, 8) != 0) {
        PyErr_SetString(PyExc_ValueError, "not a neardup search index file (no NDSRCHIX magic)");
        return -1;
    }
    if (bytes < HEADER_BYTES) {
        PyErr_Format(PyExc_ValueError, "damaged: %zu bytes, shorter than the header", bytes);
        return -1;
    }
    h->version = load32(data + 8);
    if (h->version != FILE_VERSION) {
        PyErr_Format(PyExc_ValueError, "format version %u; this neardup reads version %d", h->version,
                     FILE_VERSION);
        return -1;
    }
    if (load32(data + 12) != HEADER_BYTES) {
        PyErr_Format(PyExc_ValueError, "damaged: a header of %u bytes", load32(data + 12));
        return -1;
    }
    h->file_bytes = load64(data + 16);
    h->generation = load64(data + 24);
    h->k = load32(data + 32);
    h->hot_postings = load32(data + 36);
    h->bits = load32(data + 40);
    h->limit = load64(data + 48);
    h->articles = load64(data + 56);
    h->pool_values = load64(data + 64);
    h->id_bytes = load64(data + 72);
    h->n_hot = load64(data + 80);
    h->id_slots = load64(data + 88);
    memcpy(h->config, data + 96, 16);
    h->config[16] = 0;
    for (int s = 0; s < SECTIONS; s++)
        h->offset[s] = load64(data + 112 + 8 * s);
    h->built_at = load64(data + 184);
    h->checksum = load64(data + CHECKSUM_AT);
    if (!building && h->file_bytes != bytes) {
        PyErr_Format(PyExc_ValueError, "damaged: the header says %llu bytes, the file has %zu (cut short?)",
                     (unsigned long long)h->file_bytes, bytes);
        return -1;
    }
    const char *wrong = NULL;
    if (h->k < 1 || h->k > 65535)
        wrong = "K";
    else if (h->bits < MIN_BUCKET_BITS || h->bits > 31)
        wrong = "bucket bits";
    else if (h->limit > NO_DOCNO)
        wrong = "docno limit";
    else if (h->articles > h->limit)
        wrong = "article count";
    else if (h->pool_values > UINT32_MAX || h->pool_values > h->limit * h->k)
        wrong = "value count";
    else if (h->id_bytes > h->limit * MAX_ID_BYTES)
        wrong = "id bytes";
    else if (h->id_slots < 2 * h->articles + 1 || h->id_slots > ((uint64_t)1 << 34) ||
             (h->id_slots & (h->id_slots - 1)))
        wrong = "id table size";
    else if (h->n_hot > h->pool_values)
        wrong = "hot run count";
    else if ((uint64_t)1 << h->bits < (h->pool_values + ENTRIES_PER_BUCKET - 1) / ENTRIES_PER_BUCKET / 2)
        wrong = "bucket bits";
    if (wrong) {
        PyErr_Format(PyExc_ValueError, "damaged: the header's %s is out of range", wrong);
        return -1;
    }
    uint64_t n_hot = h->n_hot;
    if (building)
        h->n_hot = hot_capacity_of(h->pool_values, h->hot_postings);
    section_sizes(h);
    h->n_hot = n_hot;
    uint64_t end = building ? bytes : h->file_bytes;
    for (int s = 0; s < SECTIONS; s++)
        if (h->offset[s] % 8 || h->offset[s] < HEADER_BYTES || h->offset[s] > end ||
            h->size[s] > end - h->offset[s]) {
            PyErr_Format(PyExc_ValueError, "damaged: section %s (%llu bytes at %llu) is outside the file's %llu "
                         "bytes", section_names[s], (unsigned long long)h->size[s],
                         (unsigned long long)h->offset[s], (unsigned long long)end);
            return -1;
        }
    return 0;
}

static inline const uint64_t *u64_section(const unsigned char *data, const file_header *h, int s)
{
    return (const uint64_t *)(data + h->offset[s]);
}

/* The per-docno arrays of a file (its offsets into the pool and into the ids): 0, or a message. */
static const char *check_articles(const unsigned char *data, const file_header *h, uint64_t *articles)
{
    const uint64_t *pool_offsets = u64_section(data, h, S_POOL_OFFSETS), *id_offsets = u64_section(data, h,
                                                                                                  S_ID_OFFSETS);
    if (pool_offsets[0] != 0 || id_offsets[0] != 0)
        return "an offset array does not start at 0";
    uint64_t count = 0;
    for (uint64_t d = 0; d < h->limit; d++) {
        uint64_t length = pool_offsets[d + 1] - pool_offsets[d], id = id_offsets[d + 1] - id_offsets[d];
        if (pool_offsets[d + 1] < pool_offsets[d] || length > h->k)
            return "an article's values are out of range";
        if (id_offsets[d + 1] < id_offsets[d] || id > MAX_ID_BYTES)
            return "an article's id is out of range";
        if (id == 0 && length)
            return "an article without an id has values";
        count += id > 0;
    }
    if (pool_offsets[h->limit] != h->pool_values || id_offsets[h->limit] != h->id_bytes)
        return "an offset array does not end at its section's size";
    *articles = count;
    return NULL;
}

static uint64_t id_hash(const char *id, size_t length)
{
    uint64_t hash = 0xCBF29CE484222325ull;
    for (size_t i = 0; i < length; i++) {
        hash ^= (unsigned char)id[i];
        hash *= 0x100000001B3ull;
    }
    return hash ^ (hash >> 29);
}

/* The docno of `id` in a file's id table, or NO_DOCNO. Every probe is bounds-checked; at most id_slots probes. */
static uint32_t file_docno(const SearchIndex *self, const char *id, size_t length)
{
    size_t mask = self->id_slot_count - 1, at = (size_t)id_hash(id, length) & mask;
    for (size_t probes = 0; probes < self->id_slot_count; probes++, at = (at + 1) & mask) {
        uint32_t d = self->id_slots[at];
        if (d == NO_DOCNO)
            return NO_DOCNO;
        if (d < self->file_limit && self->id_offsets[d + 1] - self->id_offsets[d] == length &&
            memcmp(self->id_bytes + self->id_offsets[d], id, length) == 0)
            return d;
    }
    return NO_DOCNO;
}

typedef struct {
    const uint32_t *pool;
    const uint64_t *pool_offsets, *id_offsets;
} file_articles;

static int file_article(const void *context, size_t d, const uint32_t **values, size_t *length)
{
    const file_articles *file = context;
    *length = (size_t)(file->pool_offsets[d + 1] - file->pool_offsets[d]);
    *values = file->pool + file->pool_offsets[d];
    return file->id_offsets[d + 1] > file->id_offsets[d];
}

/* ---- module functions: writing a file ---- */

static int get_buffer(PyObject *object, Py_buffer *view, int writable)
{
    if (PyObject_GetBuffer(object, view, writable ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0)
        return -1;
    return 0;
}

PyDoc_STRVAR(file_size_doc, "file_size(docno_limit, articles, pool_values, id_bytes, hot_postings) -> int\n\n"
                            "The bytes to give a file before init_header and build_file fill it (its hot sections\n"
                            "have room for every possible run; build_file says the final size).");

static PyObject *search_file_size(PyObject *module, PyObject *args)
{
    unsigned long long limit, articles, pool_values, id_bytes, hot_postings;
    if (!PyArg_ParseTuple(args, "KKKKK:file_size", &limit, &articles, &pool_values, &id_bytes, &hot_postings))
        return NULL;
    if (pool_values > UINT32_MAX || limit > NO_DOCNO) {
        PyErr_SetString(PyExc_ValueError, "an index file holds at most 2**32 - 1 articles and 2**32 values");
        return NULL;
    }
    file_header h = {0};
    h.limit = limit;
    h.articles = articles;
    h.pool_values = pool_values;
    h.id_bytes = id_bytes;
    h.bits = (uint32_t)bucket_bits((size_t)pool_values);
    h.id_slots = id_slots_for(articles);
    h.n_hot = hot_capacity_of((size_t)pool_values, (size_t)hot_postings);
    return PyLong_FromUnsignedLongLong(lay_out(&h));
}

PyDoc_STRVAR(init_header_doc,
             "init_header(buffer, k, hot_postings, generation, config, docno_limit, articles, pool_values, id_bytes,\n"
             "            built_at) -> dict\n\n"
             "Writes a new file's header into buffer (file_size bytes at least) and returns its sections' offsets:\n"
             "the caller then writes the pool, pool_offsets, ids and id_offsets sections, and build_file the rest.");

static PyObject *search_init_header(PyObject *module, PyObject *args)
{
    PyObject *object;
    unsigned int k, hot_postings;
    unsigned long long generation, limit, articles, pool_values, id_bytes, built_at;
    const char *config;
    Py_ssize_t config_length;
    if (!PyArg_ParseTuple(args, "OIIKs#KKKKK:init_header", &object, &k, &hot_postings, &generation, &config,
                          &config_length, &limit, &articles, &pool_values, &id_bytes, &built_at))
        return NULL;
    if (config_length > 16 || k < 1 || k > 65535 || pool_values > UINT32_MAX || limit > NO_DOCNO) {
        PyErr_SetString(PyExc_ValueError, "init_header: config is at most 16 bytes, k in 1..65535, at most 2**32 "
                                          "values and 2**32 - 1 articles");
        return NULL;
    }
    Py_buffer view;
    if (get_buffer(object, &view, 1) < 0)
        return NULL;
    file_header h = {0};
    h.limit = limit;
    h.articles = articles;
    h.pool_values = pool_values;
    h.id_bytes = id_bytes;
    h.bits = (uint32_t)bucket_bits((size_t)pool_values);
    h.id_slots = id_slots_for(articles);
    h.n_hot = hot_capacity_of((size_t)pool_values, hot_postings);
    uint64_t end = lay_out(&h);
    if ((uint64_t)view.len < end) {
        PyBuffer_Release(&view);
        PyErr_Format(PyExc_ValueError, "init_header: the buffer has %zd bytes, the file needs %llu", view.len,
                     (unsigned long long)end);
        return NULL;
    }
    unsigned char *data = view.buf;
    memset(data, 0, HEADER_BYTES);
    memcpy(data, FILE_MAGIC, 8);
    store32(data + 8, FILE_VERSION);
    store32(data + 12, HEADER_BYTES);
    store64(data + 16, end);
    store64(data + 24, generation);
    store32(data + 32, k);
    store32(data + 36, hot_postings);
    store32(data + 40, h.bits);
    store64(data + 48, limit);
    store64(data + 56, articles);
    store64(data + 64, pool_values);
    store64(data + 72, id_bytes);
    store64(data + 80, 0);
    store64(data + 88, h.id_slots);
    memcpy(data + 96, config, (size_t)config_length);
    for (int s = 0; s < SECTIONS; s++)
        store64(data + 112 + 8 * s, h.offset[s]);
    store64(data + 184, built_at);
    PyBuffer_Release(&view);
    PyObject *offsets = PyDict_New();
    for (int s = 0; offsets && s < SECTIONS; s++) {
        PyObject *at = PyLong_FromUnsignedLongLong(h.offset[s]);
        if (!at || PyDict_SetItemString(offsets, section_names[s], at) < 0) {
            Py_XDECREF(at);
            Py_CLEAR(offsets);
        } else
            Py_DECREF(at);
    }
    return offsets;
}

PyDoc_STRVAR(build_file_doc,
             "build_file(buffer, window=0) -> int\n\n"
             "Fills a new file's directory, base, id table and hot sections from its pool and ids (written by the\n"
             "caller after init_header), without the GIL; returns the file's final size (the caller cuts the file\n"
             "there after seal). The base is built `window` entries at a time (0: FILE_WINDOW_ENTRIES) in memory\n"
             "of its own and written to the file in order.");

static PyObject *search_build_file(PyObject *module, PyObject *args)
{
    PyObject *arg;
    Py_ssize_t window = 0;
    if (!PyArg_ParseTuple(args, "O|n:build_file", &arg, &window))
        return NULL;
    Py_buffer view;
    if (get_buffer(arg, &view, 1) < 0)
        return NULL;
    unsigned char *data = view.buf;
    file_header h;
    PyObject *result = NULL;
    if (parse_header(data, (size_t)view.len, &h, 1) < 0)
        goto done;
    uint64_t articles;
    const char *wrong = check_articles(data, &h, &articles);
    if (wrong || articles != h.articles) {
        PyErr_Format(PyExc_ValueError, "build_file: %s", wrong ? wrong : "the article count differs");
        goto done;
    }
    file_articles file = {(const uint32_t *)(data + h.offset[S_POOL]), u64_section(data, &h, S_POOL_OFFSETS),
                          u64_section(data, &h, S_ID_OFFSETS)};
    article_source source = {(size_t)h.limit, file_article, &file};
    postings_out out = {(int)h.bits, (size_t)h.pool_values, hot_capacity_of((size_t)h.pool_values, h.hot_postings),
                        0, (uint32_t *)(data + h.offset[S_DIRECTORY]), (entry *)(data + h.offset[S_BASE]),
                        (uint32_t *)(data + h.offset[S_HOT_VALUES]), NULL};
    int error;
    uint32_t *slots = (uint32_t *)(data + h.offset[S_ID_SLOTS]);
    const char *ids = (const char *)(data + h.offset[S_IDS]);
    uint64_t mask = h.id_slots - 1, end = 0;
    Py_BEGIN_ALLOW_THREADS
    memset(out.directory, 0, (size_t)h.size[S_DIRECTORY]);
    /* the hot runs' shorts go first to the room after the values' room, then right after the values found */
    out.hot_short = out.hot_values + out.hot_capacity;
    error = build_postings(&source, h.hot_postings, &out, window > 0 ? (size_t)window : FILE_WINDOW_ENTRIES);
    if (error == 0) {
        h.n_hot = out.n_hot;
        section_sizes(&h);
        h.offset[S_HOT_SHORT] = align64(h.offset[S_HOT_VALUES] + h.size[S_HOT_VALUES]);
        memmove(data + h.offset[S_HOT_SHORT], out.hot_short, out.n_hot * 4);
        end = (h.offset[S_HOT_SHORT] + h.size[S_HOT_SHORT] + 7) & ~(uint64_t)7;
        memset(data + h.offset[S_HOT_SHORT] + h.size[S_HOT_SHORT], 0,
               (size_t)(end - h.offset[S_HOT_SHORT] - h.size[S_HOT_SHORT]));
        for (uint64_t s = 0; s < h.id_slots; s++)
            slots[s] = NO_DOCNO;
        for (uint64_t d = 0; d < h.limit; d++) {
            uint64_t length = file.id_offsets[d + 1] - file.id_offsets[d];
            if (!length)
                continue;
            uint64_t at = id_hash(ids + file.id_offsets[d], (size_t)length) & mask;
            while (slots[at] != NO_DOCNO)
                at = (at + 1) & mask;
            slots[at] = (uint32_t)d;
        }
    }
    Py_END_ALLOW_THREADS
    if (error < 0) {
        PyErr_NoMemory();
        goto done;
    }
    store64(data + 80, h.n_hot);
    store64(data + 16, end);
    store64(data + 112 + 8 * S_HOT_SHORT, h.offset[S_HOT_SHORT]);
    result = PyLong_FromUnsignedLongLong(end);
done:
    PyBuffer_Release(&view);
    return result;
}

PyDoc_STRVAR(seal_doc, "seal(buffer, file_bytes) -> int\n\nWrites the checksum of the file's first file_bytes bytes "
                       "into its header (without the GIL) and returns it.");

static PyObject *search_seal(PyObject *module, PyObject *args)
{
    PyObject *object;
    unsigned long long bytes;
    if (!PyArg_ParseTuple(args, "OK:seal", &object, &bytes))
        return NULL;
    Py_buffer view;
    if (get_buffer(object, &view, 1) < 0)
        return NULL;
    if (bytes < HEADER_BYTES || bytes % 8 || bytes > (unsigned long long)view.len) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "seal: file_bytes must be a multiple of 8 within the buffer");
        return NULL;
    }
    uint64_t checksum;
    Py_BEGIN_ALLOW_THREADS
    checksum = file_checksum(view.buf, (size_t)bytes);
    Py_END_ALLOW_THREADS
    store64((unsigned char *)view.buf + CHECKSUM_AT, checksum);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLongLong(checksum);
}

PyDoc_STRVAR(checksum_doc, "checksum(buffer) -> int\n\nThe checksum of a whole file (its own word read as 0), "
                           "without the GIL.");

static PyObject *search_checksum(PyObject *module, PyObject *arg)
{
    Py_buffer view;
    if (get_buffer(arg, &view, 0) < 0)
        return NULL;
    if (view.len < HEADER_BYTES || view.len % 8) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "checksum: the file must be a multiple of 8 bytes, at least the header");
        return NULL;
    }
    uint64_t checksum;
    Py_BEGIN_ALLOW_THREADS
    checksum = file_checksum(view.buf, (size_t)view.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLongLong(checksum);
}

PyDoc_STRVAR(header_doc, "header(buffer) -> dict\n\nA file's header, checked (every count in range, every section "
                         "inside the file;\nnot the checksum: Index(file=...) verifies it): ValueError saying what "
                         "is wrong.");

static PyObject *search_header(PyObject *module, PyObject *arg)
{
    Py_buffer view;
    if (get_buffer(arg, &view, 0) < 0)
        return NULL;
    file_header h;
    int error = parse_header(view.buf, (size_t)view.len, &h, 0);
    PyBuffer_Release(&view);
    if (error < 0)
        return NULL;
    return Py_BuildValue("{sIsKsKsIsIsIsKsKsKsKsKsKsssKsK}", "version", h.version, "file_bytes",
                         (unsigned long long)h.file_bytes, "generation", (unsigned long long)h.generation, "k", h.k,
                         "hot_postings", h.hot_postings, "bits", h.bits, "docno_limit", (unsigned long long)h.limit,
                         "articles", (unsigned long long)h.articles, "pool_values",
                         (unsigned long long)h.pool_values, "id_bytes", (unsigned long long)h.id_bytes, "hot_runs",
                         (unsigned long long)h.n_hot, "id_slots", (unsigned long long)h.id_slots, "config",
                         h.config, "built_at", (unsigned long long)h.built_at, "checksum",
                         (unsigned long long)h.checksum);
}

/* ---- a mapped index: Index(k, hot_postings, file=buffer) ---- */

/* Checks a file (its checksum, then its arrays) and points the index at it; the GIL released for the passes over
 * the file. 0, or -1 with ValueError set. */
static int map_file(SearchIndex *self, PyObject *file)
{
#if !PY_LITTLE_ENDIAN
    PyErr_SetString(PyExc_ValueError, "index files are little-endian: this host cannot read them in place");
    return -1;
#endif
    if (get_buffer(file, &self->file, 0) < 0)
        return -1;
    self->mapped = 1; /* from here on, dealloc releases the buffer */
    const unsigned char *data = self->file.buf;
    size_t bytes = (size_t)self->file.len;
    file_header h;
    if (parse_header(data, bytes, &h, 0) < 0)
        return -1;
    if (h.k != (uint32_t)self->k) {
        PyErr_Format(PyExc_ValueError, "the file holds sketches of K=%u, the index is for K=%zd", h.k, self->k);
        return -1;
    }
    uint64_t checksum, articles = 0;
    const char *wrong = NULL;
    const uint32_t *directory = (const uint32_t *)(data + h.offset[S_DIRECTORY]);
    const uint32_t *hot_values = (const uint32_t *)(data + h.offset[S_HOT_VALUES]);
    Py_BEGIN_ALLOW_THREADS
    checksum = bytes % 8 ? 0 : file_checksum(data, bytes);
    if (checksum == h.checksum && bytes % 8 == 0) {
        wrong = check_articles(data, &h, &articles);
        if (!wrong && articles != h.articles)
            wrong = "the article count differs from the header's";
        size_t buckets = (size_t)1 << h.bits;
        if (!wrong && (directory[0] != 0 || directory[buckets] != h.pool_values))
            wrong = "the directory does not span the base";
        for (size_t b = 0; !wrong && b < buckets; b++)
            if (directory[b + 1] < directory[b])
                wrong = "the directory goes back";
        for (uint64_t i = 1; !wrong && i < h.n_hot; i++)
            if (hot_values[i] <= hot_values[i - 1])
                wrong = "the hot table is out of order";
    }
    Py_END_ALLOW_THREADS
    if (bytes % 8 || checksum != h.checksum) {
        PyErr_Format(PyExc_ValueError, "damaged: checksum %016llx, the header says %016llx",
                     (unsigned long long)checksum, (unsigned long long)h.checksum);
        return -1;
    }
    if (wrong) {
        PyErr_Format(PyExc_ValueError, "damaged: %s", wrong);
        return -1;
    }
    if (reserve_docnos(self, (size_t)h.limit) < 0)
        return -1;
    self->hot_postings = h.hot_postings;
    self->file_limit = self->limit = (size_t)h.limit;
    self->base_pool = (const uint32_t *)(data + h.offset[S_POOL]);
    self->base_offsets = u64_section(data, &h, S_POOL_OFFSETS);
    self->id_offsets = u64_section(data, &h, S_ID_OFFSETS);
    self->id_bytes = (const char *)(data + h.offset[S_IDS]);
    self->id_slots = (const uint32_t *)(data + h.offset[S_ID_SLOTS]);
    self->id_slot_count = (size_t)h.id_slots;
    self->directory = (uint32_t *)directory;
    self->base = (entry *)(data + h.offset[S_BASE]);
    self->hot_values = (uint32_t *)hot_values;
    self->hot_short = (uint32_t *)(data + h.offset[S_HOT_SHORT]);
    self->n_hot = (size_t)h.n_hot;
    self->bits = (int)h.bits;
    self->base_entries = self->pool_live = (size_t)h.pool_values;
    self->articles = (size_t)h.articles;
    for (size_t d = 0; d < self->limit; d++)
        if (self->id_offsets[d + 1] > self->id_offsets[d]) {
            self->slot[d].state = IN_BASE;
            self->slot[d].length = (uint16_t)(self->base_offsets[d + 1] - self->base_offsets[d]);
        }
    self->sealed = 1;
    return 0;
}

PyDoc_STRVAR(base_docno_doc, "base_docno(id: bytes) -> int | None\n\nThe docno the mapped file gives id (whatever "
                             "was written since), or None.");

static PyObject *index_base_docno(SearchIndex *self, PyObject *arg)
{
    if (require_initialised(self) < 0)
        return NULL;
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "base_docno: id must be bytes");
        return NULL;
    }
    if (!self->mapped)
        Py_RETURN_NONE;
    uint32_t d = file_docno(self, PyBytes_AS_STRING(arg), (size_t)PyBytes_GET_SIZE(arg));
    if (d == NO_DOCNO)
        Py_RETURN_NONE;
    return PyLong_FromUnsignedLong(d);
}

PyDoc_STRVAR(base_id_doc, "base_id(docno) -> bytes | None\n\nThe id the mapped file gives docno, or None.");

static PyObject *index_base_id(SearchIndex *self, PyObject *arg)
{
    uint32_t d;
    if (require_initialised(self) < 0 || parse_docno(arg, &d) < 0)
        return NULL;
    if (!self->mapped || d >= self->file_limit || self->id_offsets[d + 1] == self->id_offsets[d])
        Py_RETURN_NONE;
    return PyBytes_FromStringAndSize(self->id_bytes + self->id_offsets[d],
                                     (Py_ssize_t)(self->id_offsets[d + 1] - self->id_offsets[d]));
}

/* ---- Export: what a new file's articles are, copied from an index at one moment ---- */

typedef struct {
    PyObject_HEAD
    SearchIndex *index; /* held: its mapped base (immutable while it lives) is read by write() */
    size_t limit, articles, pool_values, id_bytes;
    article_slot *slot;
    uint64_t *offset;
    uint32_t *pool;
    /* ids of the stored articles not in the mapped base, by docno */
    size_t n_ids;
    uint32_t *id_docnos;
    uint64_t *id_starts; /* n_ids + 1 into id_data */
    char *id_data;
} Export;

static PyTypeObject ExportType;

static int compare_u64(const void *a, const void *b)
{
    return compare_keys(a, b);
}

static int from_base(const Export *export, size_t d)
{
    return export->index->mapped && d < export->index->file_limit && export->slot[d].state == IN_BASE;
}

/* The position of docno d among the export's own ids, or -1. */
static Py_ssize_t export_id(const Export *export, uint32_t d)
{
    size_t low = 0, high = export->n_ids;
    while (low < high) {
        size_t middle = (low + high) / 2;
        if (export->id_docnos[middle] < d)
            low = middle + 1;
        else
            high = middle;
    }
    return low < export->n_ids && export->id_docnos[low] == d ? (Py_ssize_t)low : -1;
}

PyDoc_STRVAR(export_doc, "export(ids: dict[int, bytes]) -> Export\n\nA copy of what the index stores now, for a new "
                         "file (Export.write): ids gives the id of\nevery stored docno the mapped file does not hold "
                         "(all of them for an index of its own). The index\nmay change meanwhile.");

static void export_dealloc(Export *self)
{
    Py_XDECREF(self->index);
    free(self->slot);
    free(self->offset);
    free(self->pool);
    free(self->id_docnos);
    free(self->id_starts);
    free(self->id_data);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *index_export(SearchIndex *self, PyObject *ids)
{
    if (require_initialised(self) < 0)
        return NULL;
    if (!PyDict_Check(ids)) {
        PyErr_SetString(PyExc_TypeError, "export: ids must be a dict of docno to bytes");
        return NULL;
    }
    Export *export = PyObject_New(Export, &ExportType);
    if (!export)
        return NULL;
    Py_INCREF(self);
    export->index = self;
    export->limit = self->limit;
    export->articles = self->articles;
    export->pool_values = self->pool_live;
    export->id_bytes = 0;
    export->slot = malloc((self->limit ? self->limit : 1) * sizeof *export->slot);
    export->offset = malloc((self->limit ? self->limit : 1) * sizeof *export->offset);
    export->pool = malloc((self->pool_used ? self->pool_used : 1) * sizeof *export->pool);
    Py_ssize_t given = PyDict_Size(ids);
    export->n_ids = 0;
    export->id_docnos = malloc((given ? given : 1) * sizeof *export->id_docnos);
    export->id_starts = malloc((given + 1) * sizeof *export->id_starts);
    export->id_data = NULL;
    uint64_t *order = malloc((given ? given : 1) * sizeof *order);
    PyObject **values = malloc((given ? given : 1) * sizeof *values);
    if (!export->slot || !export->offset || !export->pool || !export->id_docnos || !export->id_starts || !order ||
        !values) {
        PyErr_NoMemory();
        goto fail;
    }
    if (self->limit) {
        memcpy(export->slot, self->slot, self->limit * sizeof *export->slot);
        memcpy(export->offset, self->offset, self->limit * sizeof *export->offset);
    }
    memcpy(export->pool, self->pool, self->pool_used * sizeof *export->pool);
    /* the ids given, by docno (only those of stored articles outside the mapped base count) */
    Py_ssize_t position = 0, n = 0;
    PyObject *key, *value;
    while (PyDict_Next(ids, &position, &key, &value)) {
        uint32_t d;
        if (parse_docno(key, &d) < 0)
            goto fail;
        if (!PyBytes_Check(value) || PyBytes_GET_SIZE(value) < 1 || PyBytes_GET_SIZE(value) > MAX_ID_BYTES) {
            PyErr_Format(PyExc_ValueError, "export: the id of docno %u must be 1..%d bytes", d, MAX_ID_BYTES);
            goto fail;
        }
        if (d >= export->limit || export->slot[d].state == ABSENT || from_base(export, d))
            continue;
        values[n] = value;
        order[n] = (uint64_t)d << 32 | (uint64_t)n;
        n++;
    }
    qsort(order, (size_t)n, sizeof *order, compare_u64);
    size_t data = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        data += (size_t)PyBytes_GET_SIZE(values[(uint32_t)order[i]]);
    export->id_data = malloc(data ? data : 1);
    if (!export->id_data) {
        PyErr_NoMemory();
        goto fail;
    }
    data = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *id = values[(uint32_t)order[i]];
        export->id_docnos[i] = (uint32_t)(order[i] >> 32);
        export->id_starts[i] = data;
        memcpy(export->id_data + data, PyBytes_AS_STRING(id), (size_t)PyBytes_GET_SIZE(id));
        data += (size_t)PyBytes_GET_SIZE(id);
    }
    export->id_starts[n] = data;
    export->n_ids = (size_t)n;
    /* every stored article has an id: the file's, or one given */
    for (size_t d = 0; d < export->limit; d++) {
        if (export->slot[d].state == ABSENT)
            continue;
        if (from_base(export, d)) {
            export->id_bytes += (size_t)(self->id_offsets[d + 1] - self->id_offsets[d]);
            continue;
        }
        Py_ssize_t at = export_id(export, (uint32_t)d);
        if (at < 0) {
            PyErr_Format(PyExc_ValueError, "export: no id given for stored docno %zu", d);
            goto fail;
        }
        export->id_bytes += (size_t)(export->id_starts[at + 1] - export->id_starts[at]);
    }
    free(order);
    free(values);
    return (PyObject *)export;
fail:
    free(order);
    free(values);
    Py_DECREF(export);
    return NULL;
}

PyDoc_STRVAR(export_sizes_doc, "sizes() -> (docno_limit, articles, pool_values, id_bytes)\n\nWhat file_size and "
                               "init_header are given for this export.");

static PyObject *export_sizes(Export *self, PyObject *unused)
{
    return Py_BuildValue("(nnnn)", (Py_ssize_t)self->limit, (Py_ssize_t)self->articles,
                         (Py_ssize_t)self->pool_values, (Py_ssize_t)self->id_bytes);
}

PyDoc_STRVAR(export_write_doc, "write(buffer)\n\nWrites the pool, pool_offsets, ids and id_offsets sections of a new "
                               "file whose header init_header\nwrote with sizes(), without the GIL.");

static PyObject *export_write(Export *self, PyObject *arg)
{
    Py_buffer view;
    if (get_buffer(arg, &view, 1) < 0)
        return NULL;
    unsigned char *data = view.buf;
    file_header h;
    if (parse_header(data, (size_t)view.len, &h, 1) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    if (h.limit != self->limit || h.articles != self->articles || h.pool_values != self->pool_values ||
        h.id_bytes != self->id_bytes || h.k != (uint32_t)self->index->k) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "write: the file's header was not made with this export's sizes");
        return NULL;
    }
    uint32_t *pool = (uint32_t *)(data + h.offset[S_POOL]);
    uint64_t *pool_offsets = (uint64_t *)(data + h.offset[S_POOL_OFFSETS]);
    char *ids = (char *)(data + h.offset[S_IDS]);
    uint64_t *id_offsets = (uint64_t *)(data + h.offset[S_ID_OFFSETS]);
    const SearchIndex *index = self->index;
    int overflow = 0;
    Py_BEGIN_ALLOW_THREADS
    uint64_t pool_at = 0, id_at = 0;
    for (size_t d = 0; d < self->limit && !overflow; d++) {
        pool_offsets[d] = pool_at;
        id_offsets[d] = id_at;
        if (self->slot[d].state == ABSENT)
            continue;
        size_t length = self->slot[d].length, id_length;
        const uint32_t *values;
        const char *id;
        if (from_base(self, d)) {
            values = index->base_pool + index->base_offsets[d];
            id = index->id_bytes + index->id_offsets[d];
            id_length = (size_t)(index->id_offsets[d + 1] - index->id_offsets[d]);
        } else {
            Py_ssize_t at = export_id(self, (uint32_t)d);
            values = self->pool + self->offset[d];
            id = self->id_data + self->id_starts[at];
            id_length = (size_t)(self->id_starts[at + 1] - self->id_starts[at]);
        }
        if (pool_at + length > self->pool_values || id_at + id_length > self->id_bytes) {
            overflow = 1;
            break;
        }
        memcpy(pool + pool_at, values, length * sizeof *pool);
        memcpy(ids + id_at, id, id_length);
        pool_at += length;
        id_at += id_length;
    }
    pool_offsets[self->limit] = pool_at;
    id_offsets[self->limit] = id_at;
    overflow |= pool_at != self->pool_values || id_at != self->id_bytes;
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (overflow) {
        PyErr_SetString(PyExc_RuntimeError, "write: the export's articles differ from its sizes");
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef export_methods[] = {
    {"sizes", (PyCFunction)export_sizes, METH_NOARGS, export_sizes_doc},
    {"write", (PyCFunction)export_write, METH_O, export_write_doc},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ExportType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "neardup.core._search.Export",
    .tp_doc = PyDoc_STR("What Index.export copied: the articles of a new index file."),
    .tp_basicsize = sizeof(Export),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)export_dealloc,
    .tp_methods = export_methods,
};

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
    static char *names[] = {"k", "hot_postings", "file", NULL};
    Py_ssize_t k, hot_postings;
    PyObject *file = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "nn|O:Index", names, &k, &hot_postings, &file))
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
    if (file != Py_None && map_file(self, file) < 0) {
        self->k = 0; /* unusable: every call is refused */
        return -1;
    }
    return 0;
}

static void index_dealloc(SearchIndex *self)
{
    free(self->offset);
    free(self->slot);
    free(self->pool);
    if (self->mapped)
        PyBuffer_Release(&self->file); /* the base was the file's */
    else {
        free(self->directory);
        free(self->base);
        free(self->hot_values);
        free(self->hot_short);
    }
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
    const uint32_t *v = values_of(self, docno);
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
            *short_end = first + (self->hot_short[low] < at - first ? self->hot_short[low] : at - first);
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
        if (d >= self->limit || self->slot[d].state != IN_BASE || (int64_t)d == exclude || (int64_t)d <= above)
            continue; /* (a docno past the limit: only in a damaged file) */
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
        memcpy(q + n, values_of(self, d), length * sizeof *q);
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
    size_t base_bytes = (self->sealed ? (((size_t)1 << self->bits) + 1) * sizeof *self->directory : 0)
                        + self->base_entries * sizeof *self->base + self->n_hot * 2 * sizeof(uint32_t);
    size_t bytes = self->capacity * (sizeof *self->offset + sizeof *self->slot)
                   + self->pool_capacity * sizeof *self->pool
                   + (self->mapped ? 0 : base_bytes)
                   + self->delta_slots * (sizeof *self->delta_keys + sizeof *self->delta_heads)
                   + self->delta_capacity * (sizeof *self->delta_docno + sizeof *self->delta_version +
                                             sizeof *self->delta_next)
                   + self->touched_capacity * (sizeof *self->touched + sizeof *self->candidates);
    return Py_BuildValue("{sn,sn,sn,sn,sn,sn,sn,sn,sn,sn,sn}", "mapped", (Py_ssize_t)self->mapped,
                         "file_bytes", (Py_ssize_t)(self->mapped ? self->file.len : 0), "hot_values_skipped", (Py_ssize_t)self->hot_values_skipped,
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
    {"export", (PyCFunction)index_export, METH_O, export_doc},
    {"base_docno", (PyCFunction)index_base_docno, METH_O, base_docno_doc},
    {"base_id", (PyCFunction)index_base_id, METH_O, base_id_doc},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject IndexType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "neardup.core._search.Index",
    .tp_doc = PyDoc_STR("Index(k, hot_postings, file=None): articles' bottom-K sketches by docno and their postings in\n"
                        "memory; put/remove keep it current, compact() builds the base (needed once before searching).\n"
                        "With file (a buffer holding an index file, e.g. a read-only mmap), the base is the file's,\n"
                        "searched in place (its hot_postings too); put/remove keep a delta in the index's own memory."),
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
    {"file_size", search_file_size, METH_VARARGS, file_size_doc},
    {"init_header", search_init_header, METH_VARARGS, init_header_doc},
    {"build_file", search_build_file, METH_VARARGS, build_file_doc},
    {"seal", search_seal, METH_VARARGS, seal_doc},
    {"checksum", search_checksum, METH_O, checksum_doc},
    {"header", search_header, METH_O, header_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef search_module = {
    PyModuleDef_HEAD_INIT, "neardup.core._search",
    "Compiled corpus search: the bound rule of both search paths, and the in-memory index (Index).",
    -1, search_methods,
};

PyMODINIT_FUNC PyInit__search(void)
{
    if (PyType_Ready(&IndexType) < 0 || PyType_Ready(&ExportType) < 0)
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
    Py_INCREF(&ExportType);
    if (PyModule_AddObject(module, "Export", (PyObject *)&ExportType) < 0 ||
        PyModule_AddIntConstant(module, "FILE_VERSION", FILE_VERSION) < 0 ||
        PyModule_AddIntConstant(module, "HEADER_BYTES", HEADER_BYTES) < 0) {
        Py_DECREF(&ExportType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
