import Testing
@testable import RLAnalysis

/// The loop model's packed pending requests (wake-ups until the next wake, signals until the next
/// perform) give back exactly what was appended, in order: a property test against an array of
/// tuples, over random times (close together, far apart, going back, at Int64's ends) and threads
/// (one, a few, many), across several answer-and-refill rounds.
@Suite("Pending requests, packed")
struct PendingRequestsTests {
    @Test("random requests read back equal, in order, round after round", arguments: 1...60)
    func roundTrip(_ seed: Int) {
        var g = SplitMix(state: UInt64(seed))
        var packed = PendingRequests()
        var ts: Int64 = Int64(bitPattern: g.next()) >> Int64(g.below(64))
        let threads: [Int64] = (0..<[1, 3, 300][seed % 3]).map { Int64($0) * 7919 - 11 }
        for _ in 0..<4 {
            var expected: [(ts: Int64, tid: Int64, seq: Int64)] = []
            // A quarter of the rounds hold 0, 1 or 2 requests (one is kept inline, the second moves
            // it into the buffer), the others up to 3000.
            for _ in 0..<(g.below(4) == 0 ? g.below(3) : g.below(3000)) {
                switch g.below(10) {
                case 0: ts = Int64(bitPattern: g.next())                    // anywhere, Int64's ends included
                case 1: ts = ts &- Int64(g.below(1_000_000))               // back in time
                case 2: ts = g.below(2) == 0 ? .max : .min
                default: ts = ts &+ Int64(g.below(50_000))                // microseconds apart
                }
                let tid = threads[g.below(threads.count)]
                let seq = Int64(g.below(5))
                expected.append((ts, tid, seq))
                packed.append(ts: ts, tid: tid, seq: seq)
            }
            #expect(packed.count == expected.count)
            #expect(packed.isEmpty == expected.isEmpty)
            #expect(packed.lastSeq == (expected.last?.seq ?? 0))
            var got: [(ts: Int64, tid: Int64)] = []
            packed.forEach { got.append(($0, $1)) }
            #expect(got.count == expected.count)
            #expect(zip(got, expected).allSatisfy { $0.ts == $1.ts && $0.tid == $1.tid }, "seed \(seed)")
            packed.removeAll()
            #expect(packed.isEmpty && packed.count == 0 && packed.lastSeq == 0)
        }
    }

    @Test("every request from a thread of its own (a damaged trace): 50 000 threads, read back equal")
    func manyThreads() {
        var packed = PendingRequests()
        for i in 0..<50_000 { packed.append(ts: Int64(i) * 100, tid: Int64(i) &* 2_654_435_761) }
        var n = 0, wrong = 0
        packed.forEach { t, tid in
            if t != Int64(n) * 100 || tid != Int64(n) &* 2_654_435_761 { wrong += 1 }
            n += 1
        }
        #expect(n == 50_000 && wrong == 0)
        packed.removeAll()
        packed.append(ts: 7, tid: 1)
        var back: [(Int64, Int64)] = []
        packed.forEach { back.append(($0, $1)) }
        #expect(back.count == 1 && back[0] == (7, 1))
    }

    @Test("a burst of 200 000 close requests from one thread takes under 4 bytes each")
    func packedSize() {
        var packed = PendingRequests()
        var ts: Int64 = 1_795_888_018_717_859_477
        for i in 0..<200_000 {
            ts += 1_000 + Int64(i % 7) * 300
            packed.append(ts: ts, tid: 4823)
        }
        #expect(packed.byteCount < 4 * 200_000, "\(packed.byteCount) bytes")
        var n = 0, last: Int64 = 0, otherThreads = 0
        packed.forEach { t, tid in n += 1; last = t; if tid != 4823 { otherThreads += 1 } }
        #expect(n == 200_000 && last == ts && otherThreads == 0)
    }
}
