import Foundation
import RunLoopCore
import CRunLoopShims

/// Hang scenario (the hang watchdog): the main loop fires a one-shot timer `hang-timer`
/// whose callout spends `--hang-ms` milliseconds (default 300) inside
/// ``simulatedHangInRequestHandler(milliseconds:)``, a few frames deep; a later timer stops the loop
/// once the watchdog has had time to see the hang end. `--hang-ms 0` makes the callout return at
/// once (no hang); `--threshold-ms N` sets ``RLHangWatchdog/threshold`` (default: the environment's
/// `RLTRACE_HANG_THRESHOLD`, else 250 ms).
///
/// Prints what the test needs to check the trace against: `FUNC <start> <end>` — the address
/// range of the named function in this process (from dladdr and the symbol's size, or the
/// executable's symbol table) — `HERE <address>` (a return address inside it),
/// `SIGNALS <n>` (capture signals the watchdog sent), `HANGS <n>` (hangs it reported),
/// `SIGNAL <n|none>` and `LOOP <id> TID <tid>`.
enum HangScenario {
    nonisolated(unsafe) static var here: UInt = 0

    static func run(_ args: [String]) {
        func value(_ flag: String) -> Int? {
            guard let i = args.firstIndex(of: flag), i + 1 < args.count else { return nil }
            return Int(args[i + 1])
        }
        let hangMs = value("--hang-ms") ?? 300
        if let t = value("--threshold-ms") { RLHangWatchdog.threshold = .milliseconds(t) }
        let thresholdMs = Int(RLHangWatchdog.threshold.components.seconds * 1000
                              + RLHangWatchdog.threshold.components.attoseconds / 1_000_000_000_000_000)
        let loop = RLRunLoop.current
        print("LOOP \(loop.id) TID \(loop.threadID)")
        let hangAt = Duration.milliseconds(30)
        loop.add(RLTimer(fireAt: .now + hangAt, name: "hang-timer") { _ in
            handleIncomingRequest(milliseconds: hangMs)
        }, forMode: .default)
        // Stop after the hang, leaving the watchdog two thresholds to notice its end.
        loop.add(RLTimer(fireAt: .now + hangAt + .milliseconds(hangMs + 2 * thresholdMs + 50), name: "finish") { _ in
            loop.stop()
        }, forMode: .default)
        loop.run(mode: .default, seconds: 30, returnAfterSourceHandled: false)

        if here != 0 {
            var start: UInt = 0, size: UInt = 0, base: UInt = 0
            _ = rl_symbol_range(here, &start, &size, &base)
            print("HERE \(here) BASE \(base) FUNC \(start) \(start + size)")
        }
        print("SIGNALS \(RLHangWatchdog.signalsSent)")
        print("HANGS \(RLHangWatchdog.hangsReported)")
        print("SIGNAL \(RLHangWatchdog.signalNumber.map { "\($0)" } ?? "none")")
    }
}

/// The request handler the hang-timer calls: one frame between the timer's callout and the hang.
@inline(never)
func handleIncomingRequest(milliseconds: Int) {
    simulatedHangInRequestHandler(milliseconds: milliseconds)
    blackHole &+= 1
}

nonisolated(unsafe) var blackHole = 0

/// Holds the loop for `milliseconds`: sleeps in 1 ms steps (a stack sampled meanwhile shows libc's
/// nanosleep innermost, then this function), re-reading the clock so that the capture signal, which
/// interrupts a sleep (EINTR), does not shorten the hang.
@inline(never)
func simulatedHangInRequestHandler(milliseconds: Int) {
    // A return address inside this function, for the test's "a frame falls in it" check.
    HangScenario.here = rl_caller_address()
    guard milliseconds > 0 else { return }
    let end = DispatchTime.now().uptimeNanoseconds + UInt64(milliseconds) * 1_000_000
    while DispatchTime.now().uptimeNanoseconds < end {
        usleep(1_000)
    }
    blackHole &+= 1
}
