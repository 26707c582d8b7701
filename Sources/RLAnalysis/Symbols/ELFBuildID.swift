import Foundation

/// Reads the GNU build id (`NT_GNU_BUILD_ID` note) of an ELF file, to check that a binary found
/// on this machine is the one the trace saw. Nil when the file is not a readable 64- or 32-bit
/// little-endian ELF file or has no build id.
public func elfBuildID(path: String) -> [UInt8]? {
    // A path named by a trace is untrusted: opened without blocking (a FIFO would block a plain
    // open until a writer came), and read only when it is a regular file.
    guard isRegularFile(path) else { return nil }
    let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    var st = stat()
    guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { close(fd); return nil }
    let h = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
    func read(_ offset: UInt64, _ count: Int) -> [UInt8]? {
        guard count > 0, count < 1 << 24, (try? h.seek(toOffset: offset)) != nil,
              let d = try? h.read(upToCount: count), d.count == count else { return nil }
        return [UInt8](d)
    }
    guard let ident = read(0, 64), ident[0] == 0x7F, ident[1] == 0x45, ident[2] == 0x4C, ident[3] == 0x46,
          ident[5] == 1 else { return nil }                                  // little-endian only
    let is64 = ident[4] == 2
    func u(_ b: [UInt8], _ at: Int, _ n: Int) -> UInt64 {
        var v: UInt64 = 0
        for i in (0..<n).reversed() { v = v << 8 | UInt64(b[at + i]) }
        return v
    }
    let phoff = is64 ? u(ident, 0x20, 8) : u(ident, 0x1C, 4)
    let phentsize = Int(u(ident, is64 ? 0x36 : 0x2A, 2)), phnum = Int(u(ident, is64 ? 0x38 : 0x2C, 2))
    guard phentsize > 0, phnum > 0, phnum < 4096, let ph = read(phoff, phentsize * phnum) else { return nil }
    for i in 0..<phnum {
        let p = i * phentsize
        guard u(ph, p, 4) == 4 else { continue }                              // PT_NOTE
        let off = is64 ? u(ph, p + 8, 8) : u(ph, p + 4, 4)
        let size = Int(is64 ? u(ph, p + 32, 8) : u(ph, p + 16, 4))
        guard let notes = read(off, size) else { continue }
        var at = 0
        while at + 12 <= notes.count {
            let namesz = Int(u(notes, at, 4)), descsz = Int(u(notes, at + 4, 4)), type = u(notes, at + 8, 4)
            let nameAt = at + 12, descAt = nameAt + (namesz + 3) & ~3
            guard descAt + descsz <= notes.count else { break }
            if type == 3 && namesz == 4 && notes[nameAt..<nameAt + 3] == [0x47, 0x4E, 0x55] {   // "GNU"
                return Array(notes[descAt..<descAt + descsz])
            }
            at = descAt + (descsz + 3) & ~3
        }
    }
    return nil
}

/// Whether `path` (symbolic links followed) is a regular file: not a FIFO, a socket or a device,
/// which a tool reading it could block on or never finish.
public func isRegularFile(_ path: String) -> Bool {
    var st = stat()
    return stat(path, &st) == 0 && st.st_mode & S_IFMT == S_IFREG
}

/// Lower-case hex of bytes (a build id).
public func hexString(_ bytes: [UInt8]) -> String {
    bytes.map { String($0, radix: 16).leftPadded(2) }.joined()
}

extension String {
    func leftPadded(_ n: Int) -> String { count >= n ? self : String(repeating: "0", count: n - count) + self }
}
