/* NLTK's English and German Snowball stemmers (nltk.stem.snowball.EnglishStemmer.stem and GermanStemmer.stem in
 * the pinned NLTK series), compiled.
 *
 * A transliteration, not the Snowball project's own C: NLTK's stemmer is an older Porter2 with its own
 * bookkeeping (R1 and R2 are kept as strings of their own, trimmed and extended beside the word, and sometimes
 * set to "e" or emptied), and PyStemmer's English stems differ from it on ordinary words ("added": NLTK "ad",
 * PyStemmer "add"). Every step below follows NLTK's code line by line on three strings of code points (the word,
 * R1 and R2) with Python's slicing rules (s[:-k] is empty when k >= len(s)); an index Python would find out of
 * range raises IndexError as NLTK would. German follows GermanStemmer.stem the same way (its slices of R1 and R2 with
 * negative bounds as Python clamps them). tests/core/test_sketch_compiled.py holds each equal to NLTK's stem on
 * every word of the benchmark corpora and on generated words, arbitrary Unicode included.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string.h>

/* A string of code points with room for its word's length plus a few (no step makes one longer than that). */
typedef struct {
    Py_UCS4 *c;
    Py_ssize_t n;
} Str;

#define VOWELS "aeiouy"

static int is_in(Py_UCS4 c, const char *set)
{
    for (; *set; set++)
        if (c == (unsigned char)*set)
            return 1;
    return 0;
}

static int is_vowel(Py_UCS4 c)
{
    return is_in(c, VOWELS);
}

/* s.endswith(suffix), suffix ASCII */
static int ends(const Str *s, const char *suffix)
{
    Py_ssize_t k = (Py_ssize_t)strlen(suffix);
    if (k > s->n)
        return 0;
    for (Py_ssize_t i = 0; i < k; i++)
        if (s->c[s->n - k + i] != (unsigned char)suffix[i])
            return 0;
    return 1;
}

static int starts(const Str *s, const char *prefix)
{
    Py_ssize_t k = (Py_ssize_t)strlen(prefix);
    if (k > s->n)
        return 0;
    for (Py_ssize_t i = 0; i < k; i++)
        if (s->c[i] != (unsigned char)prefix[i])
            return 0;
    return 1;
}

/* s = s[:-k] (k >= 1) */
static void cut(Str *s, Py_ssize_t k)
{
    s->n = k >= s->n ? 0 : s->n - k;
}

/* s = s + text */
static void add(Str *s, const char *text)
{
    for (; *text; text++)
        s->c[s->n++] = (unsigned char)*text;
}

/* s = suffix_replace(s, old, new): s[:-len(old)] + new */
static void replace(Str *s, const char *old, const char *new)
{
    cut(s, (Py_ssize_t)strlen(old));
    add(s, new);
}

/* s = s[from:] of t */
static void copy_from(Str *s, const Str *t, Py_ssize_t from)
{
    s->n = from >= t->n ? 0 : t->n - from;
    memcpy(s->c, t->c + (t->n - s->n), (size_t)s->n * sizeof *s->c);
}

/* Whether any of the first `count` code points of s is a vowel (for letter in s[:count]). */
static int has_vowel(const Str *s, Py_ssize_t count)
{
    for (Py_ssize_t i = 0; i < count && i < s->n; i++)
        if (is_vowel(s->c[i]))
            return 1;
    return 0;
}

/* The region after the first non-vowel following a vowel in s, from index 1 on: the loop of _r1r2_standard. */
static void region(Str *out, const Str *s)
{
    out->n = 0;
    for (Py_ssize_t i = 1; i < s->n; i++)
        if (!is_vowel(s->c[i]) && is_vowel(s->c[i - 1])) {
            copy_from(out, s, i + 1);
            return;
        }
}

/* s[-k], or -1 where Python raises IndexError */
static int64_t back(const Str *s, Py_ssize_t k)
{
    return k <= s->n ? (int64_t)s->c[s->n - k] : -1;
}

static const char *const STEP0[] = {"'s'", "'s", "'", NULL};
static const char *const STEP1A[] = {"sses", "ied", "ies", "us", "ss", "s", NULL};
static const char *const STEP1B[] = {"eedly", "ingly", "edly", "eed", "ing", "ed", NULL};
static const char *const STEP2[] = {"ization", "ational", "fulness", "ousness", "iveness", "tional", "biliti",
                                    "lessli", "entli", "ation", "alism", "aliti", "ousli", "iviti", "fulli", "enci",
                                    "anci", "abli", "izer", "ator", "alli", "bli", "ogi", "li", NULL};
