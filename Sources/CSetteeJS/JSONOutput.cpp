#include "JSONOutput.h"

#include <cmath>
#include <cstdio>
#include <cstring>

namespace settee {

namespace {

// Deep enough for any real key or value; shallow enough that the native stack
// (bounded by the worker thread's size) never overflows while we recurse. The
// same as Settee's JSON parser (JSONParser.defaultMaximumDepth): a deeper value
// is refused here, as that doc's error, rather than by the index it cannot enter.
constexpr size_t kMaximumDepth = 1000;

const char kHex[] = "0123456789abcdef";

inline void appendEscapedUnit(ByteBuffer &out, char16_t c) {
    switch (c) {
        case '"': out.append("\\\"", 2); return;
        case '\\': out.append("\\\\", 2); return;
        case '\b': out.append("\\b", 2); return;
        case '\f': out.append("\\f", 2); return;
        case '\n': out.append("\\n", 2); return;
        case '\r': out.append("\\r", 2); return;
        case '\t': out.append("\\t", 2); return;
        default: {
            char buf[6] = {'\\', 'u', kHex[(c >> 12) & 0xF], kHex[(c >> 8) & 0xF], kHex[(c >> 4) & 0xF],
                           kHex[c & 0xF]};
            out.append(buf, 6);
        }
    }
}

inline bool needsEscape(uint32_t c) { return c < 0x20 || c == '"' || c == '\\'; }

template <typename Char>
void appendQuoted(ByteBuffer &out, const Char *chars, size_t length) {
    out.append('"');
    size_t i = 0;
    while (i < length) {
        uint32_t c = chars[i];
        if (c < 0x80) {
            // Copy runs of plain ASCII in one go.
            size_t start = i;
            while (i < length && chars[i] < 0x80 && !needsEscape(chars[i])) i++;
            if (i > start) {
                if constexpr (sizeof(Char) == 1) {
                    out.append(chars + start, i - start);
                } else {
                    for (size_t j = start; j < i; j++) out.append(static_cast<char>(chars[j]));
                }
                continue;
            }
            appendEscapedUnit(out, static_cast<char16_t>(c));
            i++;
            continue;
        }
        uint8_t buf[4];
        if (c < 0x800) {
            buf[0] = 0xC0 | (c >> 6);
            buf[1] = 0x80 | (c & 0x3F);
            out.append(buf, 2);
            i++;
            continue;
        }
        if (c >= 0xD800 && c <= 0xDFFF) {
            // A valid pair becomes one code point; a lone surrogate is escaped,
            // as the well-formed JSON.stringify does.
            if (c <= 0xDBFF && i + 1 < length && chars[i + 1] >= 0xDC00 && chars[i + 1] <= 0xDFFF) {
                uint32_t cp = 0x10000 + ((c - 0xD800) << 10) + (chars[i + 1] - 0xDC00);
                buf[0] = 0xF0 | (cp >> 18);
                buf[1] = 0x80 | ((cp >> 12) & 0x3F);
                buf[2] = 0x80 | ((cp >> 6) & 0x3F);
                buf[3] = 0x80 | (cp & 0x3F);
                out.append(buf, 4);
                i += 2;
                continue;
            }
            appendEscapedUnit(out, static_cast<char16_t>(c));
            i++;
            continue;
        }
        buf[0] = 0xE0 | (c >> 12);
        buf[1] = 0x80 | ((c >> 6) & 0x3F);
        buf[2] = 0x80 | (c & 0x3F);
        out.append(buf, 3);
        i++;
    }
    out.append('"');
}

bool appendJSString(JSContext *cx, JSString *string, ByteBuffer &out) {
    size_t length = 0;
    JS::AutoCheckCannotGC nogc;
    if (JS::StringHasLatin1Chars(string)) {
        const JS::Latin1Char *chars = JS_GetLatin1StringCharsAndLength(cx, nogc, string, &length);
        if (!chars) return false;
        appendQuoted(out, chars, length);
    } else {
        const char16_t *chars = JS_GetTwoByteStringCharsAndLength(cx, nogc, string, &length);
        if (!chars) return false;
        appendQuoted(out, chars, length);
    }
    return true;
}

void appendNumber(ByteBuffer &out, double d) {
    if (!std::isfinite(d)) {
        out.append("null", 4);
        return;
    }
    // Integers (the common case) without the general conversion.
    if (d >= -9007199254740992.0 && d <= 9007199254740992.0 && d == std::trunc(d)) {
        char buf[24];
        int n = snprintf(buf, sizeof buf, "%lld", static_cast<long long>(d));
        out.append(buf, n);
        return;
    }
    char buf[JS::MaximumNumberToStringLength];
    JS::NumberToString(d, buf);
    out.append(buf, strlen(buf));
}

class Writer {
public:
    Writer(JSContext *cx, ByteBuffer &out) : cx_(cx), out_(out), stack_(cx) {}

