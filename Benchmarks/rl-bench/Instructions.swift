// Instructions per item, counted by callgrind, next to the timed rows ("instruction
// counts next to the times for the rows that move, so the gains show through the machine's noise").
//
// A workload's child (`rl-bench --child WORKLOAD ENGINE N`) runs under `valgrind --tool=callgrind`
// twice, with N1 and N2 items; (Ir(N2) − Ir(N1)) / (N2 − N1) is what one item costs, what does not
// grow with N cancelled out. For the in-thread workloads 1-4 only the timed phase is collected (the
// row's phase: `--collect-atstart=no`, and the workload thread switches collection on and off
// around it, Workloads.swift's phaseBegin/phaseEnd), so setting up the items (creating 40 000
// timers) is not counted, as it is not timed. For the wake cycle every thread of the child is
// counted: the waker's side too, alike for both engines. The child is a copy of this executable without debug
// information (`strip -g`): valgrind reads a Swift binary's DWARF slowly, and counts do not depend
// on it. The counts vary by a few instructions between runs (hash seeds, heap addresses), not with
// the machine's load.
import Foundation
import RLBenchMallocCounter
import TestSupport

enum InstructionCounts {
    /// valgrind's path, or nil (the rows are then skipped, with a note on stderr).
    static let valgrind: String? = ["/usr/bin/valgrind", "/usr/local/bin/valgrind"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    /// Where the stripped copy goes (removed at exit).
    static let copyDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("rl-bench-callgrind-\(getpid())")

    /// A copy of this executable without debug information, made once.
    static let strippedCopy: String? = {
        let dir = copyDirectory
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let out = dir.appendingPathComponent("rl-bench").path
        guard let r = try? runProgram("/usr/bin/strip", ["-g", "-o", out, me]), r.status == 0 else {
            log("instruction counts: strip -g failed; counting the unstripped binary (slower)")
            return me
        }
        atexit { try? FileManager.default.removeItem(at: InstructionCounts.copyDirectory) }
        return out
    }()

    /// The instructions callgrind collected over a child run — only in its `phase`-th timed phase
    /// (from 0) when given, else all of it — or nil.
    static func collected(_ args: [String], phase: Int?) -> Double? {
        guard let vg = valgrind, let exe = strippedCopy else { return nil }
        var env = ProcessInfo.processInfo.environment
        var options = ["--tool=callgrind", "--callgrind-out-file=/dev/null"]
        if let phase {
            env["RLB_CALLGRIND_PHASE"] = "\(phase)"
            options.append("--collect-atstart=no")
        }
        let r: ProgramRun
        do {
            r = try runProgram(vg, options + [exe, "--child"] + args, environment: env, timeout: 600)
        } catch { log("valgrind: \(error)"); return nil }
        guard r.status == 0 else { log("valgrind \(args): exit \(r.status): \(r.stderr.suffix(300))"); return nil }
        // "==PID== Collected : 123456789"
        for line in r.stderr.split(separator: "\n") {
            if let range = line.range(of: "Collected : ") {
                return Double(line[range.upperBound...].trimmingCharacters(in: .whitespaces))
            }
        }
        log("valgrind \(args): no \"Collected\" line")
        return nil
    }

    /// Instructions per item of `workload` on `engine`: (Ir(n2) − Ir(n1)) / (n2 − n1).
    static func perItem(_ workload: String, _ engine: Engine, n1: Int, n2: Int, phase: Int?) -> Double? {
        guard let a = collected([workload, engine.rawValue, "\(n1)"], phase: phase),
              let b = collected([workload, engine.rawValue, "\(n2)"], phase: phase) else { return nil }
        return (b - a) / Double(n2 - n1)
    }
}

/// The instruction row under a timed workload: ours and the floor, per item, and their ratio.
/// `phase`: the timed phase counted (nil: the whole child, every thread).
func instructionRow(_ id: String, per: String, workload: String, n1: Int, n2: Int, phase: Int?) -> Row? {
    guard InstructionCounts.valgrind != nil else { return nil }
    if phase != nil && rlb_callgrind_compiled() == 0 {
        log("   instructions per \(per): skipped (rl-bench was built without valgrind's headers: rebuild it with valgrind installed)")
        return nil
    }
    log("   instructions per \(per) (callgrind, \(workload) \(n1) and \(n2))")
    let o = InstructionCounts.perItem(workload, .ours, n1: n1, n2: n2, phase: phase)
    let f = InstructionCounts.perItem(workload, .floor, n1: n1, n2: n2, phase: phase)
    // The method's note once, on the first instruction row.
    let first = !rows.contains { $0.id.hasSuffix(".instructions") }
    return Row(id: id + ".instructions", workload: "   instructions per \(per) (callgrind)", unit: "instr",
               ours: o, cf: nil, floor: f, ratio: (o != nil && f != nil && f! > 0) ? o! / f! : nil,
               ratio_of: "ours/floor", target: nil, pass: nil,
               note: !first ? nil : "instruction rows: (Ir at N2 − Ir at N1) / (N2 − N1) of the workload's child under callgrind — its timed phase (1-4), every thread (5) — here N1 = \(n1), N2 = \(n2); independent of the machine's load")
}
