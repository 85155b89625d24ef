package import CSetteeJS
package import SetteeCore

extension JavaScriptError.Kind {
    package init(status: UInt32) {
        switch settee_js_status(rawValue: status) {
        case SETTEE_JS_COMPILE_ERROR: self = .compile
        case SETTEE_JS_RUNTIME_ERROR: self = .runtime
        case SETTEE_JS_TIMEOUT: self = .timeout
        case SETTEE_JS_OUT_OF_MEMORY: self = .outOfMemory
        case SETTEE_JS_INVALID_INPUT: self = .invalidInput
        case SETTEE_JS_INTERRUPTED: self = .interrupted
        default: self = .internal
        }
    }
}

extension JavaScriptError {
    package init(_ error: settee_js_error) {
        func text(_ pointer: UnsafePointer<CChar>?, _ length: Int) -> String {
            guard let pointer, length > 0 else { return "" }
            return String(decoding: UnsafeRawBufferPointer(start: pointer, count: length), as: UTF8.self)
        }
        self.init(
            kind: Kind(status: error.status.rawValue),
            message: text(error.message, error.message_length),
            line: error.line > 0 ? Int(error.line) : nil,
            column: error.column > 0 ? Int(error.column) : nil,
            stack: text(error.stack, error.stack_length))
    }
}
