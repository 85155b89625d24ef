import SetteeStorage

extension Database {
    /// Runs `body` with a batch whose writes commit in one transaction when it
    /// returns, or are all rolled back when it throws.
    ///
    /// ```swift
    /// try db.write { batch in
    ///     var ann = try batch.get("ann", as: Contact.self)!
    ///     ann.city = "Bergen"
    ///     try batch.save(&ann)
    ///     try batch.delete("old-ann")
    /// }
    /// ```
    ///
    /// Writes are serialised: other writers wait until the batch ends, while
    /// readers go on seeing the state before it. A conflict thrown by one of
    /// the batch's writes rolls everything back unless the closure catches it.
    ///
    /// `body` runs once. When the batch fills the memory map the database
    /// has (see ``Options/initialMapSize``), the map grows and the batch is
    /// rolled back with ``SetteeErrorCode/databaseGrew``, whether or not the
    /// closure caught the storage error its write threw: nothing was written,
    /// and running the batch again finds the room it needs. With the default
    /// map size this happens only once a database holds many gigabytes. A
    /// batch that writes design documents whose views would take the
    /// database past the indexes it can hold is rolled back with a
    /// ``DesignDocumentError``.
    @discardableResult
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func write<T>(_ body: (WriteBatch) throws -> T) throws -> T {
        try write(runsBodyOnce: true, body)
    }

    /// Runs `body` with a batch as ``write(_:)`` does; without
    /// `runsBodyOnce`, `body` runs again when the map grows (Settee's own
    /// writes, whose closures can).
    func write<T>(runsBodyOnce: Bool, _ body: (WriteBatch) throws -> T) throws -> T {
        var wroteDesignDocument = false
        let result = try store.writing(runsBodyOnce: runsBodyOnce) { transaction, countChange in
            let batch = try WriteBatch(store: store, transaction: transaction, coding: options.coding) { try $0.checkDesignDocument() }
            defer { batch.close() }
            let result: T
            do {
                result = try body(batch)
            } catch {
                throw batch.filledMap ?? error
            }
            // The closure caught the error of a write that filled the map: the transaction can only roll back.
            if let filledMap = batch.filledMap { throw filledMap }
            countChange = batch.countChange
            wroteDesignDocument = batch.wroteDesignDocument
            if wroteDesignDocument { try checkIndexLimit(written: batch.designDocumentIDs, in: transaction) }
            return result
        }
        if wroteDesignDocument { try removeUnusedIndexes() }
        return result
    }
}
