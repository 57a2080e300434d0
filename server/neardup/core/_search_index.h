/* What the three files of the _search extension share (one module, neardup.core._search):
 *   _search_index.c  the index in memory: its arrays, the delta, building the base postings (compact), the search
 *                    itself and the bound rule both search paths apply;
 *   _search_file.c   the index file: its format (described there), checksum, header, building a file's postings
 *                    in place, and mapping one;
 *   _search.c        the Python glue: every entry point's argument checks (one helper), the Index and Export
 *                    types, the module.
 *
 * Corpus search in memory: a serving process's copy of the store's sketches and postings, searched in one call.
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
 *  - or a mapped base: the postings, the sketches and the ids of an index file (its format: _search_file.c; written
 *    by init_header, Export.write or the caller, and build_file), read in place from a buffer that every process
 *    mapping the file shares through the page cache; an article IN_BASE then has its values in the file, and the
 *    heap holds only the per-article states and what was written since (the delta). It is never compacted: a new
 *    file is written (Index.export) and mapped instead.
 * A search gathers the postings of the query's values, counts shared values per article (a counter per docno,
 * reset after), applies the bound rule (_search_index.c: the one the store path applies too, through may_reach), and
 * verifies what passes with the kernel's early-terminating merge (_pair.h). The caller holds the GIL throughout,
 * so searches and writes never overlap and the scratch space is the index's own; but compact() (seconds at a
 * million articles) releases it, and every other call on the index is refused while it runs, so a caller may
 * fold in a background thread while its others go on (runtime/search/memory.py searches the store meanwhile).
 */
#ifndef NEARDUP_SEARCH_H
#define NEARDUP_SEARCH_H

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


/* Article d's values: in the file when it is a mapped base's, else in the heap pool. */
static inline const uint32_t *values_of(const SearchIndex *self, size_t d)
{
    if (self->mapped && self->slot[d].state == IN_BASE)
        return self->base_pool + self->base_offsets[d];
    return self->pool + self->offset[d];
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

#define NO_DOCNO 0xFFFFFFFFu

/* ---- the index file's constants and header (the format: _search_file.c) ---- */

#define FILE_MAGIC "NDSRCHIX"
#define FILE_VERSION 1
#define HEADER_BYTES 256
#define CHECKSUM_AT 248
#define MAX_ID_BYTES 511

enum { S_POOL, S_POOL_OFFSETS, S_IDS, S_ID_OFFSETS, S_DIRECTORY, S_BASE, S_ID_SLOTS, S_HOT_VALUES, S_HOT_SHORT,
       SECTIONS };
extern const char *const section_names[SECTIONS];

typedef struct {
    uint32_t version, k, hot_postings, bits;
    uint64_t file_bytes, generation, limit, articles, pool_values, id_bytes, n_hot, id_slots, built_at, checksum;
    char config[17];
    uint64_t offset[SECTIONS], size[SECTIONS];
} file_header;

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

static inline int from_base(const Export *export, size_t d)
{
    return export->index->mapped && d < export->index->file_limit && export->slot[d].state == IN_BASE;
}

/* The position of docno d among the export's own ids, or -1. */
static inline Py_ssize_t export_id(const Export *export, uint32_t d)
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

/* ---- _search_index.c ---- */

size_t hot_skipped(size_t hot, size_t query_length, double threshold, int metric);
int may_reach(size_t shared, size_t length, size_t skipped, size_t query_length, double threshold, int metric);
int compare_keys(const void *a, const void *b);
int reserve_docnos(SearchIndex *self, size_t needed);
int reserve_pool(SearchIndex *self, size_t needed);
void clear_delta(SearchIndex *self);
int delta_add(SearchIndex *self, uint32_t value, uint32_t docno, uint32_t version);
int bucket_bits(size_t total);
size_t hot_capacity_of(size_t total, size_t hot_postings);
int build_postings(const article_source *source, size_t hot_postings, postings_out *out, size_t window);
int compact(SearchIndex *self);
int gather_candidates(SearchIndex *self, size_t n, double threshold, int metric, int64_t exclude, int64_t above,
                      size_t *passed);
int verify_candidate(SearchIndex *self, size_t n, uint32_t d, int metric, double threshold, double *similarity);

/* ---- _search_file.c ---- */

uint64_t file_checksum(const unsigned char *data, size_t bytes);
uint64_t plan_file(file_header *h, uint64_t limit, uint64_t articles, uint64_t pool_values, uint64_t id_bytes,
                   size_t hot_postings);
void write_header(unsigned char *data, const file_header *h, const char *config, size_t config_length, uint64_t end);
int parse_header(const unsigned char *data, size_t bytes, file_header *h, int building);
PyObject *build_file(unsigned char *data, size_t bytes, size_t window);
void seal_file(unsigned char *data, uint64_t checksum);
int map_file(SearchIndex *self, PyObject *file);
uint32_t file_docno(const SearchIndex *self, const char *id, size_t length);
int write_articles(const Export *export, unsigned char *data, const file_header *h);

#endif
