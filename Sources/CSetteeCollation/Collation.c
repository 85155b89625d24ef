#include "settee_collation.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unicode/ucol.h>
#include <unicode/ustring.h>

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

int32_t settee_collation_sort_key(const char *text, size_t length, uint8_t *out, int32_t capacity) {
    if (length == 0 || length > CACHE_TEXT) return icuSortKey(text, length, out, capacity);
    CachedSortKey *cache = threadCache();
    if (!cache) return icuSortKey(text, length, out, capacity);
    CachedSortKey *slot = &cache[slotOf(text, length)];
    if (slot->textLength == length && memcmp(slot->text, text, length) == 0) {
        // As ICU: the key and a zero byte when they fit, the key's length either way.
        if (slot->keyLength < capacity) {
            memcpy(out, slot->key, slot->keyLength);
            out[slot->keyLength] = 0;
        }
        return slot->keyLength;
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
