import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Testing
@testable import Switchboard

/// `GET /users/:id`'s answer: `{"user": {"id": "7", "name": "User 7", "nickname": "nick7", "level": 3}, "version": null}`.
struct UserEnvelope: Decodable, Sendable, Equatable {
    struct User: Decodable, Sendable, Equatable {
        let id: String
        let name: String
        let level: Int
    }
    let user: User
}

/// The loopback server's `/users/:id`, typed.
struct GetTypedUser: Request {
    typealias Value = UserEnvelope
    let id: Int
    var path: String { "/users/\(id)" }
}

/// The same endpoint, as a dictionary (no `Value`).
struct GetUserDictionary: Request {
    let id: Int
    var path: String { "/users/\(id)" }
}

/// The same answer, with `level` declared a string: a decode that fails at `user.level`.
struct GetMistypedUser: Request {
    struct Envelope: Decodable, Sendable {
        struct User: Decodable, Sendable { let level: String }
        let user: User
    }
    typealias Value = Envelope
    var path: String { "/users/3" }
}

/// A typed request to any path: for empty bodies, errors and status codes.
struct TypedAt<Value: Decodable & Sendable>: Request {
    let path: String
}

/// A post as an app writes it: camel-case keys, a date.
struct NewPost: Codable, Sendable, Equatable {
    let userId: Int
    let postTitle: String
    let createdAt: Date
}

/// `/echo`'s answer, its `json` field typed.
struct Echoed<Body: Decodable & Sendable>: Decodable, Sendable {
    let method: String
    let json: Body
}

/// POSTs `post` to `/echo` as an encodable body, decoding the echo.
struct EchoPost: Request {
    typealias Value = Echoed<NewPost>
    let post: NewPost
    var coding: JSONCoding?
    var method: HTTPMethod { .post }
    var path: String { "/echo" }
    var body: RequestBody? { .encodable(post, coding: coding) }
}

/// A value whose encoding fails: a non-finite double.
struct Reading: Encodable, Sendable {
    let sensor: String
    let values: [Double]
}

/// A value whose `encode(to:)` throws its own error.
struct Refusing: Encodable, Sendable {
    struct Refused: Error {}
    func encode(to encoder: any Encoder) throws { throw Refused() }
}

struct PostReading<Body: Encodable & Sendable>: Request {
    let reading: Body
    var method: HTTPMethod { .post }
    var path: String { "/echo" }
    var body: RequestBody? { .encodable(reading) }
}

/// A main-actor screen observing a typed request by method reference.
@MainActor final class UserScreen {
    var names: [String] = []
    func userChanged(_ event: RequestEvent<GetTypedUser>) {
        if let user = event.response?.value.user { names.append(user.name) }
    }
}