static const char *const STEP3[] = {"ational", "tional", "alize", "icate", "iciti", "ative", "ical", "ness", "ful",
                                    NULL};
static const char *const STEP4[] = {"ement", "ance", "ence", "able", "ible", "ment", "ant", "ent", "ism", "ate",
                                    "iti", "ous", "ive", "ize", "ion", "al", "er", "ic", NULL};
static const char *const DOUBLE_CONSONANTS[] = {"bb", "dd", "ff", "gg", "mm", "nn", "pp", "rr", "tt", NULL};
#define LI_ENDING "cdeghkmnrt"
static const char *const SPECIAL_WORDS[][2] = {
    {"skis", "ski"}, {"skies", "sky"}, {"dying", "die"}, {"lying", "lie"}, {"tying", "tie"}, {"idly", "idl"},
    {"gently", "gentl"}, {"ugly", "ugli"}, {"early", "earli"}, {"only", "onli"}, {"singly", "singl"},
    {"sky", "sky"}, {"news", "news"}, {"howe", "howe"}, {"atlas", "atlas"}, {"cosmos", "cosmos"},
    {"bias", "bias"}, {"andes", "andes"}, {"inning", "inning"}, {"innings", "inning"}, {"outing", "outing"},
    {"outings", "outing"}, {"canning", "canning"}, {"cannings", "canning"}, {"herring", "herring"},
    {"herrings", "herring"}, {"earring", "earring"}, {"earrings", "earring"}, {"proceed", "proceed"},
    {"proceeds", "proceed"}, {"proceeded", "proceed"}, {"proceeding", "proceed"}, {"exceed", "exceed"},
    {"exceeds", "exceed"}, {"exceeded", "exceed"}, {"exceeding", "exceed"}, {"succeed", "succeed"},
    {"succeeds", "succeed"}, {"succeeded", "succeed"}, {"succeeding", "succeed"}, {NULL, NULL},
};

/* The first of the suffixes s ends with, or NULL. */
static const char *first_ending(const Str *s, const char *const *suffixes)
{
    for (; *suffixes; suffixes++)
        if (ends(s, *suffixes))
            return *suffixes;
    return NULL;
}

static int is(const char *suffix, const char *name)
{
    return strcmp(suffix, name) == 0;
}

/* r = suffix_replace(r, suffix, new) if len(r) >= len(suffix) else otherwise */
static void replace_region(Str *r, const char *suffix, const char *new, const char *otherwise)
{
    if (r->n >= (Py_ssize_t)strlen(suffix)) {
        replace(r, suffix, new);
    } else {
        r->n = 0;
        add(r, otherwise);
    }
}

/* r = r[:-1] + letter if len(r) >= 1 else "" */
static void swap_last(Str *r, const char *letter)
{
    if (r->n >= 1) {
        r->n--;
        add(r, letter);
    } else {
        r->n = 0;
    }
}

static void cut3(Str *word, Str *r1, Str *r2, Py_ssize_t k)
{
    cut(word, k);
    cut(r1, k);
    cut(r2, k);
}

