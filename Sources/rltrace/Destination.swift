import ArgumentParser
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where `-o` sends a recorded trace (`record`, `demo`, and the relay daemon `top` starts): a
/// local directory, or a URL of LTTng's (`net://HOST…` and its kin, a relay daemon).
enum TraceDestination: Equatable {
    /// A local directory (created if its parent exists).
    case directory(String)
    /// A relay daemon's URL (`net://`, `net4://`, `net6://`, `tcp://`, `tcp4://`, `tcp6://`).
    case relayDaemon(String)
    /// Some other `SCHEME://` that is not a path.
    case unsupportedURL(String)

    /// The schemes LTTng's `--set-url` reads as a relay daemon's (lttng-create(1)).
    static let relaySchemes = ["net", "net4", "net6", "tcp", "tcp4", "tcp6"]

    /// What `text` names. `file://PATH` is the directory PATH.
    init(_ text: String) {
        guard let r = text.range(of: "://") else { self = .directory(text); return }
        let scheme = text[..<r.lowerBound].lowercased()
        if scheme == "file" { self = .directory(String(text[r.upperBound...])); return }
        if TraceDestination.relaySchemes.contains(scheme) { self = .relayDaemon(text); return }
        // A scheme is letters, digits, + - . after a letter (RFC 3986); anything else is a path.
        let isScheme = scheme.first?.isLetter == true && scheme.allSatisfy { $0.isLetter || $0.isNumber || "+-.".contains($0) }
        self = isScheme ? .unsupportedURL(text) : .directory(text)
    }
}

/// Where `record -o` sends the trace: a local directory, or a relay daemon.
enum RecordOutput: Equatable {
    /// A local directory (absolute; its parent exists).
    case directory(URL)
    /// A relay daemon's URL as lttng-create(1)'s `--set-url` takes it (`net://HOST[:CONTROL[:DATA]]`).
    case relayDaemon(String)

    /// The local directory, if the trace is written on this host.
    var localDirectory: URL? { if case .directory(let d) = self { return d } else { return nil } }

    /// Where the trace goes, for messages: the directory's path or the URL.
    var place: String {
        switch self {
        case .directory(let d): return d.path
        case .relayDaemon(let u): return "the relay daemon at \(u)"
        }
    }
}

/// What `record -o TEXT` names: a local directory (as ``localTraceDirectory(_:option:)`` checks
/// it), or a relay daemon's URL (its host named, its ports numbers; exit 64 otherwise).
func recordOutput(_ text: String) throws -> RecordOutput {
    guard case .relayDaemon(let url) = TraceDestination(text) else {
        return .directory(URL(fileURLWithPath: try localTraceDirectory(text)))
    }
    guard relayEndpoint(url) != nil else {
        warn("rltrace: -o \(url): not a relay daemon's URL: net://HOST, net://HOST:CONTROL_PORT or net://HOST:CONTROL_PORT:DATA_PORT (ports 1…65535; the relay daemon's defaults are 5342 and 5343)")
        throw ExitCode(64)
    }
    return .relayDaemon(url)
}

/// The host and control port of a relay daemon's URL (`SCHEME://HOST[:CONTROL[:DATA]]`, HOST
/// a name, an IPv4 address or a bracketed IPv6 one; 5342 when no port is given); nil when the
/// URL is not of that form (no host, a path, a port that is not 1…65535, more than two ports).
func relayEndpoint(_ url: String) -> (host: String, controlPort: Int)? {
    guard let r = url.range(of: "://") else { return nil }
    let rest = url[r.upperBound...]
    var host = Substring(""), ports = Substring("")
    if rest.hasPrefix("[") {
        guard let close = rest.firstIndex(of: "]") else { return nil }
        host = rest[rest.index(after: rest.startIndex)..<close]
        ports = rest[rest.index(after: close)...]
    } else if let colon = rest.firstIndex(of: ":") {
        host = rest[..<colon]; ports = rest[colon...]
    } else {
        host = rest
    }
    let portList = ports.split(separator: ":", omittingEmptySubsequences: false).dropFirst()
    guard !host.isEmpty, !host.contains("/"), !ports.contains("/"), portList.count <= 2,
          ports.isEmpty || ports.hasPrefix(":") else { return nil }
    let numbers = portList.map { Int($0) ?? 0 }
    guard numbers.allSatisfy({ (1...65535).contains($0) }) else { return nil }
    return (String(host), numbers.first ?? 5342)
}

