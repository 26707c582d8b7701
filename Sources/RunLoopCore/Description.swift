#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CRunLoopShims
import DequeModule
import Synchronization

extension RLRunLoop {
    /// A dump of the loop like `CFCopyDescription` of a CFRunLoop: its state, common modes, common
    /// items, and every mode with its sources (order, fd), observers (activities, order) and
    /// timers (fire date, interval, tolerance).
    public var description: String {
        locked {
            var out = "<RLRunLoop #\(id) tid \(threadID)\(isMainLoop ? " main" : "")> {wakeup fd = \(waiter.wakeFD), timer fd = \(waiter.timerFD), "
            out += "stopped = \(perRun[perRun.count - 1].stopped), ignoreWakeUps = \(ignoresWakeUps.load(ordering: .relaxed)), "
            out += "sleeping = \(sleeping), current mode = \(currentModeState?.takeUnretainedValue().name.rawValue ?? "(none)"),\n"
            out += "common modes = {\(commonModeNames.map(\.rawValue).sorted().joined(separator: ", "))},\n"
            out += "common mode items = {\n"
            for s in commonSources0 { out += "\t\(s)\n" }
            for s in commonSources1 { out += "\t\(s)\n" }
            for o in commonObservers { out += "\t\(o)\n" }
            for t in commonTimers.values.sorted(by: { $0.id < $1.id }) { out += "\t\(t)\n" }
            out += "},\nmodes = {\n"
            for name in modes.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
                let m = modes[name]!
                out += "\t<mode \(name.rawValue)> {wait set fd = \(m.waitSet.fd), stopped = \(m.stopped)\(m.mainQueueRegistered ? ", main queue fd = \(mainQueueFD)" : "")\n"
                out += "\t\tsources0 = {\(m.sources0.isEmpty ? "" : "\n" + m.sources0.map { "\t\t\t\($0)" }.joined(separator: "\n") + "\n\t\t")}\n"
                out += "\t\tsources1 = {\(m.sources1.isEmpty ? "" : "\n" + m.sources1.values.sorted { $0.id < $1.id }.map { "\t\t\t\($0)" }.joined(separator: "\n") + "\n\t\t")}\n"
                out += "\t\tobservers = {\(m.observers.isEmpty ? "" : "\n" + m.observers.map { "\t\t\t\($0)" }.joined(separator: "\n") + "\n\t\t")}\n"
                let timers = m.timers.liveTimers().sorted { ($0.nextFireDate ?? .distantFuture) < ($1.nextFireDate ?? .distantFuture) }
                out += "\t\ttimers = {\(timers.isEmpty ? "" : "\n" + timers.map { "\t\t\t\($0)" }.joined(separator: "\n") + "\n\t\t")}\n"
                out += "\t}\n"
            }
            out += "}}"
            return out
        }
    }
}
