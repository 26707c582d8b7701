/// Whether callouts' item names match an `--item` glob, decided once per name instead of once per
/// callout: the answer is kept per ``NameTable`` id (a name id always means the same string), and
/// an item's name id is found through a direct-mapped cache in front of the model's name table.
/// (Building each callout's name as a `String` and matching it made `report --item` twice as
/// slow as `report`.)
final class ItemGlobMatcher {
    /// The glob (`*`, `?`; everything else literal: ``globMatch(_:_:)``).
    let glob: String
    /// Per name id: 0 not decided yet, 1 matches, 2 does not.
    private var byName: [UInt8] = []
    /// The same for the empty name (an item never named) and for the main queue's `main-queue`.
    private var unnamed: UInt8 = 0, mainQueue: UInt8 = 0
    /// Named items' name ids, by `(pid, item, kind)`: an item keeps its name once it has one
    /// (an item not named yet is looked up again, so its name counts once it is known).
    private var cache: [(pid: Int64, item: UInt64, kind: CalloutKind, name: Int32)]

    /// A matcher for `glob`.
    init(_ glob: String) {
        self.glob = glob
        cache = Array(repeating: (.min, 0, .observer, -1), count: 256)
    }

    /// Whether callout `c` of a loop of process `pid` is of an item whose name matches (the name
    /// ``LoopModel/name(of:pid:)`` gives it: `""` for an item never named).
    @inline(__always)
    func matches(_ c: CalloutRecord, pid: Int64, model: LoopModel?) -> Bool {
        guard let model else { return decide(&unnamed, "") }
        switch c.kind {
        case .mainQueue: return decide(&mainQueue, "main-queue")
        case .block: return matches(nameID: c.blockName, in: model.names)
        default:
            let slot = Int(truncatingIfNeeded: (c.item &* 0x9E37_79B9_7F4A_7C15) >> 56) ^ Int(c.kind.rawValue)
            let e = cache[slot]
            if e.item == c.item && e.pid == pid && e.kind == c.kind { return matches(nameID: e.name, in: model.names) }
            let id = model.nameID(of: c.kind, item: c.item, pid: pid)
            if id >= 0 { cache[slot] = (pid, c.item, c.kind, id) }
            return matches(nameID: id, in: model.names)
        }
    }

    /// Whether an item of `kind` whose name id is `id` (-1: never named) matches: the main queue
    /// by its name `main-queue`.
    @inline(__always)
    func matches(kind: CalloutKind, nameID id: Int32, in names: NameTable?) -> Bool {
        if kind == .mainQueue { return decide(&mainQueue, "main-queue") }
        guard let names else { return decide(&unnamed, "") }
        return matches(nameID: id, in: names)
    }

    /// Whether the name `id` of `names` matches (-1: the empty name).
    @inline(__always)
    func matches(nameID id: Int32, in names: NameTable) -> Bool {
        guard id >= 0 else { return decide(&unnamed, "") }
        let i = Int(id)
        if i >= byName.count { byName.append(contentsOf: repeatElement(0, count: i + 1 - byName.count)) }
        if byName[i] != 0 { return byName[i] == 1 }
        let m = globMatch(glob, names[id])
        byName[i] = m ? 1 : 2
        return m
    }

    @inline(__always)
    private func decide(_ state: inout UInt8, _ name: String) -> Bool {
        if state == 0 { state = globMatch(glob, name) ? 1 : 2 }
        return state == 1
    }
}
