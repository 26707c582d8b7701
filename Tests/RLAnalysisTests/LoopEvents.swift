import RLAnalysis
import RunLoopSchema

/// A hand-made event of loop 1 of process `pid` (loop id `pid << 32 | 1`, as RunLoopCore numbers
/// them), as the pipeline hands events to the loop model.
func loopEvent(_ kind: RunLoopEvent.Kind, _ ts: Int64, pid: Int64, iteration: UInt64 = 0, calloutKind: RLCalloutKind,
               item: UInt64 = 0, a: Int64 = 0, b: Int64 = 0) -> RunLoopEvent {
    var e = RunLoopEvent(kind: kind, ts: ts)
    e.pid = pid
    e.loop = (UInt64(pid) << 32) | 1
    e.iteration = iteration
    e.calloutKind = calloutKind
    e.item = item
    e.a = a
    e.b = b
    return e
}
