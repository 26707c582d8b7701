import Foundation
import LTTngControl

/// Two hosts and their collector on one machine, for the tests of reports and views across hosts
/// (`FleetTests`, `TopFleetTests`): a relay daemon writing below a temporary directory, and two
/// session daemons whose host names are ``names`` (each in a UTS namespace of its own, so the relay
/// daemon files each trace under its own host). Needs root. ``stop()`` stops the session daemons,
/// then the relay daemon (their only client), and removes the directory.
struct TwoHostFleet {
    /// The two hosts' names.
    static let names = ["rl-fleet-a", "rl-fleet-b"]
    /// The relay daemon's output directory (`HOST/SESSION-DATE-TIME/…` below it).
    let relayOut: URL
    let relay: PrivateRelayDaemon
    /// The session daemons of ``names``, in that order.
    let daemons: [PrivateSessionDaemon]

    init(tag: String) throws {
        relayOut = FileManager.default.temporaryDirectory.appendingPathComponent("rltrace-\(tag)-relayd-\(getpid())")
        let relay = try PrivateRelayDaemon.start(outputDirectory: relayOut)
        var daemons: [PrivateSessionDaemon] = []
        do {
            for n in Self.names { daemons.append(try PrivateSessionDaemon.start(hostname: n)) }
        } catch {
            for d in daemons { d.stop() }
            relay.stop()
            try? FileManager.default.removeItem(at: relayOut)
            throw error
        }
        self.relay = relay
        self.daemons = daemons
    }

    func stop() {
        for d in daemons { d.stop() }
        relay.stop()
        try? FileManager.default.removeItem(at: relayOut)
    }
}
