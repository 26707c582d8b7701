import RunLoopSchema

/// Whether callouts' item names match an `--item` glob, decided once per name instead of once per
/// callout: the answer is kept per ``NameTable`` id (a name id always means the same string); an
/// item's name id comes from the model (``LoopModel/nameID(of:item:pid:)``).
/// (Building each callout's name as a `String` and matching it made `report --item` twice as
/// slow as `report`.)
final class ItemGlobMatcher {
    /// The glob (`*`, `?`; everything else literal: ``globMatch(_:_:)``).
    let glob: String
    /// Per name id: 0 not decided yet, 1 matches, 2 does not.
    private var byName: [UInt8] = []
    /// The same for the empty name (an item never named) and for the main queue's `main-queue`.
    private var unnamed: UInt8 = 0, mainQueue: UInt8 = 0
    /// A matcher for `glob`.
    init(_ glob: String) { self.glob = glob }

    /// Whether callout `c` of a loop of process `pid` is of an item whose name matches (the name
    /// ``LoopModel/name(of:pid:)`` gives it: `""` for an item never named).
    @inline(__always)
    func matches(_ c: CalloutRecord, pid: Int64, model: LoopModel?) -> Bool {
        guard let model else { return decide(&unnamed, "") }
        switch c.kind {
        case .mainQueue: return decide(&mainQueue, "main-queue")
        case .block where !c.namedByItem: return matches(nameID: c.blockName, in: model.names)
        default: return matches(nameID: model.nameID(of: c.kind, item: c.item, pid: pid), in: model.names)
        }
    }

    /// Whether an item of `kind` whose name id is `id` (-1: never named) matches: the main queue
    /// by its name `main-queue`.
    @inline(__always)
    func matches(kind: RLCalloutKind, nameID id: Int32, in names: NameTable?) -> Bool {
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
