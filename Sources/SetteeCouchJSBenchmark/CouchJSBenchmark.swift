import Foundation
import SetteeQueryServer
import Settee

/// `make bench-couchjs`: `settee couchjs` driven over its line protocol as
/// CouchDB drives it, lock-step (one command written, its answer read, then the
/// next): map_doc lines per second with one and with three map functions, and
/// reduce and rereduce calls per second.
@main
struct CouchJSBenchmark {
    static let mapFunctions = [
        "function (doc) { if (doc.type === 'order') emit([doc.customer, doc.date], doc.total); }",
        "function (doc) { emit(doc._id, null); }",
        "function (doc) { if (doc.tags) doc.tags.forEach(function (tag) { emit(tag, 1); }); }",
    ]

    static func main() throws {
        var documentCount = 100_000
        var reduceCalls = 20_000
        var settee = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("settee").path
        var arguments = CommandLine.arguments.dropFirst()
        while let argument = arguments.popFirst() {
            switch argument {
            case "--docs": documentCount = Int(arguments.popFirst() ?? "") ?? documentCount
            case "--reduce-calls": reduceCalls = Int(arguments.popFirst() ?? "") ?? reduceCalls
            case "--settee": settee = arguments.popFirst() ?? settee
            default:
                print("usage: SetteeCouchJSBenchmark [--docs N] [--reduce-calls N] [--settee PATH]")
                return
            }
        }
        let documents = (0..<documentCount).map(document)
        let averageBytes = documents.reduce(0) { $0 + $1.utf8.count } / max(documentCount, 1)
        print("settee couchjs, lock-step over pipes: \(documentCount) documents of \(averageBytes) bytes on average")
        let server = try QueryServerProcess(executable: settee)
        defer { server.close() }

        for functionCount in [1, 3] {
            _ = try server.ask(#"["reset",{"reduce_limit":true,"reduce_limit_threshold":5000,"reduce_limit_ratio":2,"timeout":5000}]"#)
            for source in mapFunctions.prefix(functionCount) {
                let answer = try server.ask(JSONValue.array(["add_fun", .string(source)]).jsonText)
                precondition(answer == "true", "add_fun failed: \(answer)")
            }
            let seconds = try measure {
                for document in documents {
                    let answer = try server.ask(#"["map_doc",\#(document)]"#)
                    precondition(answer.hasPrefix("[["), "map_doc failed: \(answer)")
                }
            }
            report("map_doc, \(functionCount) function\(functionCount == 1 ? "" : "s")", count: documentCount, seconds: seconds, unit: "docs")
        }

        let reduceSource = "function (keys, values, rereduce) { return sum(values); }"
        let rows = (0..<100).map { #"[[\#($0),"doc\#($0)"],\#($0 % 7)]"# }.joined(separator: ",")
        let reduceLine = #"["reduce",["\#(reduceSource)"],[\#(rows)]]"#
        let rereduceLine = #"["rereduce",["\#(reduceSource)"],[\#((0..<100).map(String.init).joined(separator: ","))]]"#
        for (name, line) in [("reduce, 100 rows", reduceLine), ("rereduce, 100 values", rereduceLine)] {
            let seconds = try measure {
                for _ in 0..<reduceCalls {
                    let answer = try server.ask(line)
                    precondition(answer.hasPrefix("[true,"), "\(name) failed: \(answer)")
                }
            }
            report(name, count: reduceCalls, seconds: seconds, unit: "calls")
        }
    }

    /// A generated document: an order or a customer, with tags (about 300 bytes).
    static func document(_ index: Int) -> String {
        let kinds = ["order", "customer", "order", "invoice"]
        let tags = ["red", "green", "blue", "amber", "violet"]
        let tagList = (0..<(index % 4)).map { #""\#(tags[(index + $0) % tags.count])""# }.joined(separator: ",")
        return #"{"_id":"doc-\#(index)","_rev":"1-\#(String(index * 2654435761 % 4294967296, radix: 16))","type":"\#(kinds[index % kinds.count])","customer":"customer-\#(index % 997)","date":"2024-\#(index % 12 + 1)-\#(index % 28 + 1)","total":\#(Double(index % 10000) / 100),"tags":[\#(tagList)],"address":{"street":"\#(index) Long Street","city":"City \#(index % 101)","zip":"\#(10000 + index % 89999)"},"notes":"Generated document number \#(index) for the query-server benchmark."}"#
    }

    static func measure(_ body: () throws -> Void) rethrows -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    static func report(_ name: String, count: Int, seconds: Double, unit: String) {
        let rate = Double(count) / seconds
        print("\(name.padding(toLength: 24, withPad: " ", startingAt: 0)) \(String(format: "%9.0f", rate)) \(unit)/s  (\(count) in \(String(format: "%.2f", seconds)) s)")
    }
}

/// `settee couchjs` as a child process with its standard input and output on pipes.
final class QueryServerProcess {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let transport: FileDescriptorTransport

    init(executable: String) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["couchjs"]
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        transport = FileDescriptorTransport(input: output.fileHandleForReading.fileDescriptor, output: input.fileHandleForWriting.fileDescriptor)
    }

    /// Writes one command and reads its answer, skipping log lines.
    func ask(_ line: String) throws -> String {
        var line = line
        line.withUTF8 { transport.writeLine(UnsafeRawBufferPointer($0)) }
        while true {
            guard let answer = transport.readLine() else { throw CocoaError(.fileReadUnknown) }
            let text = String(decoding: answer, as: UTF8.self)
            if !text.hasPrefix(#"["log","#) { return text }
        }
    }

    func close() {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }
}
