/// Transforms what a ``ByteSink`` writes on its way to the file (``ByteSink/encoder``): the sink
/// hands over its buffers in order, each holding whole records unless a single write was larger
/// than a buffer, and the encoder passes on what to write, in as many pieces as it likes.
///
/// Called on one thread at a time — the caller's while the output is small, then the sink's writer
/// thread — so an encoder needs no lock; it may keep bytes between calls (an incomplete record)
/// and gives them back in ``finish(_:)``. (Whole buffers may also go to encoders it makes for
/// other threads: ``makeWholeBufferEncoder()``.)
public protocol ByteSinkEncoder: AnyObject {
    /// Encodes `bytes` (the next ones written), passing the encoded bytes to `emit`.
    func encode(_ bytes: UnsafeBufferPointer<UInt8>, emit: (UnsafeBufferPointer<UInt8>) -> Void)
    /// ``encode(_:emit:)``, told whether `bytes` are whole records: `true` when no write in them
    /// was larger than a buffer (every write of the sink then lies wholly in one buffer, so a
    /// buffer begins and ends where writes do). The default ignores it.
    func encode(_ bytes: UnsafeBufferPointer<UInt8>, whole: Bool, emit: (UnsafeBufferPointer<UInt8>) -> Void)
    /// The output ends: passes what is still held to `emit`.
    func finish(_ emit: (UnsafeBufferPointer<UInt8>) -> Void)
    /// Another encoder, for another thread, whose encoding of a buffer of whole writes
    /// (``encode(_:whole:emit:)`` with `whole` true) is the bytes this one would give for it in
    /// order — for an encoder that holds nothing across a boundary between writes, so that such a
    /// buffer's encoding depends on nothing before it; the sink's writer then lets threads that
    /// would wait encode whole buffers (``SpareWork``). nil (the default): every buffer goes
    /// through this encoder, in order. Called on any thread, also while this encoder encodes on
    /// another: it must read nothing ``encode(_:whole:emit:)`` changes.
    func makeWholeBufferEncoder() -> ByteSinkEncoder?
}

extension ByteSinkEncoder {
    public func makeWholeBufferEncoder() -> ByteSinkEncoder? { nil }

    public func encode(_ bytes: UnsafeBufferPointer<UInt8>, whole: Bool, emit: (UnsafeBufferPointer<UInt8>) -> Void) {
        encode(bytes, emit: emit)
    }
}