/* The steps after the special words, on word (lowercased, apostrophes mapped); 0, or -1 for an IndexError. */
static int stem_steps(Str *word, Str *r1, Str *r2)
{
    const char *suffix;
    int64_t c;
    if (word->n && word->c[0] == '\'') {
        memmove(word->c, word->c + 1, (size_t)(word->n - 1) * sizeof *word->c);
        word->n--;
    }
    if (word->n && word->c[0] == 'y')
        word->c[0] = 'Y';
    for (Py_ssize_t i = 1; i < word->n; i++)
        if (is_vowel(word->c[i - 1]) && word->c[i] == 'y')
            word->c[i] = 'Y';

    if (starts(word, "gener") || starts(word, "commun") || starts(word, "arsen")) {
        copy_from(r1, word, starts(word, "gener") || starts(word, "arsen") ? 5 : 6);
        region(r2, r1);
    } else {
        region(r1, word);
        region(r2, r1);
    }

    /* step 0 */
    if ((suffix = first_ending(word, STEP0)))
        cut3(word, r1, r2, (Py_ssize_t)strlen(suffix));

    /* step 1a */
    if ((suffix = first_ending(word, STEP1A))) {
        if (is(suffix, "sses")) {
            cut3(word, r1, r2, 2);
        } else if (is(suffix, "ied") || is(suffix, "ies")) {
            cut3(word, r1, r2, word->n - 3 > 1 ? 2 : 1);
        } else if (is(suffix, "s")) {
            if (has_vowel(word, word->n - 2))
                cut3(word, r1, r2, 1);
        }
    }

    /* step 1b */
    if ((suffix = first_ending(word, STEP1B))) {
        Py_ssize_t k = (Py_ssize_t)strlen(suffix);
        if (is(suffix, "eed") || is(suffix, "eedly")) {
            if (ends(r1, suffix)) {
                replace(word, suffix, "ee");
                replace_region(r1, suffix, "ee", "");
                replace_region(r2, suffix, "ee", "");
            }
        } else if (has_vowel(word, word->n - k)) {
            cut3(word, r1, r2, k);
            if (ends(word, "at") || ends(word, "bl") || ends(word, "iz")) {
                add(word, "e");
                add(r1, "e");
                if (word->n > 5 || r1->n >= 3)
                    add(r2, "e");
            } else if (first_ending(word, DOUBLE_CONSONANTS)) {
                cut3(word, r1, r2, 1);
            } else if ((r1->n == 0 && word->n >= 3 && !is_vowel(word->c[word->n - 1]) &&
                        !is_in(word->c[word->n - 1], "wxY") && is_vowel(word->c[word->n - 2]) &&
                        !is_vowel(word->c[word->n - 3])) ||
                       (r1->n == 0 && word->n == 2 && is_vowel(word->c[0]) && !is_vowel(word->c[1]))) {
                add(word, "e");
                if (r1->n > 0)
                    add(r1, "e");
                if (r2->n > 0)
                    add(r2, "e");
            }
        }
    }

    /* step 1c */
    if (word->n > 2 && is_in(word->c[word->n - 1], "yY") && !is_vowel(word->c[word->n - 2])) {
        word->n--;
        add(word, "i");
        swap_last(r1, "i");
        swap_last(r2, "i");
    }

    /* step 2 */
    if ((suffix = first_ending(word, STEP2)) && ends(r1, suffix)) {
        if (is(suffix, "tional")) {
            cut3(word, r1, r2, 2);
        } else if (is(suffix, "enci") || is(suffix, "anci") || is(suffix, "abli")) {
            word->n--;
            add(word, "e");
            swap_last(r1, "e");
            swap_last(r2, "e");
        } else if (is(suffix, "entli")) {
            cut3(word, r1, r2, 2);
        } else if (is(suffix, "izer") || is(suffix, "ization")) {
            replace(word, suffix, "ize");
            replace_region(r1, suffix, "ize", "");
            replace_region(r2, suffix, "ize", "");
        } else if (is(suffix, "ational") || is(suffix, "ation") || is(suffix, "ator")) {
            replace(word, suffix, "ate");
            replace_region(r1, suffix, "ate", "");
            replace_region(r2, suffix, "ate", "e");
        } else if (is(suffix, "alism") || is(suffix, "aliti") || is(suffix, "alli")) {
            replace(word, suffix, "al");
            replace_region(r1, suffix, "al", "");
            replace_region(r2, suffix, "al", "");
        } else if (is(suffix, "fulness")) {
            cut3(word, r1, r2, 4);
        } else if (is(suffix, "ousli") || is(suffix, "ousness")) {
            replace(word, suffix, "ous");
            replace_region(r1, suffix, "ous", "");
            replace_region(r2, suffix, "ous", "");
        } else if (is(suffix, "iveness") || is(suffix, "iviti")) {
            replace(word, suffix, "ive");
            replace_region(r1, suffix, "ive", "");
            replace_region(r2, suffix, "ive", "e");
        } else if (is(suffix, "biliti") || is(suffix, "bli")) {
            replace(word, suffix, "ble");
            replace_region(r1, suffix, "ble", "");
            replace_region(r2, suffix, "ble", "");
        } else if (is(suffix, "ogi")) {
            if ((c = back(word, 4)) < 0)
                return -1;
            if (c == 'l')
                cut3(word, r1, r2, 1);
        } else if (is(suffix, "fulli") || is(suffix, "lessli")) {
            cut3(word, r1, r2, 2);
        } else if (is(suffix, "li")) {
            if ((c = back(word, 3)) < 0)
                return -1;
            if (is_in((Py_UCS4)c, LI_ENDING))
                cut3(word, r1, r2, 2);
        }
    }

    /* step 3 */
    if ((suffix = first_ending(word, STEP3)) && ends(r1, suffix)) {
        if (is(suffix, "tional")) {
            cut3(word, r1, r2, 2);
        } else if (is(suffix, "ational")) {
            replace(word, suffix, "ate");
            replace_region(r1, suffix, "ate", "");
            replace_region(r2, suffix, "ate", "");
        } else if (is(suffix, "alize")) {
            cut3(word, r1, r2, 3);
        } else if (is(suffix, "icate") || is(suffix, "iciti") || is(suffix, "ical")) {
            replace(word, suffix, "ic");
            replace_region(r1, suffix, "ic", "");
            replace_region(r2, suffix, "ic", "");
        } else if (is(suffix, "ful") || is(suffix, "ness")) {
            cut3(word, r1, r2, (Py_ssize_t)strlen(suffix));
        } else if (is(suffix, "ative") && ends(r2, suffix)) {
            cut3(word, r1, r2, 5);
        }
    }

    /* step 4 */
    if ((suffix = first_ending(word, STEP4)) && ends(r2, suffix)) {
        if (is(suffix, "ion")) {
            if ((c = back(word, 4)) < 0)
                return -1;
            if (is_in((Py_UCS4)c, "st"))
                cut3(word, r1, r2, 3);
        } else {
            cut3(word, r1, r2, (Py_ssize_t)strlen(suffix));
        }
    }

    /* step 5 */
    if (ends(r2, "l")) {
        if ((c = back(word, 2)) < 0)
            return -1;
        if (c == 'l') {
            cut(word, 1);
            goto done;
        }
    }
    if (ends(r2, "e")) {
        cut(word, 1);
    } else if (ends(r1, "e")) {
        if (word->n >= 4 && (is_vowel(word->c[word->n - 2]) || is_in(word->c[word->n - 2], "wxY") ||
                             !is_vowel(word->c[word->n - 3]) || is_vowel(word->c[word->n - 4])))
            cut(word, 1);
    }
done:
    for (Py_ssize_t i = 0; i < word->n; i++)
        if (word->c[i] == 'Y')
            word->c[i] = 'y';
    return 0;
}

