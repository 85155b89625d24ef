import Synchronization

/// The view indexes last found up to date, and the last committed write
/// transaction when they were: while no write has been committed since (in
/// any process), they still are, and a query needs no look at their states.
final class FreshIndexes: Sendable {
    private let state = Mutex<(transaction: Int, signatures: Set<String>)>((-1, []))

    /// Whether every index of `signatures` was found up to date with nothing
    /// committed since `transaction` was the last committed write transaction.
    func areFresh(_ signatures: some Sequence<String>, at transaction: Int) -> Bool {
        state.withLock { state in
            state.transaction == transaction && signatures.allSatisfy { state.signatures.contains($0) }
        }
    }

    /// Records that the indexes of `signatures` were up to date when
    /// `transaction` was the last committed write transaction (read before
    /// their states were).
    func record(_ signatures: some Sequence<String>, at transaction: Int) {
        state.withLock { state in
            if state.transaction != transaction { state = (transaction, []) }
            state.signatures.formUnion(signatures)
        }
    }
}
