// The Swift face of the hang watchdog's stack sampler (Sources/CRunLoopHang, docs/tracepoints.md
// "Hangs"): RunLoopCore's watchdog drives it through these calls and imports nothing else of the C
// side. Built with RLTRACE_DISABLED=1, every call does nothing (and reports "no signal").

#if !RLTRACE_DISABLED
import CRunLoopHang
#endif

/// Samples a hung loop thread's stack from a signal handler on that thread, which emits
/// `runloop:hang_stack` there (one capture at a time; the watchdog's thread is the only caller).
public enum RLHangSampler {
    /// At most this many frames are recorded per sample (`RL_HANG_MAX_FRAMES`).
    #if RLTRACE_DISABLED
    public static let maxFrames = 64
    #else
    public static let maxFrames = Int(RL_HANG_MAX_FRAMES)
    #endif

    /// On a loop's thread at its first run: unblocks the capture signal for the calling thread (a
    /// thread that inherited a mask blocking it would never be sampled). Installs no handler.
    public static func prepareThread() {
        #if !RLTRACE_DISABLED
        rl_hang_thread_prepare()
        #endif
    }

    /// Installs the capture signal's handler (once per process; later calls return the same
    /// number) and pre-warms the unwinder. Returns the signal number, or -1 when none is free.
    public static func installCapture() -> Int32 {
        #if RLTRACE_DISABLED
        return -1
        #else
        return rl_hang_capture_install()
        #endif
    }

    /// Samples the stack of thread `tid` of this process during hang `hangID` of `loop`: its handler
    /// records `hang_stack` (sample number `sample`, elapsed time since `startNs`) when a session
    /// records it. Waits at most `timeoutNs` for the handler. Returns the number of frames captured,
    /// or -1 when no signal was sent or the handler did not run in time.
    public static func capture(thread tid: Int32, loop: UInt64, hangID: UInt64, sample: UInt32,
                               startNs: UInt64, timeoutNs: UInt64) -> Int32 {
        #if RLTRACE_DISABLED
        return -1
        #else
        return rl_hang_capture(tid, loop, hangID, sample, startNs, timeoutNs)
        #endif
    }

    /// The frames of the last successful capture, innermost first.
    public static var lastFrames: [UInt64] {
        #if RLTRACE_DISABLED
        return []
        #else
        var out = [UInt64](repeating: 0, count: maxFrames)
        let n = out.withUnsafeMutableBufferPointer { rl_hang_last_frames($0.baseAddress, UInt32($0.count)) }
        return Array(out.prefix(Int(n)))
        #endif
    }

    /// How many capture signals this process has sent (a diagnostic counter).
    public static var signalsSent: UInt64 {
        #if RLTRACE_DISABLED
        return 0
        #else
        return rl_hang_signals_sent()
        #endif
    }
}
