import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypes

/// HTTP/1.1 connections whose requests must send their request line and
/// headers within a time limit, as mochiweb limits CouchDB's (30 seconds):
/// a client that starts a request and sends its head slowly, or not at all,
/// is cut off then, whatever the idle timeout.
///
/// The clock starts at the first bytes of a request and stops once its head
/// is read; a connection kept alive between requests is left to the idle
/// timeout.
struct HeaderTimedHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value

    let responder: HTTPChannelHandler.Responder
    let configuration: HTTP1Channel.Configuration
    let headerTimeout: TimeAmount

    /// HTTP/1.1 servers whose connections close after `idleTimeout` idle, or
    /// when a request's head takes longer than `headerTimeout`.
    static func builder(idleTimeout: Duration, headerTimeout: Duration) -> HTTPServerBuilder {
        func amount(_ duration: Duration) -> TimeAmount { .nanoseconds(Int64(duration / .nanoseconds(1))) }
        let configuration = HTTP1Channel.Configuration(idleTimeout: amount(idleTimeout))
        let headerTimeout = amount(headerTimeout)
        return HTTPServerBuilder { responder in
            HeaderTimedHTTP1Channel(responder: responder, configuration: configuration, headerTimeout: headerTimeout)
        }
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let timer = ConnectionWatch(timeout: headerTimeout)
        var configuration = self.configuration
        let additional = configuration.additionalChannelHandlers
        configuration.additionalChannelHandlers = { [ConnectionWatch.HeadWatch(timer: timer)] + additional() }
        let http1 = HTTP1Channel(responder: responder, configuration: configuration)
        return channel.eventLoop.makeCompletedFuture {
            // First in the pipeline: it sees the bytes before the HTTP decoder does.
            try channel.pipeline.syncOperations.addHandler(timer, position: .first)
        }.flatMap {
            http1.setup(channel: channel, logger: logger)
        }
    }

    func handle(value: Value, logger: Logger) async {
        await HTTP1Channel(responder: responder, configuration: configuration).handle(value: value, logger: logger)
    }
}

/// Watches one connection from the front of its pipeline: closes it when a
/// request's head takes longer than the timeout (the clock starts at the
/// first bytes of a request and stops when its ``HeadWatch``, after the
/// decoder, sees the head), and tells whoever asked (``whenInputClosed(_:)``)
/// that the client has closed its side: a feed waiting for changes then ends.
///
/// `@unchecked Sendable`: it is created, used and released on its
/// channel's event loop only.
final class ConnectionWatch: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let timeout: TimeAmount
    /// Between requests: the next bytes start a request and the clock.
    private var awaitingHead = true
    private var deadline: Scheduled<Void>?
    private var inputClosed = false
    private var onInputClosed: [@Sendable () -> Void] = []

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if awaitingHead, deadline == nil {
            let channel = context.channel
            deadline = context.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
        }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        closeInput()
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed { closeInput() }
        context.fireUserInboundEventTriggered(event)
    }

    /// Runs `action` (on the event loop) once the client has closed its side
    /// of the connection or the connection has closed; at once if it has.
    func whenInputClosed(_ action: @escaping @Sendable () -> Void) {
        if inputClosed { action() } else { onInputClosed.append(action) }
    }

    private func closeInput() {
        guard !inputClosed else { return }
        inputClosed = true
        let actions = onInputClosed
        onInputClosed = []
        for action in actions { action() }
    }

    /// Runs `action` once the client of `channel` has gone (closed its side
    /// of the connection, or the connection closed).
    static func whenClientGone(_ channel: any Channel, _ action: @escaping @Sendable () -> Void) {
        channel.closeFuture.whenComplete { _ in action() }
        channel.pipeline.handler(type: ConnectionWatch.self).whenSuccess { watch in watch.whenInputClosed(action) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stop()
    }

    /// A request's head was read: the clock stops until the request ends.
    fileprivate func headRead() {
        awaitingHead = false
        stop()
    }

    /// A request ended: the next bytes start the clock again.
    fileprivate func requestEnded() {
        awaitingHead = true
    }

    private func stop() {
        deadline?.cancel()
        deadline = nil
    }

    /// Tells its ``ConnectionWatch`` where requests' heads and ends are, as the
    /// HTTP decoder finds them.
    final class HeadWatch: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
        typealias InboundIn = HTTPRequestPart
        typealias InboundOut = HTTPRequestPart

        private let timer: ConnectionWatch

        init(timer: ConnectionWatch) {
            self.timer = timer
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head: timer.headRead()
            case .body: break
            case .end: timer.requestEnded()
            }
            context.fireChannelRead(data)
        }
    }
}
