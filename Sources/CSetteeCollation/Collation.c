#include "settee_collation.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unicode/ucol.h>
#include <unicode/ustring.h>
#include <unicode/uversion.h>

// One collator for the process: ICU allows concurrent compare and sort-key
// calls on a collator nobody modifies.
static UCollator *collator;
static UErrorCode openStatus = U_ZERO_ERROR;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void openCollator(void) {
    // The root locale, default attributes (tertiary strength), as CouchDB's
    // couch_ejson_compare opens it.
    collator = ucol_open("", &openStatus);
}

int32_t settee_collation_initialize(void) {
    pthread_once(&once, openCollator);
    return U_FAILURE(openStatus) ? (int32_t)openStatus : 0;
}

// UTF-8 to UTF-16 in `stack` when it fits, else in a heap buffer the caller frees.
static UChar *toUTF16(const char *text, size_t length, UChar *stack, int32_t stackCapacity, int32_t *outLength,
                      UChar **heap) {
    UErrorCode status = U_ZERO_ERROR;
    *heap = NULL;
    u_strFromUTF8WithSub(stack, stackCapacity, outLength, text, (int32_t)length, 0xFFFD, NULL, &status);
    if (status == U_BUFFER_OVERFLOW_ERROR || status == U_STRING_NOT_TERMINATED_WARNING) {
        if (status == U_STRING_NOT_TERMINATED_WARNING && *outLength <= stackCapacity) return stack;
        *heap = malloc(sizeof(UChar) * ((size_t)*outLength + 1));
        if (!*heap) return NULL;
        status = U_ZERO_ERROR;
        u_strFromUTF8WithSub(*heap, *outLength + 1, outLength, text, (int32_t)length, 0xFFFD, NULL, &status);
        if (U_FAILURE(status)) {
            free(*heap);
            *heap = NULL;
            return NULL;
        }
        return *heap;
    }
    return U_FAILURE(status) ? NULL : stack;
}

// Each thread keeps the sort keys of the short strings it collated last: view
// keys repeat (types, states, dates), and ICU's sort key costs many times a
// hash and a memcmp. Direct-mapped, one slot per hash; ~100 KB a thread.
enum { CACHE_SLOTS = 1024, CACHE_TEXT = 32, CACHE_KEY = 64 };

typedef struct {
    uint8_t textLength; // 0: empty slot (the empty string is not cached)
    uint8_t keyLength;
    char text[CACHE_TEXT];
    uint8_t key[CACHE_KEY];
} CachedSortKey;

static pthread_key_t cacheKey;
static pthread_once_t cacheOnce = PTHREAD_ONCE_INIT;
static int cacheKeyMade;

static void makeCacheKey(void) {
    cacheKeyMade = pthread_key_create(&cacheKey, free) == 0;
}

static CachedSortKey *threadCache(void) {
    pthread_once(&cacheOnce, makeCacheKey);
    if (!cacheKeyMade) return NULL;
    CachedSortKey *cache = pthread_getspecific(cacheKey);
    if (!cache) {
        cache = calloc(CACHE_SLOTS, sizeof(CachedSortKey));
        if (cache && pthread_setspecific(cacheKey, cache) != 0) {
            free(cache);
            cache = NULL;
        }
    }
    return cache;
}

static uint32_t slotOf(const char *text, size_t length) {
    // FNV-1a
    uint64_t hash = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < length; i++) hash = (hash ^ (uint8_t)text[i]) * 0x100000001b3ULL;
    return (uint32_t)(hash ^ (hash >> 32)) & (CACHE_SLOTS - 1);
}

static int32_t icuSortKey(const char *text, size_t length, uint8_t *out, int32_t capacity);
static int32_t asciiSortKey(const char *text, size_t length, uint8_t *key);

// Copies a key made here into `out` as ICU would: the key and a zero byte when
// they fit, the key's length either way.
static int32_t deliver(const uint8_t *key, int32_t keyLength, uint8_t *out, int32_t capacity) {
    if (keyLength < capacity) {
        memcpy(out, key, (size_t)keyLength);
        out[keyLength] = 0;
    }
    return keyLength;
}

enum { ASCII_MAX_LENGTH = 64, ASCII_KEY_CAPACITY = 4 * ASCII_MAX_LENGTH + 16 };

