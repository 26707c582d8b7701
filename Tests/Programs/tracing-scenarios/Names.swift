import Foundation
import RunLoopTracing
import RunLoopSchema

/// String fields of every length class the C provider writes differently, and the fields around
/// them, for every event class with a string (runloop_tp.h): the provider's probe stages
/// a payload's fields in a 512-byte local buffer and writes it with one ring-buffer write; a
/// string that does not fit in the room left is written after what is staged (staged again if it
/// fits once that is written out, else with lttng-ust's byte-by-byte strcpy), and so is a number
/// that does not fit; "" is passed as NULL and recorded as "(unnamed)". Every name is recorded by
/// item_info (a named block's, and an item's: an enumeration among 25 bytes of integers before two
/// strings), loop_info (two int32s before two strings), item_added (an enumeration among the
/// integers, two strings), hang_begin (integers and an enumeration before, three integers after),
/// run_enter, run_exit (an enumeration after the mode) and loop_created (an int32 before), with
/// extreme integer values.
/// Prints `EXPECT {json}` per event.
enum NamesScenario {
    static let names: [String] = [
        "", "a", "(unnamed)", "work", "ünïcødé ⏱", "tab\there",
        String(repeating: "x", count: 15), String(repeating: "y", count: 16),   // Swift small/large string
        String(repeating: "n", count: 254), String(repeating: "m", count: 255),
        String(repeating: "o", count: 256), String(repeating: "p", count: 300),
        String(repeating: "é", count: 128),                                      // 256 UTF-8 bytes
        // item_info: 25 bytes of integers, then the string (strlen + 1) in a 512-byte buffer:
        // strlen 486 is the last that fits after them (and fills it: the mode goes out on its
        // own); 487 goes out after the integers, staged again; 511 is the last to be staged; 512
        // and longer are written by strcpy.
        String(repeating: "q", count: 486), String(repeating: "r", count: 487),
        String(repeating: "s", count: 488), String(repeating: "t", count: 489),
        String(repeating: "u", count: 511), String(repeating: "v", count: 512),
        String(repeating: "w", count: 513), String(repeating: "z", count: 1000),
        String(repeating: "ß", count: 256),                                      // 512 UTF-8 bytes
    ]


    static func run() {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        func recorded(_ s: String) -> String { s.isEmpty ? "(unnamed)" : s }
        var out: [ExpectedEvent] = []
        func expect(_ event: String, _ fields: [String: String], labels: [String: String] = [:]) {
            out.append(ExpectedEvent(event: "runloop:" + event, fields: fields, labels: labels))
        }
        for (i, n) in names.enumerated() {
            let it = UInt64(i), item = UInt64(1000 + i)
            // Extreme values on alternate names: every byte of the integers must come through.
            let big = i % 2 == 0
            let loop: UInt64 = big ? .max : 7
            let u64: UInt64 = big ? .max - UInt64(i) : 42 + it
            let i64: Int64 = big ? .min : -1 - Int64(i)
            let i32: Int32 = big ? .min : Int32(i)
            let u32: UInt32 = big ? .max : 0x8000_0001
            let name = recorded(n)
            let mode = names[names.count - 1 - i]

            // A named block: its item_info (kind block, mode "" recorded "(unnamed)"), then its entry.
            RLTrace.blockEntry(loop: loop, item: item, name: n)
            RLTrace.blockExit(loop: loop)
            if !n.isEmpty {
                expect("item_info", ["loop_id": "\(loop)", "kind": "\(RLCalloutKind.block.rawValue)", "item_id": "\(item)",
                                     "order": "0", "name": name, "mode": "(unnamed)"], labels: ["kind": "block"])
            }
            expect("block_entry", ["loop_id": "\(loop)", "item_id": "\(item)"])
            expect("block_exit", ["loop_id": "\(loop)"])

            let kind = RLCalloutKind.allCases[i % RLCalloutKind.allCases.count]
            RLTrace.itemInfo(loop: loop, kind: kind, item: item, order: i64, name: n, mode: mode)
            expect("item_info", ["loop_id": "\(loop)", "kind": "\(kind.rawValue)", "item_id": "\(item)", "order": "\(i64)",
                                 "name": name, "mode": recorded(mode)], labels: ["kind": kind.label])

            RLTrace.loopInfo(loop: loop, pid: i32, tid: i32, procname: mode, threadName: n)
            expect("loop_info", ["loop_id": "\(loop)", "pid": "\(i32)", "tid": "\(i32)", "procname": recorded(mode), "thread_name": name])

            RLTrace.itemAdded(loop: loop, iteration: it, kind: kind, item: item, name: n, mode: mode)
            expect("item_added", ["loop_id": "\(loop)", "iteration": "\(it)", "kind": "\(kind.rawValue)", "item_id": "\(item)",
                                  "name": name, "mode": recorded(mode)],
                   labels: ["kind": kind.label])

            RLTrace.hangBegin(loop: loop, iteration: it, hangID: u64, kind: kind, item: item, name: n,
                              thresholdNs: UInt64(i), elapsedNs: u64, loopTid: i32)
            expect("hang_begin", ["loop_id": "\(loop)", "iteration": "\(it)", "hang_id": "\(u64)", "kind": "\(kind.rawValue)",
                                  "item_id": "\(item)", "item_name": name, "threshold_ns": "\(i)", "elapsed_ns": "\(u64)",
                                  "loop_tid": "\(i32)"],
                   labels: ["kind": kind.label])

            RLTrace.runEnter(loop: loop, iteration: it, mode: n, timeoutNs: i64, returnAfterSourceHandled: big, depth: u32)
            expect("run_enter", ["loop_id": "\(loop)", "iteration": "\(it)", "mode": name, "timeout_ns": "\(i64)",
                                 "return_after_source_handled": big ? "1" : "0", "depth": "\(u32)"])

            let result = UInt8(1 + i % 4)
            RLTrace.runExit(loop: loop, iteration: it, mode: n, result: result, depth: u32)
            expect("run_exit", ["loop_id": "\(loop)", "iteration": "\(it)", "mode": name, "result": "\(result)", "depth": "\(u32)"],
                   labels: ["result": ["finished", "stopped", "timed_out", "handled_source"][Int(result) - 1]])

            RLTrace.loopCreated(loop: loop, iteration: it, tid: i32, threadName: n)
            expect("loop_created", ["loop_id": "\(loop)", "iteration": "\(it)", "tid": "\(i32)", "thread_name": name])
        }
        for e in out { print("EXPECT " + String(decoding: try! encoder.encode(e), as: UTF8.self)) }
    }
}
