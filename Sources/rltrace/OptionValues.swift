import ArgumentParser
import Foundation
import RLAnalysis

// Option values whose refusal names the command the user wanted.

extension ExportCommand {
    /// `--format`: `chrome` or `perfetto`; a format of `report` (json, csv, html, …) is refused naming
    /// `rltrace report --format X`.
    static func format(_ text: String) throws -> Format {
        if let f = Format(rawValue: text) { return f }
        if ReportCommand.Format(rawValue: text) != nil {
            throw ValidationError("export writes Chrome Trace Event JSON (--format chrome) or a native Perfetto trace (--format perfetto); for the report as \(text) use `rltrace report --format \(text)`")
        }
        throw ValidationError("unknown export format \(text.debugDescription) (chrome, perfetto); for the report as JSON, CSV or HTML use `rltrace report --format json|csv|html`")
    }

    /// `--compression`: `deflate` or `none`.
    static func compression(_ text: String) throws -> PerfettoCompression {
        if let c = PerfettoCompression(rawValue: text) { return c }
        throw ValidationError("unknown --compression \(text.debugDescription) (deflate: Perfetto's compressed_packets, as its traced writes them; none: every packet as it is)")
    }
}
