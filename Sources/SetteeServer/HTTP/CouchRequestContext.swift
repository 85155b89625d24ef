import Hummingbird
import NIOCore

/// Hummingbird's request context, with the connection's channel: the one
/// request that must close its connection itself is a `CONNECT` (SwiftNIO
/// frames the answer to a CONNECT without a body length, so the client reads
/// until the connection closes).
struct CouchRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// The connection's channel.
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.channel = source.channel
    }
}
