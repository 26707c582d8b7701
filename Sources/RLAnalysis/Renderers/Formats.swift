import CTFReader
import Foundation

/// `--format json`: the report as `rltrace-report/2` JSON (keys sorted, stable).
public enum JSONReportRenderer {
    /// Encodes the report.
    public static func render(_ r: Report) throws -> String {
        let enc = JSONEncoder()
        enc.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return UntrustedText.hardenJSON(Array(try enc.encode(r))) + "\n"
    }
}

/// `--format csv`: one row per (loop, item) with the loop's figures repeated, RFC 4180 quoting;
/// the last column is the loop's host (empty when the traces name none).
public enum CSVReportRenderer {
    /// The CSV text.
    public static func render(_ r: Report) -> String {
        var o = "pid,loop,tid,procname,thread_name,iterations,busy_ns,sleep_ns,busy_ratio,kind,item,name,count,total_ns,max_ns,p50_ns,p99_ns,host\n"
        for l in r.loops {
            let head = "\(l.pid),\(l.loop),\(l.tid),\(q(l.procname)),\(q(l.threadName)),\(l.iterations),\(l.busyNs),\(l.sleepNs),\(l.busyRatio)"
            let host = q(l.host ?? "")
            if l.items.isEmpty { o += head + ",,,,,,,,,\(host)\n" }
            for i in l.items {
                o += head + ",\(i.kind),\(i.item),\(q(i.name)),\(i.count),\(i.totalNs),\(i.maxNs),\(i.p50Ns),\(i.p99Ns),\(host)\n"
            }
        }
        return o
    }
    /// A name as a CSV field (``UntrustedText/csv(_:)``).
    static func q(_ s: String) -> String { UntrustedText.csv(s) }
}