    // Returns false with an exception pending. `omit` is set when the value is
    // one JSON.stringify leaves out (undefined, functions, symbols). `key` is
    // the value's key in its holder, passed to its toJSON; `replaced`: the
    // value is what a toJSON returned, whose own toJSON is not called.
    bool write(JS::HandleValue value, bool &omit, JS::HandleValue key, bool replaced = false) {
        omit = false;
        if (value.isString()) return appendJSString(cx_, value.toString(), out_);
        if (value.isInt32()) {
            char buf[16];
            int n = snprintf(buf, sizeof buf, "%d", value.toInt32());
            out_.append(buf, n);
            return true;
        }
        if (value.isDouble()) {
            appendNumber(out_, value.toDouble());
            return true;
        }
        if (value.isBoolean()) {
            if (value.toBoolean()) out_.append("true", 4); else out_.append("false", 5);
            return true;
        }
        if (value.isNull()) {
            out_.append("null", 4);
            return true;
        }
        if (value.isBigInt()) {
            JS_ReportErrorASCII(cx_, "BigInt value can't be serialized in JSON");
            return false;
        }
        if (!value.isObject()) {  // undefined, symbol
            omit = true;
            return true;
        }
        JS::RootedObject object(cx_, &value.toObject());
        if (JS::IsCallable(object)) {
            omit = true;
            return true;
        }
        // An object's toJSON (Date has one) decides its JSON form, called with
        // the value's key, as in JSON.stringify (SerializeJSONProperty): once,
        // not again on what it returns.
        if (!replaced) {
            JS::RootedValue toJSON(cx_);
            if (!JS_GetProperty(cx_, object, "toJSON", &toJSON)) return false;
            if (toJSON.isObject() && JS::IsCallable(&toJSON.toObject())) {
                JS::RootedString keyString(cx_, JS::ToString(cx_, key));
                if (!keyString) return false;
                JS::RootedValue keyArgument(cx_, JS::StringValue(keyString));
                JS::RootedValue result(cx_);
                if (!JS::Call(cx_, value, toJSON, JS::HandleValueArray(keyArgument), &result)) return false;
                return write(result, omit, key, true);
            }
        }
        js::ESClass cls;
        if (!JS::GetBuiltinClass(cx_, object, &cls)) return false;
        switch (cls) {
            case js::ESClass::Number: {
                double d;
                if (!JS::ToNumber(cx_, value, &d)) return false;
                appendNumber(out_, d);
                return true;
            }
            case js::ESClass::String: {
                JS::RootedString s(cx_, JS::ToString(cx_, value));
                if (!s) return false;
                return appendJSString(cx_, s, out_);
            }
            case js::ESClass::Boolean: {
                JS::RootedValue unboxed(cx_);
                if (!JS_CallFunctionName(cx_, object, "valueOf", JS::HandleValueArray::empty(), &unboxed)) return false;
                out_.append(JS::ToBoolean(unboxed) ? "true" : "false");
                return true;
            }
            case js::ESClass::BigInt:
                JS_ReportErrorASCII(cx_, "BigInt value can't be serialized in JSON");
                return false;
            default:
                break;
        }
        for (size_t i = 0; i < stack_.length(); i++) {
            if (stack_[i] == object) {
                JS_ReportErrorASCII(cx_, "cyclic object value");
                return false;
            }
        }
        if (stack_.length() >= kMaximumDepth) {
            JS_ReportErrorASCII(cx_, "too much recursion: value nested deeper than %zu levels", kMaximumDepth);
            return false;
        }
        if (!stack_.append(object)) return false;
        bool isArray = false;
        if (!JS::IsArrayObject(cx_, object, &isArray)) return false;
        bool ok = isArray ? writeArray(object) : writeObject(object);
        stack_.popBack();
        return ok;
    }

private:
    bool writeArray(JS::HandleObject array) {
        uint32_t length = 0;
        if (!JS::GetArrayLength(cx_, array, &length)) return false;
        out_.append('[');
        JS::RootedValue element(cx_);
        JS::RootedValue index(cx_);
        for (uint32_t i = 0; i < length; i++) {
            if (i > 0) out_.append(',');
            if (!JS_GetElement(cx_, array, i, &element)) return false;
            bool omit;
            index.setNumber(i);
            if (!write(element, omit, index)) return false;
            if (omit) out_.append("null", 4);
        }
        out_.append(']');
        return true;
    }