@Suite(hangGuard, admission) struct TypedRequestTests {
    @Test(arguments: TransportUnderTest.network) func aTypedRequestsValueIsDecodedOnce(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let response = try await makeClient(server, on: kind).response(for: GetTypedUser(id: 7))
            #expect(response.value == UserEnvelope(user: .init(id: "7", name: "User 7", level: 3)))
            // The raw bytes and the JSON view stay available.
            #expect(response.json["user"]["nickname"] == "nick7")
            #expect(!response.data.isEmpty)
            // Decoded in the pipeline: the stored value is the typed one, no tree was parsed for it.
            #expect(response.parts.value is UserEnvelope)
            #expect(response.parts.parsed == nil)
        }
    }

    @Test(arguments: TransportUnderTest.network) func aRequestWithoutAValueGetsTheJSONTree(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let response = try await makeClient(server, on: kind).response(for: GetUserDictionary(id: 2))
            let value: JSON = response.value
            #expect(value == response.json)
            #expect(value["user"]["name"] == "User 2")
            #expect(GetUserDictionary.Value.self == JSON.self)
        }
    }

    @Test(arguments: TransportUnderTest.network) func aMismatchNamesTheTypeThePathAndTheBody(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let result = await makeClient(server, on: kind).result(GetMistypedUser())
            let (reason, snippet) = try #require(decodingFailure(result), "a mistyped field must fail the decode, got \(result)")
            #expect(reason.contains("Envelope"))
            #expect(reason.contains("user.level"))
            #expect(reason.contains("String"))
            #expect(snippet.contains("\"user\""))
        }
    }

    @Test(arguments: TransportUnderTest.network) func malformedJSONIsADecodingErrorForATypedRequest(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let result = await makeClient(server, on: kind).result(TypedAt<UserEnvelope>(path: "/malformed-json"))
            let (reason, snippet) = try #require(decodingFailure(result), "malformed JSON must fail the decode, got \(result)")
            #expect(reason.contains("UserEnvelope"))
            #expect(snippet.contains("{\"user\""))
        }
    }

    @Test(arguments: TransportUnderTest.network) func aServerErrorIsNeverHiddenBehindADecodeError(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let failed = await client.result(TypedAt<UserEnvelope>(path: "/status/500"))
            #expect(failed.failure?.statusCode == 500)
            let wrongType = await client.result(TypedAt<UserEnvelope>(path: "/wrong-content-type"))
            guard case .failure(.unacceptableContentType) = wrongType else {
                Issue.record("a text body must fail the content type first, got \(wrongType)")
                return
            }
        }
    }

    @Test(arguments: TransportUnderTest.network) func anEmptyBodyDecodesOnlyToATypeThatAllowsIt(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let noContent = try await client.response(for: TypedAt<NoContent>(path: "/empty")).value
            #expect(noContent == NoContent())
            let optional = try await client.response(for: TypedAt<UserEnvelope?>(path: "/empty-json")).value
            #expect(optional == nil)
            // NoContent reads no body at all, JSON or not.
            let ignored = try await client.response(for: TypedAt<NoContent>(path: "/users/1")).value
            #expect(ignored == NoContent())
            let required = await client.result(TypedAt<UserEnvelope>(path: "/empty"))
            let (reason, _) = try #require(decodingFailure(required), "an empty body can't be a UserEnvelope, got \(required)")
            #expect(reason.contains("empty"))
        }
    }

    @Test(arguments: TransportUnderTest.network) func anEncodableBodyUsesTheConfigurationsStrategiesBothWays(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind) {
                $0.jsonCoding.keyEncoding = .convertToSnakeCase
                $0.jsonCoding.dateEncoding = .secondsSince1970
                $0.jsonCoding.keyDecoding = .convertFromSnakeCase
                $0.jsonCoding.dateDecoding = .secondsSince1970
            }
            let post = NewPost(userId: 4, postTitle: "Hello", createdAt: Date(timeIntervalSince1970: 1_000))
            let response = try await client.response(for: EchoPost(post: post))
            // On the wire: snake-case keys and seconds, sent as JSON.
            #expect(response.json["json"]["post_title"] == "Hello")
            #expect(response.json["json"]["user_id"] == 4)
            #expect(response.json["json"]["created_at"] == 1_000)
            #expect(response.json["headers"]["Content-Type"] == "application/json")
            // And back: the same strategies decode the echo.
            #expect(response.value.method == "POST")
            #expect(response.value.json == post)
        }
    }

    @Test(arguments: TransportUnderTest.network) func aBodysOwnCodingWinsOverTheConfigurations(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.jsonCoding.dateEncoding = .secondsSince1970 }
            let post = NewPost(userId: 1, postTitle: "t", createdAt: Date(timeIntervalSince1970: 0))
            let own = JSONCoding { $0.dateEncoding = .iso8601 }
            let wire = try await client.response(for: Endpoint<JSON>(.post, "/echo", body: .encodable(post, coding: own))).value
            #expect(wire["json"]["createdAt"] == "1970-01-01T00:00:00Z")
            let configured = try await client.response(for: Endpoint<JSON>(.post, "/echo", body: .encodable(post))).value
            #expect(configured["json"]["createdAt"] == 0)
            // The decoder is the configuration's (a number by default): the ISO date doesn't decode, and
            // the error says where.
            let failed = await client.result(EchoPost(post: post, coding: own))
            let (reason, _) = try #require(decodingFailure(failed), "an ISO date can't decode as a number, got \(failed)")
            #expect(reason.contains("json.createdAt"))
        }
    }

    @Test(arguments: TransportUnderTest.network) func aValueThatCannotBeEncodedFailsBeforeAnythingIsSent(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let nonFinite = await client.result(PostReading(reading: Reading(sensor: "t", values: [1, .nan])))
            guard case .failure(.invalidRequest(let reason)) = nonFinite else {
                Issue.record("a NaN can't be encoded, got \(nonFinite)")
                return
            }
            #expect(reason.contains("Reading"))
            #expect(reason.contains("values[1]"))
            let refusing = await client.result(PostReading(reading: Refusing()))
            guard case .failure(.invalidRequest(let refusal)) = refusing else {
                Issue.record("an encode(to:) that throws must fail the send, got \(refusing)")
                return
            }
            #expect(refusal.contains("Refusing"))
            #expect(server.hits("/echo") == 0)
        }
    }

    @Test(arguments: TransportUnderTest.network) func theOneLinersSendAndDecode(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let user = try await client.response(for: .get("/users/5", as: UserEnvelope.self)).value
            #expect(user.user.name == "User 5")
            let post = NewPost(userId: 2, postTitle: "One line", createdAt: Date(timeIntervalSince1970: 10))
            let echoed = try await client.response(for: .post("/echo", body: post, as: Echoed<NewPost>.self)).value
            #expect(echoed.method == "POST")
            #expect(echoed.json == post)
            let deleted = try await client.response(for: .delete("/echo", as: NoContent.self))
            #expect(deleted.statusCode == 200)
            let query = try await client.response(for: .get("/echo", parameters: ["page": 2], as: JSON.self)).value
            #expect(query["args"]["page"] == "2")
        }
    }

    @Test(arguments: TransportUnderTest.network) func observersOfAdHocRequestsRegisterForTheirValuesEndpointType(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let heard = Box<[String]>([])
            let listener = Listener()
            client.addObserver(listener, for: Endpoint<UserEnvelope>.self, on: .immediate) { _, event in
                if let user = event.response?.value.user { heard.mutate { $0.append("\(event.request.path) \(user.name)") } }
            }
            _ = try await client.response(for: .get("/users/1", as: UserEnvelope.self))
            _ = try await client.response(for: .get("/users/2", as: UserEnvelope.self))
            // Another value type is another request type: not heard.
            _ = try await client.response(for: .get("/users/3", as: JSON.self))
            #expect(heard.value == ["/users/1 User 1", "/users/2 User 2"])
        }
    }

    @Test(arguments: TransportUnderTest.network) func typedValuesReachStreamsTheBusAndGroups(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let stream = client.events(for: GetTypedUser.self)
            let bus = client.allEvents()
            let (typed, dictionary) = try await client.batch(GetTypedUser(id: 8), GetUserDictionary(id: 9))
            #expect(typed.value.user.name == "User 8")
            #expect(dictionary.value["user"]["name"] == "User 9")
            for await event in stream where event.isTerminal {
                #expect(event.response?.value.user.id == "8")
                break
            }
            for await event in bus where event.isTerminal {
                #expect((event.response?.anyValue as? UserEnvelope)?.user.id == "8" || (event.response?.anyValue as? JSON)?["user"]["id"] == "9")
                break
            }
        }
    }

    @Test @MainActor func aMethodReferenceObserverReadsTheTypedValue() async throws {
        let server = try LoopbackServer.standard()
        defer { server.stopInBackground() }
        let client = makeClient(server)
        let screen = UserScreen()
        client.addObserver(screen, for: GetTypedUser.self, calling: UserScreen.userChanged)
        _ = try await client.response(for: GetTypedUser(id: 6))
        #expect(await eventually { await MainActor.run { !screen.names.isEmpty } })
        #expect(screen.names == ["User 6"])
    }

    @Test func aResponseMadeForATestCarriesItsValue() throws {
        let url = URL(string: "https://example.com/users/1")!
        let head = try #require(HTTPURLResponse(url: url, statusCode: 200, httpVersion: nil, headerFields: nil))
        let value = UserEnvelope(user: .init(id: "1", name: "A", level: 1))
        let response = Response(request: GetTypedUser(id: 1), httpResponse: head, data: Data(), value: value, timing: Timing(start: Date(), timeToFirstByte: nil, duration: 0))
        #expect(response.value == value)
        let json = Response(request: GetUserDictionary(id: 1), httpResponse: head, data: Data(), json: ["a": 1], timing: Timing(start: Date(), timeToFirstByte: nil, duration: 0))
        #expect(json.value == ["a": 1])
    }

    @Test func encodableBodiesCompareByTheirBytes() {
        let first = RequestBody.encodable(NewPost(userId: 1, postTitle: "a", createdAt: Date(timeIntervalSince1970: 0)))
        let same = RequestBody.encodable(NewPost(userId: 1, postTitle: "a", createdAt: Date(timeIntervalSince1970: 0)))
        let other = RequestBody.encodable(NewPost(userId: 2, postTitle: "a", createdAt: Date(timeIntervalSince1970: 0)))
        #expect(first == same)
        #expect(first.hashValue == same.hashValue)
        #expect(first != other)
        #expect(first.contentType == "application/json")
        #expect(RequestBody.encodable(Reading(sensor: "x", values: [.infinity])).data.isEmpty)
    }
}

