import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Testing
@testable import Switchboard

@Suite(hangGuard, admission) struct ValidationTests {
    static let user: JSON = ["user": ["id": "7", "level": 3, "score": 1.5, "tags": ["a", "b"], "nick": nil], "extra": true]

    @Test func matchingShapeWithExtraKeysPasses() {
        let shape: JSONShape = ["user": ["id": .string, "level": .integer, "score": .number, "tags": [.string]]]
        #expect(shape.mismatch(in: Self.user) == nil)
    }

    /// Built per test rather than kept in a static: an indirect enum's box is referenced through a
    /// tagged pointer, which the address sanitizer's leak check reads as a leak when a static holds it.
    static func cases() -> [(JSONShape, String)] {
        [
            (.object(["user": .object(["id": .integer])]), "$.user.id: expected integer, found string"),
            (.object(["user": .object(["level": .string])]), "$.user.level: expected string, found number"),
            (.object(["user": .object(["missing": .string])]), "$.user.missing: expected string, found nothing (missing key)"),
            (.object(["user": .object(["nick": .string])]), "$.user.nick: expected string, found null"),
            (.object(["user": .object(["tags": .array(.integer)])]), "$.user.tags[0]: expected integer, found string"),
            (.object(["user": .array(.any)]), "$.user: expected array of any value, found object"),
            (.object(["user": .object(["score": .integer])]), "$.user.score: expected integer, found number"),
            (.object(["odd key": .bool]), "$[\"odd key\"]: expected bool, found nothing (missing key)"),
        ]
    }

    @Test(arguments: 0..<8)
    func mismatchNamesThePathAndWhatWasExpected(index: Int) {
        let (shape, message) = Self.cases()[index]
        #expect(shape.mismatch(in: Self.user)?.description == message)
    }

    @Test func optionalAllowsNullOrMissingButStillChecksAValue() {
        #expect(JSONShape.object(["user": ["nick": .optional(.string), "gone": .optional(.string)]]).mismatch(in: Self.user) == nil)
        #expect(JSONShape.object(["user": ["id": .optional(.integer)]]).mismatch(in: Self.user)?.path == "$.user.id")
    }

    @Test func arraysValidateEveryElementAgainstOneShape() {
        let list: JSON = ["list": [["id": 1], ["id": 2], ["id": "three"]]]
        #expect(JSONShape.object(["list": [["id": .integer]]]).mismatch(in: list)?.description == "$.list[2].id: expected integer, found string")
        #expect(JSONShape.object(["list": [["id": .oneOf([.integer, .string])]]]).mismatch(in: list) == nil)
        #expect(JSONShape.array(.any).mismatch(in: [1, "x", nil]) == nil)
    }

    @Test func statusCodesFromRangesAndSets() {
        let codes = StatusCodes(200..<300, 304)
        #expect(codes.contains(204) && codes.contains(304) && !codes.contains(302))
        let exact: StatusCodes = [200, 404]
        #expect(exact.contains(404) && !exact.contains(201))
        #expect(StatusCodes(500...599).union([404]).contains(404))
        #expect(codes.description == "200...299, 304")
        #expect(!StatusCodes(300..<300).contains(300))
    }

    @Test func uploadWithValidatorSucceedsAndAShapeFailureIsTyped() async throws {
        try await withServer { server in
            let client = makeClient(server)
            let ok = try await client.response(for: Get("/users/5").with(\.validation, .default.requiring(["user": ["id": .string, "name": .string]])))
            #expect(ok.json["user"]["id"] == "5")
            let error = await client.result(Get("/users/5").with(\.validation, .default.requiring(["user": ["id": .integer]]))).failure
            #expect(error?.shapeMismatch?.description == "$.user.id: expected integer, found string")
        }
    }

    @Test func globalStatusCodesApplyAndARequestCanOverride() async throws {
        try await withServer { server in
            let client = makeClient(server) { $0.acceptableStatusCodes = StatusCodes(200..<300, 404) }
            let notFound = try await client.response(for: Get("/status/404"))
            #expect(notFound.statusCode == 404)
            let strict = await client.result(Get("/status/404").with(\.validation, .default.acceptingStatusCodes([200]))).failure
            #expect(strict?.statusCode == 404)
        }
    }
}