    bool writeObject(JS::HandleObject object) {
        JS::Rooted<JS::IdVector> ids(cx_, JS::IdVector(cx_));
        if (!JS_Enumerate(cx_, object, &ids)) return false;
        out_.append('{');
        bool first = true;
        JS::RootedValue member(cx_);
        JS::RootedId id(cx_);
        JS::RootedValue idValue(cx_);
        for (size_t i = 0; i < ids.length(); i++) {
            id = ids[i];
            if (id.isSymbol()) continue;
            if (!JS_GetPropertyById(cx_, object, id, &member)) return false;
            size_t mark = out_.size();
            if (!first) out_.append(',');
            if (id.isString()) {
                if (!appendJSString(cx_, id.toString(), out_)) return false;
            } else {
                if (!JS_IdToValue(cx_, id, &idValue)) return false;
                JS::RootedString key(cx_, JS::ToString(cx_, idValue));
                if (!key || !appendJSString(cx_, key, out_)) return false;
            }
            out_.append(':');
            bool omit;
            if (!JS_IdToValue(cx_, id, &idValue)) return false;
            if (!write(member, omit, idValue)) return false;
            if (omit) {
                out_.truncate(mark);
                continue;
            }
            first = false;
        }
        out_.append('}');
        return true;
    }

    JSContext *cx_;
    ByteBuffer &out_;
    JS::RootedVector<JSObject *> stack_;
};

}  // namespace

static bool writeJSON(JSContext *cx, JS::HandleValue value, ByteBuffer &out, JS::HandleValue key) {
    Writer writer(cx, out);
    bool omit = false;
    size_t mark = out.size();
    if (!writer.write(value, omit, key)) {
        out.truncate(mark);
        return false;
    }
    if (omit) out.append("null", 4);
    return true;
}

bool writeJSON(JSContext *cx, JS::HandleValue value, ByteBuffer &out) {
    JS::RootedValue key(cx, JS_GetEmptyStringValue(cx));
    return writeJSON(cx, value, out, key);
}

bool writeJSON(JSContext *cx, JS::HandleValue value, ByteBuffer &out, uint32_t key) {
    JS::RootedValue keyValue(cx, JS::NumberValue(key));
    return writeJSON(cx, value, out, keyValue);
}

bool appendUTF8(JSContext *cx, JSString *string, std::string &out) {
    JS::UniqueChars chars = JS_EncodeStringToUTF8(cx, JS::RootedString(cx, string));
    if (!chars) return false;
    out.append(chars.get());
    return true;
}

void utf8ToUTF16(const char *bytes, size_t length, std::vector<char16_t> &out) {
    out.clear();
    out.reserve(length);
    const uint8_t *s = reinterpret_cast<const uint8_t *>(bytes);
    size_t i = 0;
    while (i < length) {
        uint8_t b = s[i];
        if (b < 0x80) {
            out.push_back(b);
            i++;
            continue;
        }
        uint32_t cp = 0xFFFD;
        size_t need = 0;
        if (b >= 0xC2 && b <= 0xDF) { cp = b & 0x1F; need = 1; }
        else if (b >= 0xE0 && b <= 0xEF) { cp = b & 0x0F; need = 2; }
        else if (b >= 0xF0 && b <= 0xF4) { cp = b & 0x07; need = 3; }
        if (need == 0 || i + need >= length) {
            out.push_back(0xFFFD);
            i++;
            continue;
        }
        bool valid = true;
        for (size_t k = 1; k <= need; k++) {
            if ((s[i + k] & 0xC0) != 0x80) { valid = false; break; }
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (!valid || (need == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
            (need == 3 && (cp < 0x10000 || cp > 0x10FFFF))) {
            out.push_back(0xFFFD);
            i++;
            continue;
        }
        if (cp >= 0x10000) {
            cp -= 0x10000;
            out.push_back(static_cast<char16_t>(0xD800 + (cp >> 10)));
            out.push_back(static_cast<char16_t>(0xDC00 + (cp & 0x3FF)));
        } else {
            out.push_back(static_cast<char16_t>(cp));
        }
        i += need + 1;
    }
}

}  // namespace settee
