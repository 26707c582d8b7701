// hang-workload: a RunLoopCore program that hangs its main loop in a named function at known
// times, for the hang watchdog's stack samples and the flight recorder (docs/hangs.md).
//
//   hang-workload [--hangs N] [--first MS] [--every MS] [--hold MS] [--duration MS] [--blocks 1]
//
// A 10 ms heartbeat timer keeps the loop busy with ordinary iterations (the events before each
// hang); the timer "parser" fires at --first ms, then every --every ms, N times, and each time
// computes for --hold ms inside parseHugeDocument(). With --blocks 1, each heartbeat also performs
// a block named "beat-<0|1|2>" in turn, and the parser computes inside a block named "parse-block"
// it performs (the block-name pool in a flight-recorder snapshot). Prints, for the tests:
//   function parseHugeDocument main.swift FIRST-LAST     (the function's source lines)
//   hang K at MS ms                                       (when each hang began, after start)
#if canImport(Glibc)
import Glibc
#endif
import RunLoopCore

var hangs = 2, first = 500, every = 1000, hold = 300, duration = 2200, blocks = 0
var args = CommandLine.arguments.dropFirst().makeIterator()
while let a = args.next() {
    guard let v = args.next().flatMap({ Int($0) }), v >= 0 else {
        fputs("usage: hang-workload [--hangs N] [--first MS] [--every MS] [--hold MS] [--duration MS] [--blocks 1]\n", stderr)
        exit(64)
    }
    switch a {
    case "--hangs": hangs = v
    case "--first": first = v
    case "--every": every = v
    case "--hold": hold = v
    case "--duration": duration = v
    case "--blocks": blocks = v
    default:
        fputs("hang-workload: unknown option \(a)\n", stderr)
        exit(64)
    }
}

func nowNs() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

let parseFirstLine = #line + 2
/// The hang: computes for `ms` milliseconds without returning to the loop.
@inline(never) func parseHugeDocument(_ ms: Int) -> UInt64 {
    let end = nowNs() + Int64(ms) * 1_000_000
    var h: UInt64 = 0xcbf2_9ce4_8422_2325
    while nowNs() < end {
        var i: UInt64 = 0
        while i < 1000 { h = (h ^ i) &* 0x100_0000_01b3; i += 1 }
    }
    return h
}
let parseLastLine = #line - 2

print("function parseHugeDocument main.swift \(parseFirstLine)-\(parseLastLine)")
let start = nowNs()
let loop = RLRunLoop.current
var beats = 0, done = 0
let beatNames = ["beat-0", "beat-1", "beat-2"]
loop.add(RLTimer(fireAt: .now + .milliseconds(10), interval: .milliseconds(10), name: "heartbeat") { _ in
    beats += 1
    if blocks != 0 { loop.perform(name: beatNames[beats % 3]) {} }
}, forMode: .commonModes)
if hangs > 0 {
    var parser: RLTimer!
    parser = RLTimer(fireAt: .now + .milliseconds(first), interval: .milliseconds(every), name: "parser") { _ in
        done += 1
        print("hang \(done) at \((nowNs() - start) / 1_000_000) ms")
        if blocks != 0 { loop.perform(name: "parse-block") { _ = parseHugeDocument(hold) } } else { _ = parseHugeDocument(hold) }
        if done == hangs { parser.invalidate() }
    }
    loop.add(parser, forMode: .commonModes)
}
_ = loop.run(mode: .default, seconds: Double(duration) / 1000, returnAfterSourceHandled: false)
print("heartbeats \(beats), hangs \(done)")
