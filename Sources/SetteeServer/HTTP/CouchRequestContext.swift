public import Hummingbird
public import NIOCore

/// A Hummingbird request context that can carry CouchDB's API: an
/// application that mounts ``SetteeServer/routes(context:)`` next to its own
/// routes gives its context a ``CouchContextStorage``.
///
/// ```swift
/// struct AppContext: CouchRequestContext {
///     var coreContext: CoreRequestContextStorage
///     var couch: CouchContextStorage
///     init(source: ApplicationRequestContextSource) {
///         coreContext = .init(source: source)
///         couch = CouchContextStorage(channel: source.channel)
///     }
/// }
/// ```
public protocol CouchRequestContext: RequestContext {
    /// What the CouchDB API keeps of a request: its connection and who made it.
    var couch: CouchContextStorage { get set }
}

/// What the CouchDB API keeps in a request's context: the connection it came
/// on (a waiting feed ends, and a request's work is called off, when it
/// closes) and, once the authentication middleware has run, who made it.
public struct CouchContextStorage: Sendable {
    /// The connection's channel; nil where there is none (a request made in
    /// process): its work then runs to its end whatever the client does.
    public let channel: (any Channel)?
    /// Set by the authentication middleware.
    var authentication: Authentication?

    /// Storage for a request that came on `channel`.
    public init(channel: (any Channel)?) {
        self.channel = channel
    }

    /// The client's address (`req.peer` in design functions).
    var peer: String { channel?.remoteAddress?.ipAddress ?? "127.0.0.1" }
}

/// The request context of `settee serve`.
public struct BasicCouchRequestContext: CouchRequestContext {
    public var coreContext: CoreRequestContextStorage
    public var couch: CouchContextStorage

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.couch = CouchContextStorage(channel: source.channel)
    }
}
