extension Array where Element == UInt8 {
    /// The bytes as lowercase hexadecimal, two digits each.
    package var hexString: String {
        String(unsafeUninitializedCapacity: count * 2) { output in
            let digits: StaticString = "0123456789abcdef"
            let digit = digits.utf8Start
            for (index, value) in enumerated() {
                output[index * 2] = digit[Int(value >> 4)]
                output[index * 2 + 1] = digit[Int(value & 0x0F)]
            }
            return count * 2
        }
    }
}
