import Foundation
import Switchboard

extension Dispatcher {
    /// A dispatcher of the test's own that sends through `stub`: tests that each make one share no
    /// state (no observers, configuration, cache or in-flight sends), so they can run in parallel.
    ///
    /// ```swift
    /// let stub = StubTransport()
    /// stub.on(GetUserInfo.self, answer: .json(["user": ["name": "Ada"]]))
    /// let client = Dispatcher.stubbed(stub)
    /// ```
    /// Its configuration differs from a new ``Configuration`` in three ways, each for tests: the base
    /// URL is `https://stub.test` (so relative paths resolve), completion closures run on the thread that
    /// finishes the send (``CallbackQueue/immediate``, so a test needn't spin the main queue), and there is
    /// no response cache (``Configuration/cache`` `nil`: nothing is kept on disk between tests).
    /// Observers still choose their own queue; method-reference observers run on the main actor.
    /// - Parameters:
    ///   - stub: the transport every send goes through.
    ///   - configure: changes to that configuration (a base URL of your own, a retry policy, a cache).
    public static func stubbed(_ stub: StubTransport, configure: (inout Configuration) -> Void = { _ in }) -> Dispatcher {
        var configuration = Configuration()
        configuration.baseURL = URL(string: "https://stub.test")
        configuration.callbackQueue = .immediate
        configuration.cache = nil
        configure(&configuration)
        return Dispatcher(configuration: configuration, transport: stub)
    }
}
