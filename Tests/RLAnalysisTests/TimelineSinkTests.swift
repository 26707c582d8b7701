import Foundation
import Testing
import CTFReader
import RLAnalysis

/// The timeline's memory is bounded by ``TimelineSink/holdLimitNs`` of trace time, whatever holds
/// its lines back: an iteration open for long (its nested run's iterations go on), or a run of
/// non-sleeping iterations whose spin is undecided while the next iteration stays open. Hand-made
/// events through the loop model, as the pipeline feeds it.
@Suite("timeline: lines wait at most the hold limit")
struct TimelineSinkTests {
    static let pid: Int64 = 77

    static func event(_ kind: RunLoopEvent.Kind, _ ts: Int64, iteration: UInt64 = 0, item: UInt64 = 0, b: Int64 = 0) -> RunLoopEvent {
        loopEvent(kind, ts, pid: pid, iteration: iteration, calloutKind: .source0, item: item, b: b)
    }

    /// `before` top-level iterations that do not sleep, then one whose source0 runs a nested run of
    /// `nested` iterations of 10 µs, each sleeping until a timer.
    static func events(before: Int, nested: Int) -> [RunLoopEvent] {
        var e: [RunLoopEvent] = []
        var t: Int64 = 1_000
        for n in 1...before {
            e.append(event(.iterationBegin, t, iteration: UInt64(n)))
            e.append(event(.iterationEnd, t + 1_000, iteration: UInt64(n)))
            t += 2_000
        }
        let outer = UInt64(before + 1)
        e.append(event(.iterationBegin, t, iteration: outer))
        e.append(event(.calloutEntry, t + 100, item: 9))
        e.append(event(.runEnter, t + 200, b: 1))
        t += 1_000
        for k in 1...nested {
            let n = outer + UInt64(k)
            e.append(event(.iterationBegin, t, iteration: n))
            e.append(event(.sleepBegin, t + 2_000, iteration: n))
            e.append(event(.wake, t + 9_000, iteration: n, b: 3))   // RLWakeReason.timer
            e.append(event(.iterationEnd, t + 10_000, iteration: n))
            t += 10_000
        }
        e.append(event(.runExit, t + 100, b: 1))
        e.append(event(.calloutExit, t + 200, item: RunLoopEvent.innermost))
        e.append(event(.iterationEnd, t + 300, iteration: outer))
        return e
    }

    /// The iteration numbers of the timeline's lines, in the order printed.
    static func run(_ events: [RunLoopEvent]) -> (numbers: [UInt64], sink: TimelineSink) {
        let out = ByteSink()
        let timeline = TimelineSink(out: out)
        let model = LoopModel(sink: timeline, names: NameTable())
        timeline.resolver = model
        timeline.traceBegins(at: events[0].ts, epochOffset: 0)
        for x in events { model.consume(x) }
        timeline.finish(end: events.last!.ts)
        let numbers = out.text.split(separator: "\n").compactMap { line -> UInt64? in
            guard let first = line.split(separator: " ").first, first.hasPrefix("#") else { return nil }
            return UInt64(first.dropFirst())
        }
        return (numbers, timeline)
    }

    @Test("a nested run of 0.5 s after iterations that did not sleep: at most 100 ms of lines wait, every line printed once",
          arguments: [1, 5, 99])
    func nestedRunAfterNonSleepingIterations(before: Int) {
        let nested = 50_000
        let (numbers, sink) = Self.run(Self.events(before: before, nested: nested))
        #expect(numbers.count == before + 1 + nested)
        #expect(Set(numbers) == Set((1...UInt64(before + 1 + nested))))
        // 100 ms of 10 µs iterations, and the iterations held for their spin.
        let bound = Int(TimelineSink.holdLimitNs / 10_000) + before + 2
        #expect(sink.peakWaiting <= bound, "peak \(sink.peakWaiting), bound \(bound)")
        // Within the hold limit the order is the begin order: the nested run's lines in order.
        let nestedOrder = numbers.filter { $0 > UInt64(before + 1) }
        #expect(nestedOrder == nestedOrder.sorted())
    }

    @Test("no hold past the limit: a short nested run keeps every line in begin order")
    func shortNestedRunKeepsBeginOrder() {
        let (numbers, sink) = Self.run(Self.events(before: 5, nested: 500))
        #expect(numbers == Array(1...506))
        #expect(sink.peakWaiting >= 500)
    }
}
