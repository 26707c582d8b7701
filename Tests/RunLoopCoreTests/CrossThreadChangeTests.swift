import Foundation
import RunLoopCore
import RunLoopScenarios
import Testing

/// Changes made from another thread while the loop sleeps that CF on Linux cannot make (a timer's
/// tolerance: `CFRunLoopTimerSetTolerance` is Darwin-only; a source1 on any pollable fd): the
/// sleeping loop reacts at once. The changes both engines share are differential scenarios
/// (Tests/RunLoopScenarios/CrossThreadScenarios.swift, `DifferentialTests.crossThreadSequences`).
@Suite("Cross-thread changes to a sleeping loop", .serialized)
struct CrossThreadChangeTests {
    /// Seconds from `start` to now.
    private static func seconds(since start: RLInstant) -> Double { Double(nsOf(RLInstant.now - start)) / 1e9 }

    /// The loop sleeps until fire + tolerance (5 s, past the run's 3 s timeout); a tolerance
    /// lowered to 0 from another thread at 0.1 s makes the (past) fire date the deadline: the
    /// timer fires at once.
    @Test func aToleranceLoweredFromAnotherThreadBringsTheWakeForward() {
        let (firedAfter, result) = onFreshThread { () -> (Double, RLRunResult) in
            let loop = RLRunLoop.current
            let start = RLInstant.now
            var firedAfter = -1.0
            let t = RLTimer(fireAt: start + .milliseconds(50), tolerance: .seconds(5)) { _ in
                firedAfter = Self.seconds(since: start)
                RLRunLoop.current.stop()
            }
            loop.add(t, forMode: .default)
            fromAnotherThread(after: 0.1) { t.tolerance = .zero }
            let result = loop.run(mode: .default, seconds: 3, returnAfterSourceHandled: false)
            return (firedAfter, result)
        }
        #expect(result == .stopped)
        #expect(firedAfter >= 0.1 && firedAfter < 1, "fired after \(firedAfter) s")
    }

    /// A source1 whose pipe holds data, added from another thread to the mode the loop sleeps in
    /// (directly, through the common modes, or copied by `addCommonMode`): its descriptor joins
    /// the wait set being waited on, and the loop handles it at once.
    @Test(arguments: ["the mode", "the common modes", "addCommonMode"])
    func aSource1AddedFromAnotherThreadWakesTheSleepingLoop(_ how: String) throws {
        let got = try onFreshThread { () -> Result<[String], Error> in
            Result {
                let loop = RLRunLoop.current
                let tracking = RLMode("tracking")
                var fds: [Int32] = [0, 0]
                #expect(pipe(&fds) == 0)
                defer { close(fds[0]); close(fds[1]) }
                _ = "hi".withCString { write(fds[1], $0, 2) }
                let log = EventLog()
                let start = RLInstant.now
                let s = try RLSource1(fd: fds[0], interest: .read, name: "pipe") { _, fd, _ in
                    var buf = [UInt8](repeating: 0, count: 8)
                    log.add("read \(read(fd, &buf, 8)) prompt:\(Self.seconds(since: start) < 1)")
                }
                loop.add(RLSource0 {}, forMode: tracking)   // keeps the mode from being empty
                if how == "the common modes" { loop.addCommonMode(tracking) }
                if how == "addCommonMode" { try loop.add(s, forMode: .commonModes) }
                fromAnotherThread(after: 0.05) {
                    switch how {
                    case "the mode": try? loop.add(s, forMode: tracking)
                    case "the common modes": try? loop.add(s, forMode: .commonModes)
                    default: loop.addCommonMode(tracking)
                    }
                }
                log.add("result \(loop.run(mode: tracking, seconds: 2, returnAfterSourceHandled: true))")
                return log.all
            }
        }.get()
        #expect(got == ["read 2 prompt:true", "result handledSource"])
    }
}
