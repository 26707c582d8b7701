import Foundation

/// A `--fail-on` condition of `rltrace diff`: `METRIC OP VALUE`, e.g. `p99>+20%`, `busy>+5pt`,
/// `hangs>0`, `p50>+100us` (README, docs/diff-json.md). A signed value (`+…`, `-…`) is a change
/// from BASE to NEW; an unsigned one is NEW's own value. A change of a duration or of the busy ratio
/// holds only when the change is significant in its direction; counts (hangs, spins) need no test.
public struct FailCondition: Sendable, Equatable {
    /// What is compared.
    public enum Metric: String, Sendable, CaseIterable {
        case p50, p90, p99, max, impact, busy, hangs, spins
    }
    /// `%` relative change, `pt` percentage points (busy), `ns` a duration, or a plain `count`.
    public enum Unit: String, Sendable { case percent, points, ns, count }

    /// The expression as given.
    public var text: String
    /// The metric, the comparison (`>`, `>=`, `<`, `<=`), whether the value is a change, its unit and value.
    public var metric: Metric, op: String, isChange: Bool, unit: Unit, value: Double

    /// The error of an expression that cannot be read; its message names the expression.
    public struct ParseError: Error, CustomStringConvertible {
        /// The message.
        public var description: String
    }

    /// Parses a comma-separated list of conditions.
    public static func parseList(_ text: String) throws -> [FailCondition] {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        return try parts.map { try FailCondition(parsing: $0) }
    }

