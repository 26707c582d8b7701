/// Namespace of the LTTng session control library (filled in by the reader/rltrace issues).
public enum LTTngControlInfo {
    /// The name of LTTng's control command.
    public static let lttngCommand = "lttng"
}