int32_t settee_collation_sort_key(const char *text, size_t length, uint8_t *out, int32_t capacity) {
    if (length > 0 && length <= ASCII_MAX_LENGTH && settee_collation_ascii_table_ready()) {
        uint8_t key[ASCII_KEY_CAPACITY];
        int32_t keyLength = asciiSortKey(text, length, key);
        if (keyLength >= 0) return deliver(key, keyLength, out, capacity);
    }
    if (length == 0 || length > CACHE_TEXT) return icuSortKey(text, length, out, capacity);
    CachedSortKey *cache = threadCache();
    if (!cache) return icuSortKey(text, length, out, capacity);
    CachedSortKey *slot = &cache[slotOf(text, length)];
    if (slot->textLength == length && memcmp(slot->text, text, length) == 0) {
        return deliver(slot->key, slot->keyLength, out, capacity);
    }
    int32_t written = icuSortKey(text, length, out, capacity);
    if (written >= 0 && written < capacity && written <= CACHE_KEY) {
        slot->textLength = (uint8_t)length;
        slot->keyLength = (uint8_t)written;
        memcpy(slot->text, text, length);
        memcpy(slot->key, out, (size_t)written);
    }
    return written;
}

int32_t settee_collation_icu_sort_key(const char *text, size_t length, uint8_t *out, int32_t capacity) {
    return icuSortKey(text, length, out, capacity);
}

// ASCII text made of characters that each have one collation element — a
// primary weight of one or two bytes, the common secondary weight, and the
// common tertiary weight or one above it (uppercase) — has a sort key made
// from a table, at a fraction of ICU's cost: the primaries, then the
// secondary level (all common: one run, compressed), then the tertiary level
// (runs of common weights compressed as ICU's CollationKeys does), each level
// after a 01 separator. The table comes from ICU's own keys of each character,
// and is used only once the keys of every pair of its characters, and of long
// runs, came out exactly as ICU's.
typedef struct {
    uint8_t primary[2];
    uint8_t primaryLength; // 0: not in the table (ICU makes the key)
    uint8_t tertiary;
} AsciiWeights;

static AsciiWeights asciiTable[128];
static int asciiTableReady;
static pthread_once_t asciiOnce = PTHREAD_ONCE_INIT;

// CollationKeys' compression of common weights (collationkeys.h): runs up to
// MAX_COUNT long become one byte counted up from LOW (before a lower weight or
// the level's end) or down from HIGH (before a higher one).
enum {
    COMMON_BYTE = 0x05,
    LEVEL_SEPARATOR = 0x01,
    SEC_COMMON_LOW = COMMON_BYTE,
    SEC_COMMON_MIDDLE = SEC_COMMON_LOW + 0x20,
    SEC_COMMON_MAX_COUNT = 0x21,
    TER_COMMON_LOW = COMMON_BYTE,
    TER_COMMON_MIDDLE = TER_COMMON_LOW + 0x60,
    TER_COMMON_HIGH = TER_COMMON_LOW + 0xC0,
    TER_COMMON_MAX_COUNT = 0x61,
};

// Writes a run of `count` (at least 1) common weights at `out`: a MIDDLE byte
// for each full MAX_COUNT, then one byte counted up from `low` (before a lower
// weight or the level's end) or down from `high` (before a higher one, when
// `high` is not 0). Returns the bytes written.
static size_t writeCommonRun(uint8_t *out, size_t count, size_t maxCount, uint8_t middle, uint8_t low, uint8_t high) {
    size_t n = 0, rest = count - 1;
    while (rest >= maxCount) {
        out[n++] = middle;
        rest -= maxCount;
    }
    out[n++] = (uint8_t)(high ? high - rest : low + rest);
    return n;
}

static int32_t asciiSortKey(const char *text, size_t length, uint8_t *key) {
    uint8_t tertiaries[2 * ASCII_MAX_LENGTH + 4];
    size_t k = 0, t = 0, commons = 0;
    for (size_t i = 0; i < length; i++) {
        uint8_t c = (uint8_t)text[i];
        if (c >= 128 || asciiTable[c].primaryLength == 0) return -1;
        const AsciiWeights *weights = &asciiTable[c];
        key[k++] = weights->primary[0];
        if (weights->primaryLength == 2) key[k++] = weights->primary[1];
        if (weights->tertiary == COMMON_BYTE) {
            commons++;
            continue;
        }
        if (commons > 0) {
            t += writeCommonRun(tertiaries + t, commons, TER_COMMON_MAX_COUNT, TER_COMMON_MIDDLE, TER_COMMON_LOW, TER_COMMON_HIGH);
            commons = 0;
        }
        tertiaries[t++] = weights->tertiary;
    }
    // Every secondary weight is common: one run, ended by the level.
    key[k++] = LEVEL_SEPARATOR;
    k += writeCommonRun(key + k, length, SEC_COMMON_MAX_COUNT, SEC_COMMON_MIDDLE, SEC_COMMON_LOW, 0);
    key[k++] = LEVEL_SEPARATOR;
    memcpy(key + k, tertiaries, t);
    k += t;
    if (commons > 0) k += writeCommonRun(key + k, commons, TER_COMMON_MAX_COUNT, TER_COMMON_MIDDLE, TER_COMMON_LOW, 0);
    return (int32_t)k;
}

