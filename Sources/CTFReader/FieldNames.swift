/// The dotted names of a stream class's compiled fields (`trace.packet.header.magic`,
/// `event.fields.a.b`), which error messages name fields by, kept as a tree: each entry is one
/// name and the entry of what encloses it (a scope's entry has none).
///
/// Stored whole, one string per field, the names of a structure nested `d` deep took `d²/2`
/// components: a 2048-deep structure (ctf-testsuite's `struct-nest-n-deep`) compiled into ~70 MB of
/// names, with its prefixes, against babeltrace2's 12 MB for the whole run. Here a field takes its own
/// name, and its dotted name is put together when asked for — on an error, which ends the reading
/// anyway — except for the fields the generic walker names at every event it walks (``keepWhole(_:)``).
struct FieldNames {
    private var own: [String] = []
    private var parent: [Int32] = []
    /// Dotted names kept whole, by entry (nil: put together when asked for).
    private var whole: [String?] = []

    /// Adds the name `name`, enclosed by entry `parent` (-1: a scope, whose name is already dotted,
    /// such as `stream.event.header`); returns its entry.
    mutating func add(_ name: String, parent: Int32) -> Int32 {
        own.append(name)
        self.parent.append(parent)
        whole.append(nil)
        return Int32(own.count - 1)
    }

    /// Keeps entry `i`'s dotted name whole (for a name asked for at every event).
    mutating func keepWhole(_ i: Int32) { whole[Int(i)] = self[Int(i)] }

    /// The number of entries.
    var count: Int { own.count }

    /// The names from the outermost (the scope) to entry `i`'s own.
    func components(_ i: Int) -> [String] {
        var parts: [String] = []
        var j = i
        while j >= 0 && j < own.count {
            parts.append(own[j])
            j = Int(parent[j])
        }
        return parts.reversed()
    }

    /// Entry `i`'s dotted name ("" for an index that is not an entry).
    subscript(i: Int) -> String {
        guard i >= 0 && i < own.count else { return "" }
        if let w = whole[i] { return w }
        return components(i).joined(separator: ".")
    }

    /// The first entry whose dotted name is `dotted`, or nil.
    func firstIndex(of dotted: String) -> Int? {
        let last = dotted.split(separator: ".").last.map(String.init) ?? dotted
        return own.indices.first { own[$0] == last && self[$0] == dotted }
    }

    /// Characters stored, for tests of the growth with nesting.
    var storedCharacters: Int { own.reduce(0) { $0 + $1.utf8.count } + whole.reduce(0) { $0 + ($1?.utf8.count ?? 0) } }
}
