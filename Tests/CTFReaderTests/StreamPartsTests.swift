import Foundation
import Testing
@testable import CTFReader

/// A stream's parts (docs/reader.md, "The parts of a stream"): the stream class is linked once
/// for all the streams of the class, each stream keeps its own decoding state and its own medium.
@Suite("the parts of a stream: one link per stream class", .serialized)
struct StreamPartsTests {
    @Test("the streams of one class share one link; each has its own state and medium, and decodes its own events")
    func oneLinkPerClass() throws {
        let dir = try MergeOrderTests.write(streams: 5, events: 120)
        let before = LinkedStreamClass.made.load(ordering: .relaxed)
        let set = try CTFTraceSet(paths: [dir])
        #expect(LinkedStreamClass.made.load(ordering: .relaxed) - before == 1, "5 streams of one class: linked once")
        #expect(set.streams.count == 5)
        let first = set.streams[0]
        #expect(set.streams.allSatisfy { $0.linked === first.linked })
        #expect(Set(set.streams.map { ObjectIdentifier($0.medium) }).count == 5)
        #expect(Set(set.streams.map { Int(bitPattern: UnsafeRawPointer($0.hot)) }).count == 5)
        #expect(Set(set.streams.map { Int(bitPattern: UnsafeRawPointer($0.slots)) }).count == 5)
        // Each stream decodes the events it was written with (the writer's timestamps: 5 000 cycles
        // on, 1 000 s after the epoch), the shared tables notwithstanding, read alternately.
        var counts = [Int](repeating: 0, count: 5)
        var last = [Int64](repeating: 0, count: 5)
        var live = Set(0..<5)
        while !live.isEmpty {
            for i in live.sorted() {
                let s = set.streams[i]
                if try s.next() {
                    #expect(s.timestamp >= last[i] && s.timestamp > 1_000_000_000_000, "stream \(i) event \(counts[i])")
                    last[i] = s.timestamp
                    counts[i] += 1
                } else { live.remove(i) }
            }
        }
        #expect(counts == [120, 120, 120, 120, 120])
        // Another trace opened links its own class.
        let again = try CTFTraceSet(paths: [dir])
        #expect(LinkedStreamClass.made.load(ordering: .relaxed) - before == 2)
        #expect(again.streams[0].linked !== first.linked)
    }
}
