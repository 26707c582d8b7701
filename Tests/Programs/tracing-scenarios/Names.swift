import Foundation
import RunLoopTracing

/// String fields of every length class the C provider writes differently (issue 16: a string is
/// copied to a 256-byte local buffer and written in one ring-buffer write when it fits, NUL
/// included, else with lttng-ust's byte-by-byte strcpy; "" is passed as NULL and recorded as
/// "(unnamed)"): block_entry/block_exit, timer_entry (a field after the string) and item_added
/// (two strings) with each name, in order. Prints `EXPECT {json}` per event.
enum NamesScenario {
    static let names: [String] = [
        "", "a", "(unnamed)", "work", "ünïcødé ⏱", "tab\there",
        String(repeating: "x", count: 15), String(repeating: "y", count: 16),   // Swift small/large string
        String(repeating: "n", count: 254), String(repeating: "m", count: 255), // len 255, 256: the buffer's last fit
        String(repeating: "o", count: 256), String(repeating: "p", count: 300), // len 257+: strcpy fallback
        String(repeating: "é", count: 128),                                      // 256 UTF-8 bytes
    ]

    static func run() {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        func recorded(_ s: String) -> String { s.isEmpty ? "(unnamed)" : s }
        var out: [ExpectedEvent] = []
        for (i, n) in names.enumerated() {
            let it = UInt64(i), item = UInt64(1000 + i)
            RLTrace.blockEntry(loop: 7, iteration: it, item: item, name: n)
            RLTrace.blockExit(loop: 7, iteration: it, item: item, name: n)
            for ev in ["block_entry", "block_exit"] {
                out.append(ExpectedEvent(event: "runloop:" + ev, fields: ["loop_id": "7", "iteration": "\(it)", "item_id": "\(item)", "name": recorded(n)]))
            }
            RLTrace.timerEntry(loop: 7, iteration: it, item: item, name: n, scheduledNs: 42 + it)
            out.append(ExpectedEvent(event: "runloop:timer_entry", fields: ["loop_id": "7", "iteration": "\(it)", "item_id": "\(item)",
                                                                            "name": recorded(n), "scheduled_ns": "\(42 + it)"]))
            let mode = names[names.count - 1 - i]
            RLTrace.itemAdded(loop: 7, iteration: it, kind: .timer, item: item, name: n, mode: mode)
            out.append(ExpectedEvent(event: "runloop:item_added", fields: ["loop_id": "7", "iteration": "\(it)", "kind": "\(RLTraceCalloutKind.timer.rawValue)",
                                                                           "item_id": "\(item)", "name": recorded(n), "mode": recorded(mode)]))
        }
        for e in out { print("EXPECT " + String(decoding: try! encoder.encode(e), as: UTF8.self)) }
    }
}
