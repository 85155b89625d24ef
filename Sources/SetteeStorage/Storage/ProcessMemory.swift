import Foundation
import SetteeCore

/// The process's heap, as bulk work leaves it.
package enum ProcessMemory {
    private typealias TrimFunction = @convention(c) (Int) -> Int32

    /// glibc's `malloc_trim`, where the C library has it.
    private static let trimFunction: TrimFunction? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return nil }
        return unsafeBitCast(symbol, to: TrimFunction.self)
    }()

    /// Hands the heap's free memory back to the system. A bulk import or index
    /// build frees its buffers at the end, but the C library keeps them for
    /// later allocations unless asked: the process would keep its peak size.
    package static func returnFreeMemory() {
        _ = trimFunction?(0)
    }
}
