import SetteeStorage

extension Database {
    /// Runs `body` with a batch whose writes commit in one transaction when it
    /// returns, or are all rolled back when it throws.
    ///
    /// ```swift
    /// try db.write { batch in
    ///     let ann = try batch.get("ann", as: Contact.self)!
    ///     try batch.put(ann.movingTo("Bergen"), id: "ann")
    ///     try batch.delete("old-ann", revision: nil)
    /// }
    /// ```
    ///
    /// Writes are serialised: other writers wait until the batch ends, while
    /// readers go on seeing the state before it. A conflict thrown by one of
    /// the batch's writes rolls everything back unless the closure catches it.
    /// `body` may run again when the database file has to grow mid-batch, so
    /// it should have no effects outside the batch that cannot be repeated.
    /// A batch that writes design documents whose views would take the
    /// database past the indexes it can hold is rolled back with a
    /// ``DesignDocumentError``.
    @discardableResult
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func write<T>(_ body: (WriteBatch) throws -> T) throws -> T {
        var wroteDesignDocument = false
        let result = try store.writing { transaction, countChange in
            let batch = try WriteBatch(store: store, transaction: transaction) { try $0.checkDesignDocument() }
            defer { batch.close() }
            let result = try body(batch)
            countChange = batch.countChange
            wroteDesignDocument = batch.wroteDesignDocument
            if wroteDesignDocument { try checkIndexLimit(written: batch.designDocumentIDs, in: transaction) }
            return result
        }
        if wroteDesignDocument { try removeUnusedIndexes() }
        return result
    }
}
