/// Decompression of zlib data (RFC 1950 around RFC 1951's deflate), for the
/// compressed Erlang terms of CouchDB's bookmarks: small inputs, read once,
/// so a plain decoder (after zlib's `puff.c`) without tables to build ahead.
enum Inflate {
    /// The bytes `data` (a zlib stream) holds; nil when it is not valid or
    /// would inflate beyond `expectedSize` bytes.
    static func zlib(_ data: [UInt8], expectedSize: Int) -> [UInt8]? {
        guard data.count >= 6, data[0] & 0x0F == 8, (Int(data[0]) << 8 | Int(data[1])) % 31 == 0, data[1] & 0x20 == 0 else { return nil }
        var state = State(input: Array(data.dropFirst(2)), limit: expectedSize)
        do {
            try state.run()
        } catch {
            return nil
        }
        return state.output
    }

    private struct Invalid: Error {}

    /// A canonical Huffman code: how many codes of each length, and the symbols in code order.
    private struct Huffman {
        var counts = [Int](repeating: 0, count: 16)
        var symbols: [Int]

        init?(lengths: [Int]) {
            symbols = [Int](repeating: 0, count: lengths.count)
            for length in lengths { counts[length] += 1 }
            if counts[0] == lengths.count { return } // no codes: fails when used
            var left = 1
            for length in 1..<16 {
                left = left * 2 - counts[length]
                if left < 0 { return nil } // over-subscribed
            }
            var offsets = [Int](repeating: 0, count: 16)
            for length in 1..<15 { offsets[length + 1] = offsets[length] + counts[length] }
            for (symbol, length) in lengths.enumerated() where length != 0 {
                symbols[offsets[length]] = symbol
                offsets[length] += 1
            }
        }
    }

    private static let lengthBase = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258]
    private static let lengthExtra = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]
    private static let distanceBase = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073,
                                       4097, 6145, 8193, 12289, 16385, 24577]
    private static let distanceExtra = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13]
    private static let fixed: (Huffman, Huffman) = {
        var lengths = [Int](repeating: 8, count: 288)
        for symbol in 144..<256 { lengths[symbol] = 9 }
        for symbol in 256..<280 { lengths[symbol] = 7 }
        return (Huffman(lengths: lengths)!, Huffman(lengths: [Int](repeating: 5, count: 30))!)
    }()

    private struct State {
        let input: [UInt8]
        let limit: Int
        var position = 0
        var bitBuffer = 0
        var bitCount = 0
        var output: [UInt8] = []

        mutating func bits(_ count: Int) throws -> Int {
            var value = bitBuffer
            while bitCount < count {
                guard position < input.count else { throw Invalid() }
                value |= Int(input[position]) << bitCount
                position += 1
                bitCount += 8
            }
            bitBuffer = value >> count
            bitCount -= count
            return value & ((1 << count) - 1)
        }

        mutating func run() throws {
            var last = false
            while !last {
                last = try bits(1) == 1
                switch try bits(2) {
                case 0: try stored()
                case 1: try codes(Inflate.fixed.0, Inflate.fixed.1)
                case 2: try dynamic()
                default: throw Invalid()
                }
            }
        }

        mutating func stored() throws {
            bitBuffer = 0
            bitCount = 0
            guard position + 4 <= input.count else { throw Invalid() }
            let length = Int(input[position]) | Int(input[position + 1]) << 8
            let complement = Int(input[position + 2]) | Int(input[position + 3]) << 8
            position += 4
            guard length == ~complement & 0xFFFF, position + length <= input.count, output.count + length <= limit else { throw Invalid() }
            output += input[position..<(position + length)]
            position += length
        }

        mutating func decode(_ code: Huffman) throws -> Int {
            var code_ = 0, first = 0, index = 0
            for length in 1..<16 {
                code_ |= try bits(1)
                let count = code.counts[length]
                if code_ - count < first { return code.symbols[index + (code_ - first)] }
                index += count
                first = (first + count) << 1
                code_ <<= 1
            }
            throw Invalid()
        }

        mutating func codes(_ lengths: Huffman, _ distances: Huffman) throws {
            while true {
                let symbol = try decode(lengths)
                if symbol < 256 {
                    guard output.count < limit else { throw Invalid() }
                    output.append(UInt8(symbol))
                } else if symbol == 256 {
                    return
                } else {
                    let lengthSymbol = symbol - 257
                    guard lengthSymbol < 29 else { throw Invalid() }
                    let length = Inflate.lengthBase[lengthSymbol] + (try bits(Inflate.lengthExtra[lengthSymbol]))
                    let distanceSymbol = try decode(distances)
                    guard distanceSymbol < 30 else { throw Invalid() }
                    let distance = Inflate.distanceBase[distanceSymbol] + (try bits(Inflate.distanceExtra[distanceSymbol]))
                    guard distance <= output.count, output.count + length <= limit else { throw Invalid() }
                    for _ in 0..<length { output.append(output[output.count - distance]) }
                }
            }
        }

        mutating func dynamic() throws {
            let lengthCount = try bits(5) + 257, distanceCount = try bits(5) + 1, codeCount = try bits(4) + 4
            guard lengthCount <= 286, distanceCount <= 30 else { throw Invalid() }
            let order = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]
            var codeLengths = [Int](repeating: 0, count: 19)
            for index in 0..<codeCount { codeLengths[order[index]] = try bits(3) }
            guard let lengthCode = Huffman(lengths: codeLengths) else { throw Invalid() }
            var lengths: [Int] = []
            while lengths.count < lengthCount + distanceCount {
                let symbol = try decode(lengthCode)
                if symbol < 16 {
                    lengths.append(symbol)
                    continue
                }
                var repeated = 0, times: Int
                switch symbol {
                case 16:
                    guard let previous = lengths.last else { throw Invalid() }
                    repeated = previous
                    times = 3 + (try bits(2))
                case 17: times = 3 + (try bits(3))
                default: times = 11 + (try bits(7))
                }
                guard lengths.count + times <= lengthCount + distanceCount else { throw Invalid() }
                lengths += [Int](repeating: repeated, count: times)
            }
            guard lengths[256] != 0, let literals = Huffman(lengths: Array(lengths[..<lengthCount])),
                  let distances = Huffman(lengths: Array(lengths[lengthCount...])) else { throw Invalid() }
            try codes(literals, distances)
        }
    }
}
