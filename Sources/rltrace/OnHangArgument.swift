/// `record --on-hang=THRESHOLD`: ArgumentParser has no option whose value may be left out, so
/// `--on-hang` is a flag followed by an optional positional threshold (`--on-hang 100ms`); the
/// `=` form is split into those two words here, before parsing. Only `record`'s own options are
/// looked at: nothing after `--` (the program's arguments) is changed.
func splittingOnHangValue(_ arguments: [String]) -> [String] {
    guard arguments.first == "record" else { return arguments }
    var out: [String] = []
    for (i, a) in arguments.enumerated() {
        if a == "--" { return out + arguments[i...] }
        if a.hasPrefix("--on-hang=") {
            out += ["--on-hang", String(a.dropFirst("--on-hang=".count))]
        } else {
            out.append(a)
        }
    }
    return out
}
