/// Which binary holds an address of a traced process, from the trace's own
/// `lttng_ust_statedump:bin_info` / `lttng_ust_lib:load` events (``ModuleRecord``).
public struct ModuleMap: Sendable {
    private var byPid: [Int64: [ModuleRecord]] = [:]

    /// Indexes `modules` by process.
    public init(_ modules: [ModuleRecord]) {
        for m in modules { byPid[m.pid, default: []].append(m) }
    }

    /// Whether the trace reported any binary.
    public var isEmpty: Bool { byPid.isEmpty }

    /// The module of `pid` mapping `address` at time `ts` (a module loaded after `ts` still
    /// counts when nothing else maps it: a state dump may be recorded after the samples).
    public func module(pid: Int64, address: UInt64, at ts: Int64) -> ModuleRecord? {
        guard let list = byPid[pid] else { return nil }
        var fallback: ModuleRecord?
        for m in list.reversed() where address >= m.baddr && address - m.baddr < m.memsz {
            if m.loadedAt <= ts && ts < m.unloadedAt { return m }
            if fallback == nil { fallback = m }
        }
        return fallback
    }

    /// The address to look up in the module's file: relative to its load address for a
    /// position-independent object (a shared library, a PIE executable), as is otherwise.
    public static func fileAddress(_ address: UInt64, in m: ModuleRecord) -> UInt64 {
        m.isPIC ? address &- m.baddr : address
    }
}
