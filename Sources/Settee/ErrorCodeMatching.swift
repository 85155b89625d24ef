public import SetteeCore

/// Whether `error` is a ``SetteeError`` with the code `code`, so that a code
/// can be a `catch` pattern: `catch SetteeErrorCode.conflict { … }`.
///
/// A function of the library's module (not a member of ``SetteeErrorCode``)
/// so that `import Settee` alone brings it.
public func ~= (code: SetteeErrorCode, error: any Error) -> Bool {
    (error as? any SetteeError)?.errorCode == code
}
