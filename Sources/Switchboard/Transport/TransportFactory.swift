import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Makes the transport a ``Dispatcher`` sends with (``Configuration/transport``). The dispatcher makes
/// one at its first send, and a new one for later sends when the factory or the transport settings
/// (``Configuration/maximumConnectionsPerHost``, ``Configuration/cookies``) change; sends in flight finish on the transport they started on.
///
/// ```swift
/// Dispatcher.shared.updateConfiguration { $0.transport = .urlSession(.default) }
/// let client = Dispatcher(configuration: Configuration { $0.transport = .using(StubTransport { _ in .status(204) }) })
/// ```
public struct TransportFactory: Sendable {
    /// Tells factories apart (closures can't be compared): each factory made is a new identity.
    let identity: UInt64
    /// A name for logs and descriptions.
    public let name: String
    private let make: @Sendable (TransportContext) -> any Transport

    /// Creates a factory from a function that makes a transport for a context.
    /// - Parameters:
    ///   - name: a name for logs.
    ///   - make: called under no lock, on the thread of the send that needs a transport.
    public init(name: String, make: @escaping @Sendable (TransportContext) -> any Transport) {
        identity = TransportFactory.nextIdentity.withLock {
            $0 += 1; return $0
        }
        self.name = name
        self.make = make
    }

    /// Makes a transport.
    public func makeTransport(_ context: TransportContext) -> any Transport {
        make(context)
    }

    /// The last identity given. Locked: factories are made on any thread.
    private static let nextIdentity = Locked<UInt64>(0)

    /// A ``URLSessionTransport`` over an `.ephemeral` session, the default.
    public static let urlSession = TransportFactory.urlSession(.ephemeral)

    /// A ``URLSessionTransport`` whose session starts from `sessionConfiguration` (copied; the
    /// dispatcher's settings then apply over it).
    public static func urlSession(_ sessionConfiguration: URLSessionConfiguration) -> TransportFactory {
        // A copy now, so a later change of the caller's object (a class) changes nothing here.
        let base = Copied(sessionConfiguration)
        return TransportFactory(name: "URLSession") { context in
            URLSessionTransport(configuration: context.configuration, sessionConfiguration: base.value, cookieJar: context.cookieJar)
        }
    }

    /// Always `transport` itself: the dispatcher's settings don't reach it (apply them yourself).
    public static func using(_ transport: any Transport) -> TransportFactory {
        TransportFactory(name: "\(type(of: transport))") { _ in transport }
    }
}

/// What a ``TransportFactory`` makes a transport from.
public struct TransportContext: Sendable {
    /// The dispatcher's configuration as of the send that needs the transport.
    public let configuration: Configuration
    /// The dispatcher's in-memory cookie jar, for ``CookiePolicy/inMemory``: kept across the transports
    /// the dispatcher makes, so a new transport doesn't forget the cookies.
    public let cookieJar: HTTPCookieStorage?
}

/// A `URLSessionConfiguration` copied once and never changed again.
///
/// `@unchecked Sendable`: the copy is private to this box, and only ever read (copied again) after init.
private final class Copied: @unchecked Sendable {
    private let stored: URLSessionConfiguration
    init(_ configuration: URLSessionConfiguration) {
        stored = (configuration.copy() as? URLSessionConfiguration) ?? configuration
    }
    var value: URLSessionConfiguration { stored }
}