/// One value is always the same bytes on the wire (keys sorted by default), so identical sends coalesce.
@Suite struct EncodableBodyBytesTests {
    @Test func oneValueEncodesToTheSameBytesEveryTime() throws {
        let post = NewPost(userId: 1, postTitle: "a", createdAt: Date(timeIntervalSince1970: 0))
        let encodings = try (0..<50).map { _ in try EncodableBody(post).encoded() }
        #expect(Set(encodings).count == 1)
        #expect(String(decoding: encodings[0], as: UTF8.self) == #"{"createdAt":-978307200,"postTitle":"a","userId":1}"#)
    }
}

/// The reason and snippet of a failed decode, or `nil` for any other result.
func decodingFailure<R: Request>(_ result: Result<Response<R>, NetworkError>) -> (reason: String, snippet: String)? {
    guard case .failure(.decoding(let reason, let snippet)) = result else { return nil }
    return (reason, snippet)
}

/// A user envelope whose `init(from:)` records where it ran: never the main queue, never the
/// transport's queue or thread (it is the app's code).
struct WatchedEnvelope: Decodable, Sendable {
    static let places = Box<[String]>([])
    let user: UserEnvelope.User

    init(from decoder: any Decoder) throws {
        struct Keys: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }
        // (The libcurl transport's thread has a name; URLSession's delegate queue can't be asked here.)
        let place = MainQueue.isCurrent ? "main" : Thread.current.name == "switchboard.curl" ? "transport" : "elsewhere"
        Self.places.mutate { $0.append(place) }
        user = try decoder.container(keyedBy: Keys.self).decode(UserEnvelope.User.self, forKey: Keys(stringValue: "user"))
    }
}

