#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#else
import Darwin
#endif

extension JSONLexer {
    /// Moves past the value at `position` (after optional whitespace) in text
    /// known to be valid JSON — a stored document, validated when it was
    /// written — without validating it again: a string is passed by
    /// searching for its closing quote (`memchr`, many bytes at a time), a
    /// container by counting brackets outside its strings, a number or
    /// literal by finding the byte that ends it. On text that is not valid
    /// JSON it stops somewhere, never past the end.
    package mutating func skipValidValue() {
        skipWhitespace()
        var depth = 0
        while position < count {
            switch byte(at: position) {
            case UInt8(ascii: "\""):
                skipValidString()
                if depth == 0 { return }
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth &+= 1
                position &+= 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                // A closing bracket at depth 0 ends the enclosing container, not this value.
                if depth == 0 { return }
                depth &-= 1
                position &+= 1
                if depth == 0 { return }
            case UInt8(ascii: ","), UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"):
                if depth == 0 { return }
                position &+= 1
            default:
                // Inside a number or literal (or between a container's members).
                position &+= 1
            }
        }
    }

    /// Moves past the string whose opening quote is at `position`, in valid
    /// JSON text: to just after the first quote not escaped by a backslash.
    @inline(__always)
    package mutating func skipValidString() {
        let opening = position
        var index = position &+ 1
        while index < count {
            guard let found = memchr(base + index, Int32(UInt8(ascii: "\"")), count &- index) else { break }
            let quote = UnsafeRawPointer(found) - base
            // Escaped when an odd number of backslashes come right before it.
            var backslashes = 0
            while quote &- backslashes &- 1 > opening && byte(at: quote &- backslashes &- 1) == UInt8(ascii: "\\") {
                backslashes &+= 1
            }
            index = quote &+ 1
            if backslashes & 1 == 0 {
                position = index
                return
            }
        }
        position = count
    }
}
