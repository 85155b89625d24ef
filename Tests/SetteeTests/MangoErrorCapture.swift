import Testing
import Settee

/// The `MangoError` `body` throws, or nil when it throws none; any other
/// error is recorded as an issue.
func mangoError(_ body: () throws -> Void) -> MangoError? {
    do {
        try body()
        return nil
    } catch let error as MangoError {
        return error
    } catch {
        Issue.record(error)
        return nil
    }
}