/* str.lower() of a stemmer's argument, or NULL with TypeError when it is no str. */
static PyObject *lowered_word(PyObject *arg, const char *stemmer)
{
    if (!PyUnicode_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "%s() takes a str, not %.100s", stemmer, Py_TYPE(arg)->tp_name);
        return NULL;
    }
    return PyObject_CallMethod(arg, "lower", NULL);
}

static PyObject *special_words;  /* dict: word -> stem */

PyDoc_STRVAR(english_doc,
             "english(word) -> str\n\n"
             "nltk.stem.snowball.EnglishStemmer().stem(word), compiled: the same stem of every str.");

static PyObject *english(PyObject *module, PyObject *arg)
{
    PyObject *lowered = lowered_word(arg, "english"), *result = NULL;
    if (!lowered)
        return NULL;
    Py_ssize_t length = PyUnicode_GET_LENGTH(lowered);
    if (length <= 2)
        return lowered;
    PyObject *special = PyDict_GetItemWithError(special_words, lowered);
    if (special || PyErr_Occurred()) {
        Py_XINCREF(special);
        Py_DECREF(lowered);
        return special;
    }
    Py_ssize_t room = length + 8;
    Py_UCS4 *memory = PyMem_Malloc((size_t)(3 * room) * sizeof *memory);
    if (!memory) {
        Py_DECREF(lowered);
        return PyErr_NoMemory();
    }
    Str word = {memory, length}, r1 = {memory + room, 0}, r2 = {memory + 2 * room, 0};
    int kind = PyUnicode_KIND(lowered);
    const void *data = PyUnicode_DATA(lowered);
    for (Py_ssize_t i = 0; i < length; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        word.c[i] = c == 0x2019 || c == 0x2018 || c == 0x201B ? '\'' : c;
    }
    if (stem_steps(&word, &r1, &r2) < 0)
        PyErr_SetString(PyExc_IndexError, "string index out of range");
    else
        result = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, word.c, word.n);
    PyMem_Free(memory);
    Py_DECREF(lowered);
    return result;
}

