import SetteeFind

extension Database {
    /// `request` prepared for `find` over the current indexes: as kept from an
    /// earlier request like it while the indexes are the same, else made and kept.
    func prepared(_ request: FindRequest, databaseIsPartitioned: Bool) throws -> PreparedFind {
        let (indexes, generation) = try findIndexList()
        let key = FindPlanCache.Key(request, databaseIsPartitioned: databaseIsPartitioned)
        if let prepared = findPlans.prepared(key, generation: generation) { return prepared }
        // A request of a shape planned before: its selector compiled, the plan's index kept.
        let shape = FindPlanCache.Key(request, databaseIsPartitioned: databaseIsPartitioned, shape: true)
        if let template = findPlans.prepared(shape: shape, generation: generation),
           let prepared = try PreparedFind(request, shapedAs: template, databaseIsPartitioned: databaseIsPartitioned) {
            findPlans.keep(prepared, for: key, generation: generation)
            return prepared
        }
        let prepared = try PreparedFind(request, indexes: indexes, databaseIsPartitioned: databaseIsPartitioned)
        findPlans.keep(prepared, for: key, shape: prepared.isReusable(over: indexes) ? shape : nil, generation: generation)
        return prepared
    }
}
