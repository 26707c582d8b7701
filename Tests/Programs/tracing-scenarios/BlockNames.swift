import Foundation
import RunLoopCore

/// `blocknames N K [--linger-ms M] [--ready FILE --go FILE]`: the main thread's loop performs N
/// perform-blocks named `bn-0` … `bn-<K-1>` in turn (names made at run time, not literals), runs
/// until all ran, and logs `LOG block <name>` per block in the order they ran. With `--ready` and
/// `--go`: then creates FILE `ready`, waits (up to 60 s) for `go` to exist and performs N more (a
/// session started between the two phases). `--linger-ms`: then sleeps M ms (the watchdog keeps
/// describing the pools meanwhile).
enum BlockNamesScenario {
    final class Ran: @unchecked Sendable { var names: [String] = [] }

    static func run(_ args: [String]) {
        guard args.count >= 2, let n = Int(args[0]), let k = Int(args[1]), n > 0, k > 0 else {
            FileHandle.standardError.write(Data("usage: tracing-scenarios blocknames N K [--linger-ms M] [--ready FILE --go FILE]\n".utf8))
            exit(2)
        }
        var linger = 0, ready: String?, go: String?
        var it = args.dropFirst(2).makeIterator()
        while let a = it.next() {
            switch a {
            case "--linger-ms": linger = Int(it.next() ?? "") ?? 0
            case "--ready": ready = it.next()
            case "--go": go = it.next()
            default: FileHandle.standardError.write(Data("blocknames: unknown option \(a)\n".utf8)); exit(2)
            }
        }
        let loop = RLRunLoop.current
        print("LOG loop \(loop.id) tid \(currentThreadID())")
        func phase() {
            let ran = Ran()
            for i in 0..<n {
                let name = "bn-\(i % k)"
                loop.performBlock(forMode: .default, name: name) { ran.names.append(name) }
            }
            var passes = 0
            while ran.names.count < n && passes < 1000 {
                _ = loop.run(mode: .default, seconds: 0.001, returnAfterSourceHandled: false)
                passes += 1
            }
            for name in ran.names { print("LOG block \(name)") }
        }
        phase()
        if let ready, let go {
            _ = FileManager.default.createFile(atPath: ready, contents: Data())
            var waited = 0
            while !FileManager.default.fileExists(atPath: go) && waited < 60_000 { usleep(1000); waited += 1 }
            print("LOG phase 2")
            phase()
        }
        if linger > 0 { usleep(useconds_t(linger) * 1000) }
    }
}