/* --- German ---------------------------------------------------------------------------------------------------- */


static int is_german_vowel(Py_UCS4 c)
{
    return is_in(c, "aeiouy") || c == 0xE4 || c == 0xF6 || c == 0xFC;
}

/* s[start:stop] of Python, start and stop negative, as [*from, *to) */
static void py_slice(const Str *s, Py_ssize_t start, Py_ssize_t stop, Py_ssize_t *from, Py_ssize_t *to)
{
    *from = start + s->n < 0 ? 0 : start + s->n;
    *to = stop + s->n < 0 ? 0 : stop + s->n;
    if (*to < *from)
        *to = *from;
}

/* text in s[start:stop] (a substring test), start and stop negative, text ASCII */
static int slice_contains(const Str *s, Py_ssize_t start, Py_ssize_t stop, const char *text)
{
    Py_ssize_t from, to, k = (Py_ssize_t)strlen(text);
    py_slice(s, start, stop, &from, &to);
    for (Py_ssize_t at = from; at + k <= to; at++) {
        Py_ssize_t i = 0;
        while (i < k && s->c[at + i] == (unsigned char)text[i])
            i++;
        if (i == k)
            return 1;
    }
    return 0;
}

static const char *const GERMAN_STEP1[] = {"ern", "em", "er", "en", "es", "e", "s", NULL};
static const char *const GERMAN_STEP2[] = {"est", "en", "er", "st", NULL};
static const char *const GERMAN_STEP3[] = {"isch", "lich", "heit", "keit", "end", "ung", "ig", "ik", NULL};

/* NLTK's GermanStemmer.stem after lowercasing and ß -> ss; 0, or -1 for an IndexError. */
static int german_steps(Str *word, Str *r1, Str *r2)
{
    const char *suffix;
    int64_t c;
    for (Py_ssize_t i = 1; i < word->n - 1; i++)
        if (is_german_vowel(word->c[i - 1]) && is_german_vowel(word->c[i + 1])) {
            if (word->c[i] == 'u')
                word->c[i] = 'U';
            else if (word->c[i] == 'y')
                word->c[i] = 'Y';
        }
    /* _r1r2_standard with the German vowels */
    r1->n = 0;
    for (Py_ssize_t i = 1; i < word->n; i++)
        if (!is_german_vowel(word->c[i]) && is_german_vowel(word->c[i - 1])) {
            copy_from(r1, word, i + 1);
            break;
        }
    r2->n = 0;
    for (Py_ssize_t i = 1; i < r1->n; i++)
        if (!is_german_vowel(r1->c[i]) && is_german_vowel(r1->c[i - 1])) {
            copy_from(r2, r1, i + 1);
            break;
        }
    /* R1 is adjusted so that the region before it contains at least 3 letters */
    for (Py_ssize_t i = 1; i < word->n; i++)
        if (!is_german_vowel(word->c[i]) && is_german_vowel(word->c[i - 1])) {
            if (i + 1 < 3)
                copy_from(r1, word, 3);
            break;
        }

    /* step 1 */
    if ((suffix = first_ending(r1, GERMAN_STEP1))) {
        Py_ssize_t k = (Py_ssize_t)strlen(suffix);
        Py_ssize_t from, to;
        py_slice(word, -k - 4, -k, &from, &to);
        if ((is(suffix, "en") || is(suffix, "es") || is(suffix, "e")) && to - from == 4 &&
            word->c[from] == 'n' && word->c[from + 1] == 'i' && word->c[from + 2] == 's' && word->c[from + 3] == 's') {
            cut3(word, r1, r2, k + 1);
        } else if (is(suffix, "s")) {
            if ((c = back(word, 2)) < 0)
                return -1;
            if (is_in((Py_UCS4)c, "bdfghklmnrt"))
                cut3(word, r1, r2, 1);
        } else {
            cut3(word, r1, r2, k);
        }
    }

    /* step 2 */
    if ((suffix = first_ending(r1, GERMAN_STEP2))) {
        if (is(suffix, "st")) {
            if ((c = back(word, 3)) < 0)
                return -1;
            if (is_in((Py_UCS4)c, "bdfghklmnt") && word->n - 3 >= 3)
                cut3(word, r1, r2, 2);
        } else {
            cut3(word, r1, r2, (Py_ssize_t)strlen(suffix));
        }
    }

    /* step 3: derivational suffixes (only the word changes) */
    if ((suffix = first_ending(r2, GERMAN_STEP3))) {
        Py_ssize_t k = (Py_ssize_t)strlen(suffix);
        if (is(suffix, "end") || is(suffix, "ung")) {
            if (slice_contains(r2, -k - 2, -k, "ig") && !slice_contains(r2, -k - 3, -k - 2, "e"))
                cut(word, k + 2);
            else
                cut(word, k);
        } else if ((is(suffix, "ig") || is(suffix, "ik") || is(suffix, "isch")) &&
                   !slice_contains(r2, -k - 1, -k, "e")) {
            cut(word, k);
        } else if (is(suffix, "lich") || is(suffix, "heit")) {
            if (slice_contains(r1, -k - 2, -k, "er") || slice_contains(r1, -k - 2, -k, "en"))
                cut(word, k + 2);
            else
                cut(word, k);
        } else if (is(suffix, "keit")) {
            if (slice_contains(r2, -k - 4, -k, "lich"))
                cut(word, k + 4);
            else if (slice_contains(r2, -k - 2, -k, "ig"))
                cut(word, k + 2);
            else
                cut(word, k);
        }
    }

    /* umlauts removed, u and y back in lower case */
    for (Py_ssize_t i = 0; i < word->n; i++) {
        Py_UCS4 letter = word->c[i];
        word->c[i] = letter == 0xE4 ? 'a' : letter == 0xF6 ? 'o' : letter == 0xFC || letter == 'U' ? 'u'
                   : letter == 'Y' ? 'y' : letter;
    }
    return 0;
}

