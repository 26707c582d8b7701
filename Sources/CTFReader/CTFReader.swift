/// Namespace of the CTF 1.8 reader (filled in by the reader issue).
public enum CTFReaderInfo {
    /// The CTF version this reader decodes.
    public static let ctfVersion = "1.8"
}