    /// Parses one condition.
    public init(parsing text: String) throws {
        self.text = text
        func fail(_ why: String) -> ParseError {
            ParseError(description: "cannot read the condition \(text.debugDescription): \(why) (e.g. 'p99>+20%', 'busy>+5pt', 'hangs>0', 'p50>+100us'; metrics: \(Metric.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        guard let opRange = text.range(of: ">=") ?? text.range(of: "<=") ?? text.range(of: ">") ?? text.range(of: "<") else {
            throw fail("no comparison (>, >=, <, <=)")
        }
        op = String(text[opRange])
        let name = text[..<opRange.lowerBound].trimmingCharacters(in: .whitespaces).lowercased()
        guard let m = Metric(rawValue: name) else { throw fail(name.isEmpty ? "no metric" : "unknown metric \(name.debugDescription)") }
        metric = m
        var v = text[opRange.upperBound...].trimmingCharacters(in: .whitespaces)
        isChange = v.hasPrefix("+") || v.hasPrefix("-")
        let negative = v.hasPrefix("-")
        if isChange { v.removeFirst() }
        let number: Double?
        if v.hasSuffix("%") { unit = .percent; number = Double(v.dropLast()) }
        else if v.hasSuffix("pt") { unit = .points; number = Double(v.dropLast(2)) }
        else if let d = Double(v) { unit = .count; number = d }
        else if let ns = parseDuration(v), v.last?.isLetter == true { unit = .ns; number = Double(ns) }
        else { unit = .count; number = nil }
        guard let n = number, n.isFinite, n >= 0 else { throw fail("cannot read the value \(v.debugDescription)") }
        value = negative ? -n : n
        switch metric {
        case .p50, .p90, .p99, .max:
            guard unit == .ns || (unit == .percent && isChange) else {
                throw fail(unit == .percent ? "% needs a signed change such as +20%" : "\(metric.rawValue) needs a duration with a unit (ns, us, ms, s) or a signed % change")
            }
        case .impact:
            guard unit == .ns else { throw fail("impact is added time per second of run: give a duration, e.g. impact>+1ms") }
            isChange = true
        case .busy:
            guard unit == .percent || (unit == .points && isChange) else {
                throw fail("busy takes a signed change in percentage points (+5pt) or %, or NEW's busy share (busy>50%)")
            }
        case .hangs, .spins:
            guard unit == .count || (unit == .percent && isChange) else { throw fail("\(metric.rawValue) takes a count (hangs>0, hangs>+2)") }
        }
    }

    func compare(_ x: Double) -> Bool {
        switch op {
        case ">": return x > value
        case ">=": return x >= value
        case "<": return x < value
        default: return x <= value
        }
    }

    /// Whether the figure meets the condition: `nil` when it cannot say (a figure is missing).
    func holds(_ f: FigureChange, scale: Double = 1) -> Bool? {
        if !isChange { return f.new.map { compare($0 * scale) } }
        guard let change = f.change else { return nil }
        switch unit {
        case .percent:
            if let p = f.changePct { return compare(p) }
            return compare(change > 0 ? .infinity : change < 0 ? -.infinity : 0)    // from 0: ±∞ %
        default: return compare(change * scale)
        }
    }

    /// The direction a significant change must have for the condition to hold.
    var wantsSlower: Bool { op.hasPrefix(">") }

    /// Evaluates the conditions on the diff: the lines that held, and those that could not be checked.
    /// A condition on a change holds only where the diff's own rule calls the change real, the rule
    /// its headline uses (``DiffBuilder/isRegression(_:)``: significant and past the floors of
    /// impact and growth, for items; significant and past the impact floor in busy share, for a
    /// loop's busy time), so the gate and the regressions list never disagree.
    public static func evaluate(_ conditions: [FailCondition], on d: TraceDiff) -> FailOnResult {
        let rules = DiffBuilder(rulesOf: d)
        var held: [String] = [], unchecked: [String] = []
        for c in conditions {
            var missingTest = 0
            for l in d.loops {
                let where_ = "loop \(l.procname.isEmpty ? "?" : l.procname) \"\(l.threadName)\""
                switch c.metric {
                case .hangs, .spins:
                    let f = c.metric == .hangs ? l.hangs : l.spins
                    if c.holds(f) == true { held.append("\(c.text): \(where_): \(c.metric.rawValue) \(describe(f, count: true))") }
                case .busy:
                    let scale = c.unit == .points || (!c.isChange && c.unit == .percent) ? 100.0 : 1
                    guard c.holds(l.busyRatio, scale: scale) == true else { continue }
                    if c.isChange && !(l.busyTest.significant && (l.busyTest.direction == "slower") == c.wantsSlower && rules.busyChangeMatters(l)) { continue }
                    held.append("\(c.text): \(where_): busy \(describe(l.busyRatio, ratio: true)) (p \(pValueText(l.busyTest.pValue)))")
                default:
                    for i in l.items {
                        let f: FigureChange
                        switch c.metric {
                        case .p50: f = i.p50Ns
                        case .p90: f = i.p90Ns
                        case .p99: f = i.p99Ns
                        case .max: f = i.maxNs
                        default: f = FigureChange(base: i.timePerSecondNs.base ?? 0, new: i.timePerSecondNs.new ?? 0, nBase: i.count.nBase, nNew: i.count.nNew)
                        }
                        guard c.holds(f) == true else { continue }
                        if c.isChange {
                            if !i.test.available { if i.status == "both" { missingTest += 1 }; continue }
                            let dir = i.test.direction
                            if c.wantsSlower {
                                guard rules.isRegression(i) else { continue }
                            } else {
                                guard dir == "mixed" || dir == "faster" else { continue }
                            }
                        }
                        held.append("\(c.text): \(where_): \(i.kind) \"\(i.name)\" \(c.metric.rawValue) \(describe(f, count: false))\(i.test.available ? " (p \(pValueText(i.test.pValue)))" : "")")
                    }
                }
            }
            if missingTest > 0 { unchecked.append("\(c.text): not checked for \(missingTest) item(s) whose figures meet it: no distributions to test the change (n/a)") }
        }
        return FailOnResult(conditions: conditions.map(\.text), held: held, unchecked: unchecked)
    }
}

/// `BASE → NEW (change)` for a figure: durations, counts or ratios.
func describe(_ f: FigureChange, count: Bool = false, ratio: Bool = false) -> String {
    func v(_ x: Double?) -> String {
        guard let x else { return "—" }
        if ratio { return pct(x) }
        return count ? String(Int64(x.rounded())) : formatDuration(Int64(x.rounded()))
    }
    var s = "\(v(f.base)) → \(v(f.new))"
    if let c = f.change, f.base != nil {
        if ratio {
            // Points, and the relative change that a `busy>+N%` condition compares.
            s += " (\(c >= 0 ? "+" : "")\(format1(c * 100))pt\(f.changePct.map { ", \($0 >= 0 ? "+" : "")\(percentText($0))" } ?? ""))"
        }
        else if let p = f.changePct { s += " (\(p >= 0 ? "+" : "")\(percentText(p)))" }
        else if c != 0 { s += " (\(c > 0 ? "+" : "")\(count ? String(Int64(c)) : formatDuration(Int64(c))))" }
    }
    return s
}

/// A percentage with 2 significant digits at least: `+3.4 %`, `+290 %`.
func percentText(_ p: Double) -> String {
    let a = abs(p)
    return (a >= 100 ? String(Int64(p.rounded())) : a >= 10 ? format1(p) : String((p * 100).rounded() / 100)) + " %"
}

/// A p-value: `0.034`, `1.2e-07`, `n/a`.
func pValueText(_ p: Double?) -> String {
    guard let p else { return "n/a" }
    if p >= 0.001 { return String(format: "%.3g", p) }
    return String(format: "%.2g", p)
}
