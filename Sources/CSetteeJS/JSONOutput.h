// Serialises JavaScript values to JSON text the way JSON.stringify does,
// straight from the engine's values into a byte buffer (no intermediate
// JavaScript string, no re-parse on the Swift side).
#pragma once

#include "SpiderMonkey.h"

#include <cstdint>
#include <string>
#include <vector>

namespace settee {

class ByteBuffer {
public:
    /// Empties the buffer; past 16 MiB its memory goes back too (a call that
    /// emitted a lot must not leave the worker holding it).
    void clear() {
        if (bytes_.capacity() > (16 << 20)) {
            std::vector<uint8_t>().swap(bytes_);
        } else {
            bytes_.clear();
        }
    }
    size_t size() const { return bytes_.size(); }
    const uint8_t *data() const { return bytes_.data(); }
    void truncate(size_t size) { bytes_.resize(size); }
    void append(const void *data, size_t length) {
        const uint8_t *p = static_cast<const uint8_t *>(data);
        bytes_.insert(bytes_.end(), p, p + length);
    }
    void append(char c) { bytes_.push_back(static_cast<uint8_t>(c)); }
    void append(const char *s) { append(s, strlen(s)); }
    void appendU32(uint32_t value) { append(&value, sizeof value); }
    void patchU32(size_t offset, uint32_t value) { memcpy(bytes_.data() + offset, &value, sizeof value); }
    /// Appends a u32 length followed by the bytes.
    void appendString(const char *s, size_t length) {
        appendU32(static_cast<uint32_t>(length));
        append(s, length);
    }

private:
    std::vector<uint8_t> bytes_;
};

/// Writes `value` as JSON into `out`. Returns false with a pending exception
/// (a TypeError for cycles or BigInt, as JSON.stringify throws) on failure.
/// `undefined`, functions and symbols become `null` at the top level.
/// `key` is what a `toJSON` method of `value` is passed, as JSON.stringify
/// passes its holder's key: the index of `value` in the array it is written
/// in (emit's key 0 and value 1, a reduce function's place among the
/// reductions), or "" when omitted (`value` at the top).
bool writeJSON(JSContext *cx, JS::HandleValue value, ByteBuffer &out);
bool writeJSON(JSContext *cx, JS::HandleValue value, ByteBuffer &out, uint32_t key);

/// Appends the UTF-8 form of a JavaScript string (lone surrogates become U+FFFD).
bool appendUTF8(JSContext *cx, JSString *string, std::string &out);

/// Converts UTF-8 to UTF-16 (invalid sequences become U+FFFD).
void utf8ToUTF16(const char *bytes, size_t length, std::vector<char16_t> &out);

}  // namespace settee
