import Foundation
import Testing
import CTFReader
import RLAnalysis

// The pieces the streaming pipeline's speed rests on (docs/benchmarks.md), against the plain formulations they
// replace: decimal formatting through the byte cursor, the name table's cache, one-pass percentiles.

@Suite("Pipeline parts")
struct PipelinePartsTests {
    @Test("durations written through the cursor read as formatDuration writes them, ties and unit edges included")
    func durations() {
        var values: [Int64] = [0, 1, 999, 1_000, 1_004, 1_005, 1_015, 1_025, 9_994, 9_995, 9_999, 10_000, 10_050, 99_949, 99_950,
                               99_999, 100_000, 100_500, 999_499, 999_500, 999_999, 1_000_000, 1_005_000, 99_950_000,
                               999_500_000, 999_999_999, 1_000_000_000, 1_234_567_890_123, .max, .min + 1]
        var x: UInt64 = 12345
        for _ in 0..<200_000 {
            x = x &* 6364136223846793005 &+ 1442695040888963407
            let v = Int64(x >> (22 + x % 38))
            values.append(x & 1 == 0 ? v : -v)
        }
        let sink = ByteSink()
        for v in values { sink.duration(v); sink.byte(0x20) }
        #expect(sink.text == values.map(formatDuration).joined(separator: " ") + " ")
    }

    @Test("nine-digit fractions keep their leading zeros")
    func nineDigits() {
        let values: [UInt64] = [0, 5, 10, 99, 100_000, 12_345_678, 100_000_000, 123_456_789, 999_999_999]
        let sink = ByteSink()
        for v in values { sink.reserving(9) { $0.nineDigits(v) }; sink.byte(0x20) }
        #expect(sink.text == values.map { v -> String in let s = String(v); return String(repeating: "0", count: 9 - s.count) + s + " " }.joined())
    }

