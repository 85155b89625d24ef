import CSetteeJS
import Foundation
package import SetteeCore

/// The process-wide SpiderMonkey runtime: started once, shut down in order at exit
/// (each worker destroys its context on its own thread, then the engine stops).
package enum JavaScriptEngine {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var started = false
    nonisolated(unsafe) private static var workers: [ObjectIdentifier: Weak] = [:]

    private struct Weak {
        weak var worker: JavaScriptWorker?
    }

    /// Starts the engine if it is not running; registers the orderly shutdown.
    package static func start() throws(JavaScriptError) {
        lock.lock()
        defer { lock.unlock() }
        if started { return }
        guard settee_js_initialize() else {
            throw JavaScriptError(kind: .internal, message: "the JavaScript engine could not be initialised")
        }
        started = true
        atexit { JavaScriptEngine.shutDown() }
    }

    package static func register(_ worker: JavaScriptWorker) {
        lock.lock()
        workers[ObjectIdentifier(worker)] = Weak(worker: worker)
        lock.unlock()
    }

    package static func unregister(_ worker: JavaScriptWorker) {
        lock.lock()
        workers[ObjectIdentifier(worker)] = nil
        lock.unlock()
    }

    /// Without an orderly shutdown, SpiderMonkey often crashes at exit.
    private static func shutDown() {
        lock.lock()
        let live = workers.values.compactMap(\.worker)
        lock.unlock()
        for worker in live { worker.stop() }
        settee_js_shut_down()
    }
}