/// `record -o net://…`: LTTng accepts a snapshot session's URL without connecting, so a relay
/// daemon that is not there would only show as snapshots that never arrive: its control port is
/// tried first (a TCP connection, closed at once; 5 s at most). Exit 6 naming the URL when
/// nothing answers.
func checkRelayDaemonAnswers(_ output: RecordOutput) throws {
    guard case .relayDaemon(let url) = output, let (host, port) = relayEndpoint(url) else { return }
    if tcpConnects(host: host, port: port, timeoutMs: 5000) { return }
    warn("rltrace: -o \(url): nothing answers at \(host) port \(port) (the relay daemon's control port): is an lttng-relayd listening at \(url)? (lttng-relayd -d on the collector; its default ports are 5342 and 5343)")
    throw ExitCode(6)
}

/// Whether a TCP connection to `host`:`port` (any address it resolves to) succeeds within `timeoutMs`.
func tcpConnects(host: String, port: Int, timeoutMs: Int32) -> Bool {
    var hints = addrinfo()
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    var list: UnsafeMutablePointer<addrinfo>?
    guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else { return false }
    defer { freeaddrinfo(first) }
    var ai: UnsafeMutablePointer<addrinfo>? = first
    while let a = ai {
        defer { ai = a.pointee.ai_next }
        let fd = socket(a.pointee.ai_family, a.pointee.ai_socktype | Int32(SOCK_NONBLOCK.rawValue), a.pointee.ai_protocol)
        guard fd >= 0 else { continue }
        defer { close(fd) }
        if connect(fd, a.pointee.ai_addr, a.pointee.ai_addrlen) == 0 { return true }
        guard errno == EINPROGRESS else { continue }
        var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        guard poll(&p, 1, timeoutMs) == 1 else { continue }
        var err: Int32 = 0
        var len = socklen_t(MemoryLayout<Int32>.size)
        if getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0, err == 0 { return true }
    }
    return false
}

/// The local directory `-o` names (for `option`, e.g. "-o"): a relay daemon's URL is refused
/// (exit 64: only `record` streams to a relay daemon), and so is a directory whose parent does
/// not exist (exit 1, naming the parent).
func localTraceDirectory(_ text: String, option: String = "-o") throws -> String {
    switch TraceDestination(text) {
    case .relayDaemon(let url):
        warn("rltrace: \(option) \(url): only `rltrace record` streams to a relay daemon; write to a local directory (\(option) DIR), or watch a live session with `rltrace top -- COMMAND`")
        throw ExitCode(64)
    case .unsupportedURL(let url):
        warn("rltrace: \(option) \(url): not a directory, nor a URL rltrace can record to (a local directory, or file://DIR)")
        throw ExitCode(64)
    case .directory(let path):
        if path.isEmpty { warn("rltrace: \(option): an empty path"); throw ExitCode(64) }
        let absolute = URL(fileURLWithPath: path).standardizedFileURL
        var st = stat()
        if stat(absolute.path, &st) == 0 {
            guard (st.st_mode & S_IFMT) == S_IFDIR else {
                warn("rltrace: \(option) \(path): exists and is not a directory")
                throw ExitCode(1)
            }
            return absolute.path
        }
        let parent = absolute.deletingLastPathComponent().path
        guard stat(parent, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR else {
            warn("rltrace: \(option) \(path): the directory \(parent) does not exist (create it first)")
            throw ExitCode(1)
        }
        return absolute.path
    }
}

/// `demo -o DIR`: a directory that already holds a demo's trace or HTML report is not written
/// into without `--force` (exit 2), as `record` keeps an existing trace.
func refuseExistingDemo(trace: String, html: String, force: Bool) throws {
    guard !force else { return }
    let existing = [holdsTrace(trace) ? trace : nil, FileManager.default.fileExists(atPath: html) ? html : nil].compactMap { $0 }
    guard existing.isEmpty else {
        warn("rltrace: \(existing.joined(separator: " and ")) already exist\(existing.count == 1 ? "s" : ""); choose another -o, or --force to write into the directory anyway")
        throw ExitCode(2)
    }
}
