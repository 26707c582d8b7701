// trace-workload: a deterministic RunLoopCore workload that makes run-loop traces of a chosen size
// quickly, for the bounded-memory test of rltrace's analysis pipeline (Tests/rltraceTests/
// BoundedMemoryTests.swift). Unlike rl-example (paced by its clients' TCP round trips and
// by a duration), it runs a fixed number of steps as fast as the loop allows, so the number of events
// is proportional to STEPS whatever the machine's load.
//
//   trace-workload STEPS [--burst N]
//
// Every callout kind occurs, with a fixed set of items (so a trace twice as long has the same items,
// twice as many times): the main thread's loop performs a source0 ("wl-step") STEPS times; each step
// queues a named perform-block (4 names) and then re-signals the step in one of five ways, by the step
// number modulo 64: directly (the loop does not sleep), through a timer 20 µs ahead ("wl-timer", the
// loop sleeps and wakes for the timer), through one byte written to a pipe (source1 "wl-pipe"),
// through a worker thread's loop (perform "wl-bounce", which signals the step and wakes the main loop),
// or through the main dispatch queue. Two observers bracket every pass. It prints the steps made.
// With `--burst N`, the step half-way queues N more blocks ("wl-burst") at once: the loop drains them
// in one iteration of N callouts (what a `CFRunLoopPerformBlock` flood makes).
#if canImport(Glibc)
import Glibc
#endif
import CRunLoopShims
import Dispatch
import RunLoopCore

let arguments = CommandLine.arguments
if arguments.count >= 2 && arguments[1] == "--measure" { exit(measureMode(Array(arguments.dropFirst(2)))) }
let burst = arguments.count == 4 && arguments[2] == "--burst" ? Int(arguments[3]) ?? -1 : 0
guard arguments.count == 2 || (arguments.count == 4 && burst >= 0), let steps = Int(arguments[1]), steps > 0 else {
    FileHandle2.err("usage: trace-workload STEPS [--burst N]   (STEPS > 0)\n       trace-workload --measure OUT [--kill-above-mb N] [--timeout S] -- PROGRAM ARGS…")
    exit(2)
}

/// Minimal stderr writer (no Foundation in this program).
enum FileHandle2 {
    static func err(_ s: String) {
        let bytes = Array((s + "\n").utf8)
        _ = bytes.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count) }
    }
}

let loop = RLRunLoop.main
let worker = RLWorkerThread(name: "wl-worker")
let blockNames = ["wl-block-a", "wl-block-b", "wl-block-c", "wl-block-d"]
var done = 0
var pipeFDs: [Int32] = [-1, -1]
guard pipe(&pipeFDs) == 0 else { FileHandle2.err("trace-workload: pipe failed"); exit(1) }
_ = fcntl(pipeFDs[0], F_SETFL, fcntl(pipeFDs[0], F_GETFL) | O_NONBLOCK)

var step: RLSource0!
// One timer, moved for each use (a new timer per use would add an item per use to the trace).
let timer = RLTimer(fireAt: .now + .seconds(3600), interval: .seconds(3600), name: "wl-timer") { _ in step.signal() }

step = RLSource0(name: "wl-step") {
    done += 1
    if done >= steps { loop.stop(); return }
    loop.perform(name: blockNames[done & 3]) {}
    if done == steps / 2 { for _ in 0..<burst { loop.perform(name: "wl-burst") {} } }
    switch done % 64 {
    case 16, 48:
        timer.setNextFireDate(.now + .microseconds(20))
    case 32:
        var byte: UInt8 = 1
        _ = write(pipeFDs[1], &byte, 1)
    case 0:
        worker.perform(name: "wl-bounce") { step.signal(); loop.wakeUp() }
    case 8:
        DispatchQueue.main.async { step.signal() }
    default:
        step.signal()
    }
}

do {
    let reader = try RLSource1(fd: pipeFDs[0], interest: .read, name: "wl-pipe") { _, fd, _ in
        var buf = [UInt8](repeating: 0, count: 64)
        while read(fd, &buf, buf.count) > 0 {}
        step.signal()
    }
    try loop.add(reader, forMode: .commonModes)
} catch {
    FileHandle2.err("trace-workload: cannot watch the pipe: \(error)")
    exit(1)
}
loop.add(step, forMode: .commonModes)
loop.add(timer, forMode: .commonModes)
loop.add(RLObserver(activities: [.entry, .beforeWaiting, .exit], order: Int(Int32.min) + 1, name: "wl-pool") { _, _ in }, forMode: .commonModes)
loop.add(RLObserver(activities: .beforeWaiting, order: 1_999_000, name: "wl-flush") { _, _ in }, forMode: .commonModes)

step.signal()
while done < steps {
    loop.run(mode: .default, seconds: 60, returnAfterSourceHandled: false)
}
worker.cancel()
worker.join()
print("steps \(done)")
