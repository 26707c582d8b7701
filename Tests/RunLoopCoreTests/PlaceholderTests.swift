import Testing
@testable import RunLoopCore
