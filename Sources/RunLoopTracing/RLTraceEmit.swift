// Out-of-line emitters behind RLTrace's inlined checks. They run only while a session records
// the event: they take the names the inlined checks evaluated (the autoclosures run in the
// enabled branch only), convert them with `withCName` (`withCString`, nil for "") and call the C
// emitters of the `runloop` provider (Sources/CRunLoopTracepoints/runloop_emit.c). Names are
// passed as `String`, not as closures: no indirect call and no closure context per event.

#if !RLTRACE_DISABLED
import CRunLoopTracepoints

/// Calls `body` with `s` as a C string, or with nil when `s` is empty: the C emitters record NULL
/// and "" alike as "(unnamed)" (`rl_name` in runloop_emit.c), and most callouts (every
/// perform-block) have no name, so this skips `withCString`'s copy of a small string to the stack.
@inline(__always)
func withCName<R>(_ s: String, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    if s.isEmpty { return body(nil) }
    return s.withCString { body($0) }
}

extension RLTrace {
    @usableFromInline @inline(never)
    static func _loopCreated(_ loop: UInt64, _ iteration: UInt64, _ tid: Int32, _ threadName: String) {
        withCName(threadName) { rl_tp_loop_created(loop, iteration, tid, $0) }
    }
    @usableFromInline @inline(never)
    static func _loopDestroyed(_ loop: UInt64, _ iteration: UInt64, _ tid: Int32) {
        rl_tp_loop_destroyed(loop, iteration, tid)
    }
    @usableFromInline @inline(never)
    static func _runEnter(_ loop: UInt64, _ iteration: UInt64, _ mode: String, _ timeoutNs: Int64,
                          _ returnAfterSourceHandled: Bool, _ depth: UInt32) {
        withCName(mode) { rl_tp_run_enter(loop, iteration, $0, timeoutNs, returnAfterSourceHandled, depth) }
    }
    @usableFromInline @inline(never)
    static func _runExit(_ loop: UInt64, _ iteration: UInt64, _ mode: String, _ result: UInt8, _ depth: UInt32) {
        withCName(mode) { rl_tp_run_exit(loop, iteration, $0, result, depth) }
    }
    @usableFromInline @inline(never)
    static func _iterationBegin(_ loop: UInt64, _ iteration: UInt64) {
        rl_tp_iteration_begin(loop, iteration)
    }
    @usableFromInline @inline(never)
    static func _blockEntry(_ loop: UInt64, _ item: UInt64, _ name: String) {
        if !name.isEmpty && rl_tp_item_info_enabled() {
            name.withCString { rl_tp_item_info(loop, RLTraceCalloutKind.block.rawValue, item, 0, $0, nil) }
        }
        rl_tp_block_entry(loop, item)
    }
    @usableFromInline @inline(never)
    static func _loopInfo(_ loop: UInt64, _ pid: Int32, _ tid: Int32, _ procname: String, _ threadName: String) {
        withCName(procname) { p in withCName(threadName) { rl_tp_loop_info(loop, pid, tid, p, $0) } }
    }
    @usableFromInline @inline(never)
    static func _itemInfo(_ loop: UInt64, _ kind: UInt8, _ item: UInt64, _ order: Int64, _ name: String, _ mode: String) {
        withCName(name) { n in withCName(mode) { rl_tp_item_info(loop, kind, item, order, n, $0) } }
    }
    @usableFromInline @inline(never)
    static func _itemAdded(_ loop: UInt64, _ iteration: UInt64, _ kind: RLTraceCalloutKind, _ item: UInt64,
                           _ name: String, _ mode: String) {
        let n = name, m = mode
        withCName(n) { np in withCName(m) { mp in rl_tp_item_added(loop, iteration, kind.rawValue, item, np, mp) } }
    }
    @usableFromInline @inline(never)
    static func _itemRemoved(_ loop: UInt64, _ iteration: UInt64, _ kind: RLTraceCalloutKind, _ item: UInt64,
                             _ name: String, _ mode: String) {
        let n = name, m = mode
        withCName(n) { np in withCName(m) { mp in rl_tp_item_removed(loop, iteration, kind.rawValue, item, np, mp) } }
    }
    @usableFromInline @inline(never)
    static func _hangBegin(_ loop: UInt64, _ iteration: UInt64, _ hangID: UInt64, _ kind: UInt8, _ item: UInt64,
                           _ name: String, _ thresholdNs: UInt64, _ elapsedNs: UInt64, _ loopTid: Int32) {
        withCName(name) { rl_tp_hang_begin(loop, iteration, hangID, kind, item, $0, thresholdNs, elapsedNs, loopTid) }
    }
    @usableFromInline @inline(never)
    static func _hangStack(_ loop: UInt64, _ hangID: UInt64, _ sample: UInt32, _ elapsedNs: UInt64, _ frames: [UInt64]) {
        frames.withUnsafeBufferPointer {
            rl_tp_hang_stack(loop, hangID, sample, elapsedNs, $0.baseAddress, UInt32(min($0.count, Int(RL_HANG_MAX_FRAMES))))
        }
    }
    @usableFromInline @inline(never)
    static func _hangEnd(_ loop: UInt64, _ iteration: UInt64, _ hangID: UInt64, _ durationNs: UInt64, _ samples: UInt32) {
        rl_tp_hang_end(loop, iteration, hangID, durationNs, samples)
    }
}
#endif
