import SetteeCore
import SetteeStorage
import SetteeViews

extension Database {
    // MARK: Views written in Swift

    /// Registers a view written in Swift on this database instance: from now
    /// on, ``query(_:options:progress:)-1cn0a``, ``forEachRow(_:options:progress:header:_:)-97thd``,
    /// ``liveQuery(_:options:)``, ``updateIndexes(progress:)-4jkoo`` and ``viewInfo()-4s1yx``
    /// know it by its name (a name without `/`, which design documents'
    /// views, named `DDOC/VIEW`, never have). Its index is stored in the
    /// database like a JavaScript view's, and built on its first query.
    ///
    /// The registration lives in memory, as Couchbase Lite's map blocks do:
    /// register the view each time the database is opened. The stored index
    /// stays meanwhile, whatever other processes do (they keep the indexes
    /// of Swift views they do not know), so a registration with the same
    /// name and ``Indexer/version`` finds it built. It goes when this
    /// database, or another process's, registers the name with another
    /// version (the index is built again, for this view alone), or with
    /// ``removeUnregisteredIndexes()-5gbo2``.
    ///
    /// ```swift
    /// try db.register(ByType())
    /// let rows = try db.query("by_type", options: ViewQueryOptions(parameters: [("reduce", "false")])).rows
    /// ```
    ///
    /// - Throws: ``DocumentError``: `bad_request` for an empty name, a name
    ///   with `/`, or an unknown built-in reduce function; `conflict` when a
    ///   view of this name is already registered (``unregister(_:)`` it first).
    public func register(_ indexer: some Indexer) throws {
        _ = try swiftViews.register(indexer)
    }

    /// Forgets the view written in Swift named `name` on this instance (its
    /// stored index stays: see ``register(_:)``). Returns whether one was registered.
    @discardableResult
    public func unregister(_ name: String) -> Bool {
        swiftViews.unregister(name)
    }

    /// The views written in Swift registered on this instance, by name.
    public var registeredViews: [ViewDefinition] { swiftViews.all }

    /// Removes the stored indexes of views written in Swift that are not
    /// registered on this instance now (their space is reused; registering
    /// one of them again builds its index afresh). Indexes of design
    /// documents' views are not touched.
    @available(*, noasync, message: "use the async form (await it) so that the work leaves the cooperative thread pool")
    public func removeUnregisteredIndexes() throws {
        let registered = Set(swiftViews.all.map(\.signature))
        try removeIndexes { signature, state in state.designDocument.isEmpty && !registered.contains(signature) }
    }

    /// Removes the stored indexes of unregistered views written in Swift, on
    /// a Settee queue (see ``removeUnregisteredIndexes()``).
    public func removeUnregisteredIndexes() async throws {
        try await background { try self.removeUnregisteredIndexes() }
    }
}