struct GetWatched: Request {
    typealias Value = WatchedEnvelope
    var id = 1
    var policy: CachePolicy?
    var path: String { "/users/\(id)" }
    var cachePolicy: CachePolicy? { policy }
}

/// A typed request in every path a response takes: hooks and shapes first, the cache's tiers, the
/// threads its decode runs on.
@Suite(hangGuard, admission, .serialized) struct TypedRequestPathTests {
    @Test(arguments: TransportUnderTest.network) func aHooksVerdictWinsOverTheDecode(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.responseHooks = [APIErrorCodeHook()] }
            // `{"errorCode": 3, "message": "session expired"}`: no `user` key, but the hook speaks first.
            let result = await client.result(TypedAt<UserEnvelope>(path: "/body-error"))
            guard case .failure(.api(let error)) = result else {
                Issue.record("the hook's .api error must win over the decode's, got \(result)")
                return
            }
            #expect(error.intCode == 3)
            // With the hook content, the decode runs.
            let fine = try await client.response(for: GetTypedUser(id: 4))
            #expect(fine.value.user.name == "User 4")
        }
    }

    @Test(arguments: TransportUnderTest.network) func aShapeMismatchWinsOverTheDecode(_ kind: TransportUnderTest) async throws {
        struct Shaped: Request {
            typealias Value = UserEnvelope
            // `{"errorCode": 3, "message": …}`: no `user`, so the decode would fail too; the shape speaks first.
            var path: String { "/body-error" }
            var validation: Validation { .default.requiring(["errorCode": .integer, "user": ["id": .string]]) }
        }
        try await withServer { server in
            let result = await makeClient(server, on: kind).result(Shaped())
            guard case .failure(.jsonShape) = result else {
                Issue.record("the shape is checked before the typed decode, got \(result)")
                return
            }
        }
    }

    /// A batch of requests of different types: each response carries its own request's value.
    @Test(arguments: TransportUnderTest.network) func aBatchsResponsesCarryTheirTypedValues(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let responses = try await BatchRequest([GetTypedUser(id: 21), GetUserDictionary(id: 22), TypedAt<NoContent>(path: "/empty")], dispatcher: client).run()
            #expect((responses[0].anyValue as? UserEnvelope)?.user.name == "User 21")
            #expect(responses[0].typed(GetTypedUser.self)?.value.user.id == "21")
            #expect((responses[1].anyValue as? JSON)?["user"]["name"] == "User 22")
            #expect(responses[2].anyValue is NoContent)
        }
    }

    /// With hooks (which need the JSON tree), a body that isn't JSON still fails in the type's terms.
    @Test(arguments: TransportUnderTest.network) func withHooksMalformedJSONStillNamesTheType(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.responseHooks = [APIErrorCodeHook()] }
            let result = await client.result(TypedAt<UserEnvelope>(path: "/malformed-json"))
            let (reason, _) = try #require(decodingFailure(result), "malformed JSON must fail the decode, got \(result)")
            #expect(reason.contains("UserEnvelope"))
        }
    }

    @Test(arguments: TransportUnderTest.network) func noContentTakesABodyOfAnyType(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let response = try await makeClient(server, on: kind).response(for: TypedAt<NoContent>(path: "/html"))
            #expect(response.value == NoContent())
            #expect(response.statusCode == 200)
        }
    }

    @Test(arguments: TransportUnderTest.network) func theCacheAnswersWithTypedValuesDecodedOffTheSendersThread(_ kind: TransportUnderTest) async throws {
        WatchedEnvelope.places.mutate { $0 = [] }
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.cache = ResponseCache(directory: nil) }
            let fresh = GetWatched(id: 11, policy: CachePolicy(timeToLive: 60, mode: .cacheElseLoad))
            let first = try await client.response(for: fresh)
            #expect(first.value.user.name == "User 11" && first.source == .network)
            // A memory hit: decoded again from the stored bytes, not on the thread that sends.
            let hit = try await client.sendingFromMain(fresh).get()
            #expect(hit.value.user.name == "User 11")
            #expect(hit.source == .cache)
            #expect(server.hits("/users/11") == 1)
            // Cached-then-load: the early answer and the fresh one are both typed.
            let both = GetWatched(id: 12, policy: CachePolicy(timeToLive: 60, mode: .cachedThenLoad))
            _ = try await client.response(for: both)
            let cached = Box<[String]>([])
            let listener = Listener()
            client.addObserver(listener, for: GetWatched.self, on: .immediate) { _, event in
                if case .cached(let stored) = event.kind { cached.mutate { $0.append(stored.value.user.name) } }
            }
            let again = try await client.response(for: both)
            #expect(again.value.user.name == "User 12" && again.source == .network)
            #expect(cached.value == ["User 12"])
            #expect(!WatchedEnvelope.places.value.isEmpty)
            #expect(WatchedEnvelope.places.value.allSatisfy { $0 == "elsewhere" }, "decoded on \(WatchedEnvelope.places.value)")
        }
    }
}

extension Dispatcher {
    /// Sends from the main actor (the thread a memory-cache hit would answer on) and awaits the result.
    @MainActor func sendingFromMain<R: Request>(_ request: R) async -> Result<Response<R>, NetworkError> {
        await completion { send(request, completion: $0) }
    }
}
