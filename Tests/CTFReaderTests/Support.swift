// The shared daemon, recordings of ctf-testgen and babeltrace2 runs (Tests/TestSupport/SharedDaemon.swift)
// for every file of this target.
@_exported import TestSupport
