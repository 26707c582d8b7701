/// Work that threads of a pipeline take on when they would otherwise wait: a ``ByteSink``'s
/// encoding of queued buffers (``ByteSink/spareWork``), done by the threads that read and analyse
/// a trace in their waits instead of by a third thread that would share a core with one of them.
public protocol SpareWork: AnyObject, Sendable {
    /// Does one unit of the work on the calling thread (encodes one buffer); false when there is
    /// none to do now.
    func doSpareWork() -> Bool
    /// A thread that calls ``doSpareWork()`` whenever it would wait starts (until
    /// ``helperEnds()``): meanwhile the work is left to such threads where it can be.
    func helperStarts()
    /// The thread of a ``helperStarts()`` no longer helps.
    func helperEnds()
}
