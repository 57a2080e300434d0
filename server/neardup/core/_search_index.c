/* The search index in memory (_search_index.h describes it): its per-article arrays and pool, the delta's hash table,
 * building the base postings (compact, and build_file's in a file), and a search's gathering, counting, bound and
 * verification; the bound rule is here once, for both search paths. No Python object is touched here but the
 * errors raised (MemoryError), so compact and build_postings may run without the GIL. */
#include "_search_index.h"

/* ---- the bound rule (docs/design.md, "Corpus search"): one copy, for both search paths ---- */

/* What a long article's similarity with a query of query_length values is at least divided by. Jaccard and
 * mutual divide by at least the larger compared length, which is never below query_length (docs/design.md). */
static size_t bound_divisor(size_t query_length, int metric)
{
    if (metric != CONTAINMENT)
        return query_length;
    return query_length < MIN_EVIDENCE ? query_length : MIN_EVIDENCE;
}

/* How many of a query's `hot` hot values (hottest first) may be left unread: a long article sharing only them
 * stays below the threshold. */
size_t hot_skipped(size_t hot, size_t query_length, double threshold, int metric)
{
    size_t divisor = bound_divisor(query_length, metric), skipped = 0;
    while (skipped < hot && (double)(skipped + 1) / (double)divisor < threshold)
        skipped++;
    return skipped;
}

/* Whether an article that shares `shared` of the read values with the query may reach the threshold: `length`
 * is its number of values when short (under MIN_EVIDENCE, all of its entries were read), 0 when long (then every
 * skipped value counts as shared). */
int may_reach(size_t shared, size_t length, size_t skipped, size_t query_length, double threshold, int metric)
{
    size_t divisor = bound_divisor(query_length, metric);
    double bound;
    if (metric != CONTAINMENT)
        bound = (double)(shared + (length > 0 ? 0 : skipped)) / (double)divisor;
    else if (length > 0)
        bound = (double)shared / (double)(query_length < length ? query_length : length);
    else
        bound = (double)(shared + skipped) / (double)divisor;
    return bound >= threshold;
}

static void *grow(void *array, size_t count, size_t size)
{
    return realloc(array, (count ? count : 1) * size);
}

/* Room for docnos below `needed`: the per-article arrays (new slots zeroed: ABSENT, no count). */
int reserve_docnos(SearchIndex *self, size_t needed)
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

int reserve_pool(SearchIndex *self, size_t needed)
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

void clear_delta(SearchIndex *self)
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

int delta_add(SearchIndex *self, uint32_t value, uint32_t docno, uint32_t version)
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

int compare_keys(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The bucket bits for `total` entries: about ENTRIES_PER_BUCKET a bucket, at least 2**MIN_BUCKET_BITS buckets. */
int bucket_bits(size_t total)
{
    int bits = MIN_BUCKET_BITS;
    while (((size_t)1 << bits) * ENTRIES_PER_BUCKET < total)
        bits++;
    return bits;
}

size_t hot_capacity_of(size_t total, size_t hot_postings)
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
int build_postings(const article_source *source, size_t hot_postings, postings_out *out, size_t window)
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
int compact(SearchIndex *self)
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

/* A search's candidates for the query in self->values[0 .. n) (n >= 1): the base run of each value (the hot ones'
 * long articles left unread where the bound allows), the delta's chains, shared values counted per article, the
 * bound applied; what passes goes to self->candidates, the most shared first (by docno within a count), *passed
 * of them. 0, or -1 with MemoryError set. */
int gather_candidates(SearchIndex *self, size_t n, double threshold, int metric, int64_t exclude, int64_t above,
                      size_t *passed)
{
    const uint32_t *q = self->values;
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
    if (reserve_touched(self, most_entries) < 0)
        return -1;

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
    size_t count = 0;
    for (size_t t = 0; t < touched; t++) {
        uint32_t d = self->touched[t];
        size_t shared = self->slot[d].count, length = self->slot[d].length;
        self->slot[d].count = 0;
        if (may_reach(shared, length < MIN_EVIDENCE ? length : 0, skipped, n, threshold, metric))
            self->candidates[count++] = (uint64_t)(0xFFFF - shared) << 32 | d;
    }
    qsort(self->candidates, count, sizeof *self->candidates, compare_keys);
    *passed = count;
    return 0;
}

/* Whether article d reaches the threshold with the query in self->values[0 .. n): the kernel's early-terminating
 * merge of the query (0) with it (1), its values copied after the query's; *similarity set when it does. */
int verify_candidate(SearchIndex *self, size_t n, uint32_t d, int metric, double threshold, double *similarity)
{
    uint32_t *q = self->values;
    size_t length = self->slot[d].length;
    memcpy(q + n, values_of(self, d), length * sizeof *q);
    uint32_t start[3] = {0, (uint32_t)n, (uint32_t)(n + length)};
    uint64_t cap[2] = {n >= (size_t)self->k ? q[n - 1] : UNCAPPED,
                       length && length >= (size_t)self->k ? q[n + length - 1] : UNCAPPED};
    result_set set = {q, start, cap, metric, threshold, NULL, NULL, NULL, 0, NULL};
    return is_duplicate(&set, 0, 1, similarity);
}