PyDoc_STRVAR(german_doc,
             "german(word) -> str\n\n"
             "nltk.stem.snowball.GermanStemmer().stem(word), compiled: the same stem of every str.");

static PyObject *german(PyObject *module, PyObject *arg)
{
    PyObject *lowered = lowered_word(arg, "german"), *result = NULL;
    if (!lowered)
        return NULL;
    Py_ssize_t length = PyUnicode_GET_LENGTH(lowered), room = 2 * length + 8;  /* each ß may become ss */
    Py_UCS4 *memory = PyMem_Malloc((size_t)(3 * room) * sizeof *memory);
    if (!memory) {
        Py_DECREF(lowered);
        return PyErr_NoMemory();
    }
    Str word = {memory, 0}, r1 = {memory + room, 0}, r2 = {memory + 2 * room, 0};
    int kind = PyUnicode_KIND(lowered);
    const void *data = PyUnicode_DATA(lowered);
    for (Py_ssize_t i = 0; i < length; i++) {
        Py_UCS4 letter = PyUnicode_READ(kind, data, i);
        if (letter == 0xDF) {
            word.c[word.n++] = 's';
            word.c[word.n++] = 's';
        } else {
            word.c[word.n++] = letter;
        }
    }
    if (german_steps(&word, &r1, &r2) < 0)
        PyErr_SetString(PyExc_IndexError, "string index out of range");
    else
        result = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, word.c, word.n);
    PyMem_Free(memory);
    Py_DECREF(lowered);
    return result;
}

static PyMethodDef stem_methods[] = {
    {"english", english, METH_O, english_doc},
    {"german", german, METH_O, german_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef stem_module = {
    PyModuleDef_HEAD_INIT, "neardup.core._stem",
    "NLTK's Snowball stemmers, compiled where a compiled one gives NLTK's stems exactly: English, German.", -1, stem_methods,
};

PyMODINIT_FUNC PyInit__stem(void)
{
    if (!special_words) {
        if (!(special_words = PyDict_New()))
            return NULL;
        for (int i = 0; SPECIAL_WORDS[i][0]; i++) {
            PyObject *stem = PyUnicode_FromString(SPECIAL_WORDS[i][1]);
            if (!stem || PyDict_SetItemString(special_words, SPECIAL_WORDS[i][0], stem) < 0) {
                Py_XDECREF(stem);
                Py_CLEAR(special_words);
                return NULL;
            }
            Py_DECREF(stem);
        }
    }
    return PyModule_Create(&stem_module);
}
