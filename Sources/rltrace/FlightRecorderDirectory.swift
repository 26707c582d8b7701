import Foundation

/// The note `record --on-hang` leaves in its output directory, so that `hangs DIR` can tell a
/// flight recorder that took no snapshot (no hang happened: exit 0) from a directory holding no
/// trace (exit 3). A hidden file: the snapshots are DIR's subdirectories, and nothing reads it as
/// a trace.
enum FlightRecorderNote {
    static let fileName = ".rltrace-on-hang"

    /// Writes the note: the command line's form of the recorder (`rltrace record --on-hang 100ms`).
    static func write(in dir: URL, settings: FlightRecorderSettings) {
        let text = "rltrace record --on-hang \(settings.threshold) --max-snapshots \(settings.maxSnapshots)\n"
        try? text.write(to: dir.appendingPathComponent(fileName), atomically: true, encoding: .utf8)
    }

    /// The note in `dir`, if `dir` is a flight recorder's directory.
    static func read(_ dir: String) -> String? {
        guard let s = try? String(contentsOfFile: dir + "/" + fileName, encoding: .utf8) else { return nil }
        return s.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// When every path is a flight recorder's directory that holds no snapshot (the program had no
/// hang of the threshold): the lines `hangs` prints instead of analysing; nil otherwise.
func flightRecordersWithoutHangs(_ paths: [String]) -> String? {
    guard !paths.isEmpty else { return nil }
    var lines = ""
    for p in paths {
        guard let note = FlightRecorderNote.read(p), !holdsTrace(p) else { return nil }
        lines += "no hang was recorded: \(p) is a flight recorder's directory (\(note)) and holds no snapshot\n"
    }
    return lines
}
