// Settee's window on ICU's collation: the root collator CouchDB uses for view
// keys, behind a plain C header (no ICU types cross it).
#ifndef SETTEE_COLLATION_H
#define SETTEE_COLLATION_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The root collator with default (tertiary) strength, opened once per process.
/// Safe to use from any thread. Returns 0 on success, an ICU error code otherwise.
int32_t settee_collation_initialize(void);

/// Writes the ICU sort key of UTF-8 `text` (without ICU's trailing zero byte)
/// into `out`. Sort keys compare with memcmp exactly as the strings collate.
/// Returns the key's length. ICU needs one byte more than that in `out`: when the
/// result is not less than `capacity`, the key was truncated and the caller
/// retries with a buffer of at least the result + 1 bytes. Negative on error.
int32_t settee_collation_sort_key(const char *text, size_t length, uint8_t *out, int32_t capacity);

/// ICU's own sort key of `text`, as `settee_collation_sort_key` returns it
/// (which serves most ASCII keys from a table, and short strings from a
/// per-thread cache): what those are checked against.
int32_t settee_collation_icu_sort_key(const char *text, size_t length, uint8_t *out, int32_t capacity);
/// Whether the ASCII table is in use: it is built on first use, and only
/// used when its keys of every pair of its characters, and of long runs, are
/// exactly ICU's. 1 or 0.
int32_t settee_collation_ascii_table_ready(void);
/// Compares two UTF-8 strings with the root collator: negative, zero or positive.
int32_t settee_collation_compare(const char *a, size_t a_length, const char *b, size_t b_length);

/// ICU's library version, the root collator's version and the version of
/// the Unicode Collation Algorithm it implements, 4 bytes each (major first).
void settee_collation_versions(uint8_t library[4], uint8_t collator_version[4], uint8_t algorithm[4]);

#ifdef __cplusplus
}
#endif

#endif