// Whether the table's key of `text` is ICU's.
static int asciiKeyMatches(const char *text, size_t length) {
    uint8_t mine[ASCII_KEY_CAPACITY];
    uint8_t icu[ASCII_KEY_CAPACITY];
    int32_t mineLength = asciiSortKey(text, length, mine);
    int32_t icuLength = icuSortKey(text, length, icu, ASCII_KEY_CAPACITY);
    return mineLength >= 0 && mineLength == icuLength && memcmp(mine, icu, (size_t)mineLength) == 0;
}

static void buildAsciiTable(void) {
    if (settee_collation_initialize() != 0) return;
    for (int c = 0x20; c < 0x7F; c++) {
        char text = (char)c;
        uint8_t key[16];
        int32_t n = icuSortKey(&text, 1, key, sizeof key);
        // primary (1 or 2 bytes) ‖ 01 ‖ 05 ‖ 01 ‖ tertiary (05, or one byte above it)
        if (n != 5 && n != 6) continue;
        int primaryLength = n - 4;
        const uint8_t *rest = key + primaryLength;
        if (key[0] <= LEVEL_SEPARATOR || (primaryLength == 2 && key[1] <= LEVEL_SEPARATOR)) continue;
        if (rest[0] != LEVEL_SEPARATOR || rest[1] != COMMON_BYTE || rest[2] != LEVEL_SEPARATOR || rest[3] < COMMON_BYTE) continue;
        asciiTable[c] = (AsciiWeights){{key[0], primaryLength == 2 ? key[1] : 0}, (uint8_t)primaryLength, rest[3]};
    }
    // Every pair, and runs long enough to need several compression bytes.
    char text[ASCII_MAX_LENGTH];
    for (int a = 0; a < 128; a++) {
        if (!asciiTable[a].primaryLength) continue;
        for (int b = 0; b < 128; b++) {
            if (!asciiTable[b].primaryLength) continue;
            text[0] = (char)a;
            text[1] = (char)b;
            if (!asciiKeyMatches(text, 2)) return;
        }
    }
    const char *runs[] = {"a", "A", "aA", "Aa", "a-Z0"};
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        size_t unit = strlen(runs[r]);
        for (size_t length = 1; length <= ASCII_MAX_LENGTH; length++) {
            for (size_t i = 0; i < length; i++) text[i] = runs[r][i % unit];
            if (!asciiKeyMatches(text, length)) return;
        }
    }
    // A long common run, then one uppercase letter.
    for (size_t length = 1; length <= ASCII_MAX_LENGTH; length++) {
        for (size_t i = 0; i + 1 < length; i++) text[i] = 'a';
        text[length - 1] = 'A';
        if (!asciiKeyMatches(text, length)) return;
    }
    asciiTableReady = 1;
}

int32_t settee_collation_ascii_table_ready(void) {
    pthread_once(&asciiOnce, buildAsciiTable);
    return asciiTableReady;
}

static int32_t icuSortKey(const char *text, size_t length, uint8_t *out, int32_t capacity) {
    if (settee_collation_initialize() != 0) return -1;
    UChar stack[256];
    UChar *heap;
    int32_t utf16Length = 0;
    UChar *utf16 = toUTF16(text, length, stack, 256, &utf16Length, &heap);
    if (!utf16) return -1;
    // ICU writes a trailing zero byte, which Settee's encoding supplies itself.
    uint8_t scratch[1];
    int32_t needed = ucol_getSortKey(collator, utf16, utf16Length, capacity > 0 ? out : scratch, capacity > 0 ? capacity : 0);
    free(heap);
    if (needed <= 0) return -1;
    return needed - 1;
}

int32_t settee_collation_compare(const char *a, size_t a_length, const char *b, size_t b_length) {
    if (settee_collation_initialize() != 0) return 0;
    UErrorCode status = U_ZERO_ERROR;
    UCollationResult result = ucol_strcollUTF8(collator, a, (int32_t)a_length, b, (int32_t)b_length, &status);
    return (int32_t)result;
}

void settee_collation_versions(uint8_t library[4], uint8_t collator_version[4], uint8_t algorithm[4]) {
    UVersionInfo version;
    u_getVersion(version);
    memcpy(library, version, 4);
    memset(collator_version, 0, 4);
    memset(algorithm, 0, 4);
    if (settee_collation_initialize() != 0) return;
    ucol_getVersion(collator, version);
    memcpy(collator_version, version, 4);
    ucol_getUCAVersion(collator, version);
    memcpy(algorithm, version, 4);
}