    @Test("the name table gives each distinct name one id, through cache evictions and back")
    func names() {
        let table = NameTable()
        let words = (0..<5000).map { "name-\($0 * 7919 % 100_003)" } + ["", "a", "ab", "abcdefgh", "abcdefghi", "é"]
        var ids: [String: Int32] = [:]
        for round in 0..<3 {
            for w in (round == 1 ? words.reversed() : words) {
                let id = table.intern(w)
                if let known = ids[w] { #expect(known == id, "\(w) in round \(round)") } else { ids[w] = id }
                #expect(table[id] == w)
            }
        }
        #expect(Set(ids.values).count == Set(words).count)
        #expect(table.intern("") == NameTable.empty)
        // Byte-for-byte the same names from raw bytes (as the decoder interns them).
        for w in words.prefix(100) {
            var s = w
            let id = s.withUTF8 { table.intern(UnsafeRawBufferPointer($0)) }
            #expect(id == ids[w])
        }
    }

    @Test("percentiles in one pass equal percentile(_:) one by one, exact and from the histogram")
    func percentiles() {
        var small = DurationAccumulator()
        for v: Int64 in [5, 1, 9, 3, 3, 7] { small.add(v) }
        let ps: [Double] = [0, 1, 50, 90, 99, 99.9, 100]
        #expect(small.percentiles(ps) == ps.map { small.percentile($0) })
        var big = DurationAccumulator()
        var x: UInt64 = 0x1234_5678
        for i in 0..<200_000 {
            x = x &* 6364136223846793005 &+ 1442695040888963407
            big.add(i % 1000 == 0 ? Int64(x >> 30) : Int64(x >> 44))   // a body and a long tail
        }
        let more: [Double] = [0, 0.1, 10, 25, 50, 75, 90, 99, 99.9, 99.99, 100]
        #expect(big.percentiles(more) == more.map { big.percentile($0) })
        #expect(big.percentiles([99, 50]) == [big.percentile(99), big.percentile(50)], "in any order")
        #expect(DurationAccumulator().percentiles([50, 99]) == [0, 0])
    }

    @Test("percentiles stay within the histogram's precision of the exact ones beyond its initial size (10 ms), merged or not")
    func percentilesBeyondTheInitialSize() {
        // Values from 1 ns to an hour (the histogram starts sized for 10 ms and grows), recorded
        // in order of size in one accumulator (it grows bucket by bucket) and at random in two
        // merged into a third.
        var x: UInt64 = 0x9E37_79B9
        var values: [Int64] = []
        for _ in 0..<50_000 {
            x = x &* 6364136223846793005 &+ 1442695040888963407
            values.append(Int64(1 + (x >> 20) % (1 << UInt64((x >> 8) % 42))))   // log-uniform up to 2^42 ns (~73 min)
        }
        var sortedAcc = DurationAccumulator(), a = DurationAccumulator(), b = DurationAccumulator()
        let exact = values.sorted()
        for v in exact { sortedAcc.add(v) }
        for (i, v) in values.enumerated() { if i % 2 == 0 { a.add(v) } else { b.add(v) } }
        var merged = DurationAccumulator()
        merged.merge(a)
        merged.merge(b)
        let ps: [Double] = [1, 10, 50, 90, 99, 99.9]
        for acc in [sortedAcc, merged] {
            #expect(acc.count == values.count && acc.max == exact.last!)
            for (p, got) in zip(ps, acc.percentiles(ps)) {
                // The rank HdrHistogram takes (from one ulp below p, against rounding up past the rank).
                let want = exact[max(1, Int((p.nextDown * Double(exact.count) / 100).rounded(.up))) - 1]
                // The highest value equivalent to the exact one: at most 0.1 % above it (3 digits).
                #expect(got >= want && got <= want + want / 1000 + 1, "p\(p): \(got) against \(want)")
            }
        }
        #expect(sortedAcc.percentiles(ps) == merged.percentiles(ps))
    }

    @Test("accumulators made from the shared empty histogram keep their own values")
    func histogramsAreTheirOwn() {
        // Each histogram starts as a copy of one empty histogram (copy on write): recording into
        // one must change neither the others nor the next one made.
        var a = DurationAccumulator(), b = DurationAccumulator()
        for i in 0..<1000 { a.add(Int64(1_000 + i)); b.add(Int64(5_000_000 + i * 1000)) }
        var c = DurationAccumulator()
        for _ in 0..<100 { c.add(7) }
        #expect(a.count == 1000 && b.count == 1000 && c.count == 100)
        // Below 2048 the histogram is exact: the 500th of 1000…1999 is 1499.
        #expect(a.percentiles([0, 50, 100]) == [1_000, 1_499, 1_999])
        // Above, within its 3 significant digits.
        let bp = b.percentiles([0, 100])
        #expect(bp[0] >= 4_995_000 && bp[0] <= 5_000_000 && bp[1] >= 5_999_000 && bp[1] <= 6_005_000)
        #expect(c.percentiles([0, 50, 100]) == [7, 7, 7])
        var d = DurationAccumulator()
        for _ in 0..<40 { d.add(3) }
        #expect(d.percentiles([0, 100]) == [3, 3], "a histogram made after the others starts empty")
    }

    @Test("merging accumulators gives what recording every value into one gives", arguments: [(3, 5), (10, 22), (20, 20), (5, 300), (300, 5), (400, 900), (0, 40), (40, 0)])
    func mergeEqualsRecording(sizes: (Int, Int)) {
        var x: UInt64 = 0x9E37_79B9 &* UInt64(sizes.0 * 1000 + sizes.1 + 1)
        func next() -> Int64 {
            x = x &* 6364136223846793005 &+ 1442695040888963407
            let v = Int64(x >> 40)
            return x & 0xF == 0 ? -v : (x & 0x3F == 1 ? v << 12 : v)   // some negative, some far out
        }
        var a = DurationAccumulator(), b = DurationAccumulator(), all = DurationAccumulator()
        for _ in 0..<sizes.0 { let v = next(); a.add(v); all.add(v) }
        for _ in 0..<sizes.1 { let v = next(); b.add(v); all.add(v) }
        var merged = DurationAccumulator()
        merged.merge(a)
        merged.merge(b)
        #expect(merged.count == all.count && merged.total == all.total && merged.max == all.max && merged.min == all.min)
        let ps: [Double] = [0, 1, 10, 50, 90, 99, 99.9, 100]
        #expect(merged.percentiles(ps) == all.percentiles(ps))
        #expect(ps.map { merged.percentile($0) } == ps.map { all.percentile($0) })
        var m: [Int64: Int] = [:], r: [Int64: Int] = [:]
        merged.forEachValue { m[$0, default: 0] += $1 }
        all.forEachValue { r[$0, default: 0] += $1 }
        #expect(m == r)
        let enc = JSONEncoder()
        enc.outputFormatting = .sortedKeys
        #expect(try! enc.encode(merged.summary()) == (try! enc.encode(all.summary())))
    }

    @Test("loop numbering gives keys 0, 1, 2… in order of first sight, through growth and collisions")
    func loopNumbering() {
        var n = LoopNumbering()
        // Keys that differ only in pid, only in loop, and in both; more than the table's first size.
        var keys: [LoopKey] = []
        for pid: Int64 in [0, 1, 2, -1, .max, .min] { for loop: UInt64 in [0, 1, 2, 64, 1 << 40, .max] { keys.append(LoopKey(pid: pid, loop: loop)) } }
        for (i, k) in keys.enumerated() {
            #expect(n.existing(k) == nil)
            #expect(n.number(k) == i)
            #expect(n.number(k) == i, "asked again at once (the one-entry cache)")
        }
        #expect(n.count == keys.count && n.keys == keys)
        for (i, k) in keys.enumerated().reversed() { #expect(n.existing(k) == i && n.number(k) == i) }
        #expect(n.existing(LoopKey(pid: 3, loop: 3)) == nil)
    }
}
