import Dispatch
import Foundation
import RunLoopCore
import RunLoopScenarios
import Synchronization

// The differential scenarios of RunLoopCoreTests (RunLoopCore vs CFRunLoop; defined once, in the
// RunLoopScenarios target), replayed here on RunLoopCore alone under a tracing session with a traced
// engine that names every item and logs every callout as it starts, so the test can compare the
// trace's callout entries and run exits with what the loop really did.

enum DifferentialReplay {
    /// Runs every scenario on a fresh thread (a fresh loop) and prints, per scenario `k`:
    /// `LOG d<k> loop <id> <name>`, then its `callout ...` and `run ...` lines.
    static func run() {
        for (k, (name, scenario)) in differentialScenarios.enumerated() {
            let done = DispatchSemaphore(value: 0)
            let out = Mutex<[String]>([])
            let t = Thread {
                let e = RLEngine(traced: true)
                let log = EventLog()
                scenario(e, log)
                let lines = ["loop \(e.loop.id) \(name)"] + e.truth.all
                out.withLock { $0 = lines }
                done.signal()
            }
            t.stackSize = 4 << 20
            t.start()
            done.wait()
            for l in out.withLock({ $0 }) { print("LOG d\(k) " + l) }
        }
    }
}

