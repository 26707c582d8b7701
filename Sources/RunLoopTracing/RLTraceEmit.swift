// The hand-written parts of RLTrace: `blockEntry` and the out-of-line emitters behind the inlined
// checks of RunLoopSchema's `swiftEmitter: .handWritten` and `.handWrittenHelper` events
// (`block_entry`, `hang_stack`); the others are generated (RLTrace+Events.swift,
// RLTrace+Generated.swift). The helpers run only while a session records the event: they take the names the inlined checks evaluated (the autoclosures run in the
// enabled branch only), convert them with `withCName` (`withCString`, nil for "") and call the C
// emitters of the `runloop` provider (Sources/CRunLoopTracepoints/runloop_emit.c). Names are
// passed as `String`, not as closures: no indirect call and no closure context per event.

#if !RLTRACE_DISABLED
import CRunLoopTracepoints
#endif
import RunLoopSchema

// ---- hand-written: block_entry's public function (RunLoopSchema's `swiftEmitter: .handWritten`) ----
// Not generated because its `name` is not a field of `block_entry` (ids only, like every callout
// entry): the helper describes a named block with `item_info` first (docs/tracepoints.md,
// "Constant pools"). Otherwise the same shape as the generated functions (RLTrace+Events.swift).
extension RLTrace {
    /// Entry into a perform-block; `item` is the block's sequence number. A named block is
    /// described first (`item_info`, kind `block`; `name` is evaluated only then): blocks have no
    /// registration to describe them, and most have no name.
    @inlinable @inline(__always) public static func blockEntry(loop: UInt64, item: UInt64, name: @autoclosure () -> String) {
        #if !RLTRACE_DISABLED
        if rl_tp_block_entry_enabled() { _blockEntry(loop, item, name()) }
        #endif
    }
}
// ---- end hand-written: block_entry's public function ----

#if !RLTRACE_DISABLED

/// Calls `body` with `s` as a C string, or with nil when `s` is empty: the C emitters record NULL
/// and "" alike as "(unnamed)" (`rl_name` in runloop_emit.c), and most callouts (every
/// perform-block) have no name, so this skips `withCString`'s copy of a small string to the stack.
@inline(__always)
func withCName<R>(_ s: String, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    if s.isEmpty { return body(nil) }
    return s.withCString { body($0) }
}

extension RLTrace {
    // ---- hand-written: block_entry (names a block through item_info first) ----
    @usableFromInline @inline(never)
    static func _blockEntry(_ loop: UInt64, _ item: UInt64, _ name: String) {
        if !name.isEmpty && rl_tp_item_info_enabled() {
            name.withCString { rl_tp_item_info(loop, RLCalloutKind.block.rawValue, item, 0, $0, nil) }
        }
        rl_tp_block_entry(loop, item)
    }
    // ---- end hand-written: block_entry ----

    @usableFromInline @inline(never)
    static func _hangStack(_ loop: UInt64, _ hangID: UInt64, _ sample: UInt32, _ elapsedNs: UInt64, _ frames: [UInt64]) {
        frames.withUnsafeBufferPointer {
            rl_tp_hang_stack(loop, hangID, sample, elapsedNs, $0.baseAddress, UInt32(min($0.count, RLHangSampler.maxFrames)))
        }
    }
}
#endif
